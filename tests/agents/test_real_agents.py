"""Claude Code, Codex and Gemini CLI through the app: each real agent CLI, our one retry budget,
the banner every viewer sees (the session's event log), and the mock provider counting what the
agent really sent. Every test runs once per agent."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from devtools.eventually import eventually
from recovery.providers.acp import AcpPromptSpec, AgentText, Correlation, acp_prompt_iter
from sessions_app.agent.runner import generation_retry, generation_run
from sessions_app.agent.targets import acp_config_for
from sessions_app.ladder.models import RetryLoop
from sessions_app.models import PromptGeneration
from sessions_app.selectors import session_snapshot
from sessions_app.services import prompt_submit, session_stop
from sessions_app.services.prompts import retry_cancel, session_recover
from tests.agents.conftest import (
    MAX_RETRIES,
    agent_chat,
    agent_tree,
    assistant_rows,
    events,
    run_prompt,
    run_retry,
    still_running,
    viewer_texts,
)

pytestmark = [pytest.mark.agents, pytest.mark.django_db(transaction=True), pytest.mark.timeout(900)]

State = PromptGeneration.State
ANSWER = (
    "You asked about {}. This is the mock provider answering calmly and deterministically. It "
    "streams in several small pieces so a viewer sees it arrive."
)
# The mock's first two deltas of the answer to a two-word prompt.
PARTIAL = "You asked about {}. This "


def notices(chat) -> list[tuple[str, int | None, int | None]]:
    """The banner as viewers saw it: each upsert's attempt n of m, each removal. The claim's
    re-show of the same attempt (its countdown ended: "Retrying now…") is one entry with it."""
    seen = []
    for kind, payload in events(chat, "notice."):
        if kind == "notice.upserted":
            notice = payload["notice"]
            entry = ("shown", notice["attempt"], notice["max_attempts"])
        else:
            entry = ("gone", None, None)
        if not seen or seen[-1] != entry:
            seen.append(entry)
    return seen


def test_a_plain_answer_streams(chat, clock):
    # 150 ms between the provider's deltas, so the viewer's page grows in several appends.
    generation = run_prompt(chat, "[[mock:slow-stream:150]] say hello", clock)

    assert generation.state == State.SUCCEEDED
    assert assistant_rows(chat) == [(ANSWER.format("say hello"), False)]
    assert viewer_texts(chat, "assistant") == [ANSWER.format("say hello")]
    appended = [kind for kind, _ in events(chat, "message.appended")]
    assert len(appended) >= 2, "the answer arrived in one piece: nothing streamed"
    assert len(chat.requests()) == 1


def test_overloaded_twice_then_an_answer_shows_the_banner_from_the_first_failure(chat, clock):
    generation = run_prompt(chat, "[[mock:overloaded:2]] summarise the notes", clock)

    # One provider request, one banner: the agent did not retry on its own first.
    assert generation.state == State.WAITING_RETRY
    assert len(chat.requests()) == 1
    assert notices(chat) == [("shown", 1, MAX_RETRIES)]
    assert session_snapshot(session=chat.session)["notice"]["reason"] == "Provider overloaded"

    generation = run_retry(generation, clock)
    assert generation.state == State.WAITING_RETRY
    assert len(chat.requests()) == 2
    assert notices(chat) == [("shown", 1, MAX_RETRIES), ("shown", 2, MAX_RETRIES)]

    generation = run_retry(generation, clock)
    assert generation.state == State.SUCCEEDED
    assert len(chat.requests()) == 3
    assert notices(chat)[-1] == ("gone", None, None)
    assert session_snapshot(session=chat.session)["notice"] is None
    answer = ANSWER.format("summarise the notes")
    assert assistant_rows(chat) == [(answer, False)]
    assert viewer_texts(chat, "assistant") == [answer]


def test_overloaded_every_time_spends_exactly_one_budget_then_shows_the_exhaustion_card(
    chat, clock
):
    generation = run_prompt(chat, "[[mock:overloaded:99]] summarise the notes", clock)
    while generation.state == State.WAITING_RETRY:
        generation = run_retry(generation, clock)

    assert generation.state == State.FAILED
    assert len(chat.requests()) == 1 + MAX_RETRIES
    assert [n for n in notices(chat) if n[0] == "shown"] == [
        ("shown", attempt, MAX_RETRIES) for attempt in range(1, MAX_RETRIES + 1)
    ]
    assert session_snapshot(session=chat.session)["notice"] is None
    chat.session.refresh_from_db()
    assert chat.session.state == "needs_attention"
    assert set(session_snapshot(session=chat.session)["recovery_actions"]) == {"resume", "fresh"}
    assert assistant_rows(chat) == []


@pytest.mark.parametrize("chat", ["gemini"], indirect=True)
def test_a_rate_limit_waits_at_least_as_long_as_the_provider_asked(chat, clock):
    # Of the three agents only Gemini CLI relays the provider's wait ("Suggested retry after
    # Ns."); Claude Code and Codex drop Retry-After before ACP, so only the ladder's own delay
    # can apply to them (see the README).
    failed_at = clock.now()
    generation = run_prompt(chat, "[[mock:rate-limited:1:7]] summarise the notes", clock)

    assert generation.state == State.WAITING_RETRY
    loop = RetryLoop.objects.get(generation=generation)
    assert loop.next_attempt_at.timestamp() - failed_at >= 7
    assert notices(chat) == [("shown", 1, MAX_RETRIES)]
    generation = run_retry(generation, clock)
    assert generation.state == State.SUCCEEDED


def test_a_failure_after_text_is_not_retried_and_keeps_the_partial_marked_incomplete(chat, clock):
    generation = run_prompt(chat, "[[mock:overloaded-after-text:1]] say hello", clock)

    assert generation.state == State.FAILED
    assert len(chat.requests()) == 1
    assert notices(chat) == []
    partial = PARTIAL.format("say hello")
    assert assistant_rows(chat) == [(partial, True)]
    assert set(session_snapshot(session=chat.session)["recovery_actions"]) == {"resume", "fresh"}

    resumed = session_recover(session=chat.session, user=chat.owner, action="resume")
    generation_run(generation_id=resumed.pk, clock=clock)
    resumed.refresh_from_db()

    assert resumed.state == State.SUCCEEDED
    assert assistant_rows(chat) == [(partial, True), (ANSWER.format("say hello"), False)]


def test_start_fresh_after_a_failure_after_text_answers_in_a_new_context(chat, clock):
    generation = run_prompt(chat, "[[mock:server-error-after-text:1]] say hello", clock)
    assert generation.state == State.FAILED

    fresh = session_recover(session=chat.session, user=chat.owner, action="fresh")
    generation_run(generation_id=fresh.pk, clock=clock)
    fresh.refresh_from_db()

    assert fresh.state == State.SUCCEEDED
    rows = assistant_rows(chat)
    assert rows[0] == (PARTIAL.format("say hello"), True)
    assert rows[-1] == (ANSWER.format("say hello"), False)


def test_a_cut_stream_never_shows_text_twice(chat, clock):
    generation = run_prompt(chat, "[[mock:cut:1]] say hello", clock)

    # The agent does not retry the cut stream itself (retries off), so the partial answer is
    # shown once, kept, and the turn hands back instead of silently succeeding.
    assert generation.state == State.FAILED
    assert len(chat.requests()) == 1
    partial = PARTIAL.format("say hello")
    assert assistant_rows(chat) == [(partial, True)]
    assert viewer_texts(chat, "assistant") == [partial]


def test_a_cut_stream_before_any_text_is_retried_visibly(chat, clock):
    generation = run_prompt(chat, "[[mock:cut-before-output:1]] write the report", clock)

    assert generation.state == State.WAITING_RETRY
    assert notices(chat) == [("shown", 1, MAX_RETRIES)]
    generation = run_retry(generation, clock)
    assert generation.state == State.SUCCEEDED
    assert viewer_texts(chat, "assistant") == [ANSWER.format("write the report")]


def _in_a_thread(work) -> threading.Thread:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _agent_busy_with_a_request(chat, *, requests: int) -> list:
    eventually(
        lambda: len(chat.requests()) >= requests,
        timeout=120,
        interval=0.1,
        what="the agent calling the provider",
    )
    tree = agent_tree()
    assert tree, "no agent process found"
    return tree


def test_stop_ends_the_agents_whole_process_tree(chat, clock):
    generation = prompt_submit(
        session=chat.session, user=chat.owner, text="[[mock:slow-first-byte:120000]] hello"
    )
    worker = _in_a_thread(lambda: generation_run(generation_id=generation.pk, clock=clock))
    tree = _agent_busy_with_a_request(chat, requests=1)

    session_stop(session=chat.session, user=chat.owner)
    worker.join(60)

    generation.refresh_from_db()
    assert not worker.is_alive()
    assert generation.state == State.STOPPED
    assert still_running(tree) == []


def test_cancel_during_a_retry_attempt_ends_the_agents_whole_process_tree(chat, clock):
    generation = run_prompt(chat, "[[mock:overloaded:1]] hello", clock)
    assert generation.state == State.WAITING_RETRY
    chat.script("slow-first-byte:120000")  # the retry attempt hangs on the provider
    loop = RetryLoop.objects.get(generation=generation)
    clock.wall.set(loop.next_attempt_at.timestamp())
    worker = _in_a_thread(
        lambda: generation_retry(loop_id=loop.pk, attempt=loop.attempt, clock=clock)
    )
    tree = _agent_busy_with_a_request(chat, requests=2)

    assert retry_cancel(session_id=chat.session.pk, user=chat.owner) == ["resume", "fresh"]
    worker.join(60)

    generation.refresh_from_db()
    assert not worker.is_alive()
    assert generation.state == State.FAILED
    assert generation.error_code == "cancelled"
    assert still_running(tree) == []
    assert session_snapshot(session=chat.session)["notice"] is None


@pytest.mark.parametrize("own_retries", [False, True], ids=["retries-off", "codex-defaults"])
def test_codex_repeats_partial_text_only_when_its_own_stream_retries_are_on(
    own_retries, owner, mock_url, tmp_path
):
    # The launcher's settings are what keeps Codex from replaying text: with its defaults (the
    # two retry lines left out) the same cut stream puts the partial answer on screen again on
    # each of its own stream retries, with no boundary frame we could act on.
    chat = agent_chat("codex", owner=owner, mock_url=mock_url)
    config = acp_config_for(chat.session.target, session_id=chat.session.pk)
    config_toml = tmp_path / "work" / f"home-{chat.session.pk}" / ".codex" / "config.toml"
    if own_retries:
        kept = [line for line in config_toml.read_text().splitlines() if "max_retries" not in line]
        config_toml.write_text("\n".join(kept) + "\n")
    spec = AcpPromptSpec(
        **config.launch_fields(),
        prompt="[[mock:cut:99]] say hello",
        correlation=Correlation(session_id="s", execution_id="e", generation=1),
        prompt_timeout_s=180,
    )

    shown = "".join(item.text for item in acp_prompt_iter(spec) if isinstance(item, AgentText))

    partial = PARTIAL.format("say hello")
    if own_retries:
        assert shown.count(partial) > 1
        assert len(chat.requests()) > 1
    else:
        assert shown == partial
        assert len(chat.requests()) == 1
