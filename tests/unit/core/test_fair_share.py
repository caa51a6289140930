"""Who may take one more of the box's agent slots (sessions_app/agent/slots.fair_share_allows):
plain values, no box and no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sessions_app.agent.slots import fair_share_allows


def test_a_person_at_their_share_waits_while_someone_owed_a_slot_waits():
    # Two slots, A holds one, B waits with none: A's share is 1.
    assert not fair_share_allows(person="a", holders=["a"], waiting={"a", "b"}, count=2)
    assert fair_share_allows(person="b", holders=["a"], waiting={"a", "b"}, count=2)


def test_a_person_alone_may_take_every_slot():
    assert fair_share_allows(person="a", holders=["a", "a", "a"], waiting={"a"}, count=4)


def test_the_share_is_rounded_up():
    # Three slots, two people: each may hold two while the other waits.
    assert fair_share_allows(person="a", holders=["a", "b"], waiting={"a", "b"}, count=3)
    assert not fair_share_allows(person="a", holders=["a", "a"], waiting={"a", "b"}, count=3)


def test_people_holding_their_share_do_not_keep_a_free_slot_idle():
    # Seven slots; A and B hold two each and wait for more, C and D run one each: the share is 2,
    # nobody waiting is owed one, so the free slot goes to whoever asks.
    holders = ["a", "a", "b", "b", "c", "d"]
    assert fair_share_allows(person="a", holders=holders, waiting={"a", "b"}, count=7)


people = st.sampled_from("abcde")


@given(
    holders=st.lists(people, max_size=7),
    waiting=st.sets(people, min_size=1),
    count=st.integers(min_value=1, max_value=8),
)
def test_a_free_slot_always_has_a_taker_and_nobody_passes_someone_owed_one(holders, waiting, count):
    if len(holders) >= count:
        return  # no slot is free: nothing to decide
    allowed = {
        p
        for p in waiting
        if fair_share_allows(person=p, holders=holders, waiting=waiting, count=count)
    }
    assert allowed, "a free slot left idle while people wait"
    people_counted = len(set(holders) | waiting)
    share = -(-count // people_counted)
    owed = {p for p in waiting if holders.count(p) < share}
    if owed:
        assert allowed <= owed
