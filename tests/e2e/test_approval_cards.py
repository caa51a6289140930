"""An agent's permission request in a real Chromium against the real stack: the owner on a desktop
and a member on a phone watch one session whose running turn asks (the service writes the
request, as the worker's asker will); both see the card, the board says "Needs approval", the
phone allows, and the desktop's card says who allowed it without a reload."""

from __future__ import annotations

import re

import pytest

from tests.e2e.conftest import DESKTOP, PASSWORD, PHONE, USERNAME, Stack
from tests.e2e.test_chat_turns import axe_serious
from tests.e2e.test_content_security_policy import RECORD_VIOLATIONS, violations
from tests.e2e.test_live_session import assert_fits_a_phone, open_session

pytestmark = pytest.mark.browser

MEMBER, MEMBER_PASSWORD = "reviewer", "reviewer-pass-123"

ASKING_CODE = """
from django.contrib.auth import get_user_model
from django.db import transaction
from sessions_app.approvals.services import approval_request
from sessions_app.models import ProviderTarget
from sessions_app.services import generation_claim, prompt_submit, session_create
users = get_user_model().objects
owner = users.get(username={owner!r})
member = users.get(username={member!r})
target = ProviderTarget.objects.get(name="Mock")
# One transaction: the worker gets the run's task only after the claim, so it finds the turn
# taken and leaves it waiting for the person, as a turn whose agent asked does.
with transaction.atomic():
    session = session_create(owner=owner, target=target, title={title!r})
    session.members.add(member)
    generation = prompt_submit(session=session, user=owner, text="fix the notes")
    generation = generation_claim(generation_id=generation.pk)
    approval = approval_request(
        generation=generation,
        tool_call_id="call-1",
        kind="edit",
        title="Edit notes.txt",
        command="",
        paths=["notes.txt"],
        diff={{"path": "notes.txt", "old_text": "one\\ntwo\\n", "new_text": "one\\n2\\n"}},
        options=[
            {{"option_id": "once", "name": "Allow once", "kind": "allow_once"}},
            {{"option_id": "no", "name": "Reject", "kind": "reject_once"}},
        ],
    )
print(session.pk, approval.pk)
"""


def session_asking(stack: Stack, title: str) -> tuple[int, int]:
    code = ASKING_CODE.format(owner=USERNAME, member=MEMBER, title=title)
    session_id, approval_id = stack.manage("shell", "-c", code).strip().splitlines()[-1].split()
    return int(session_id), int(approval_id)


def signed_in(browser, stack: Stack, username: str, password: str, **context_options):
    context = browser.new_context(base_url=stack.base_url, **context_options)
    page = context.new_page()
    page.add_init_script(RECORD_VIOLATIONS)
    page.console_errors = []
    page.on(
        "console",
        lambda message: (
            page.console_errors.append(message.text) if message.type == "error" else None
        ),
    )
    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{stack.base_url}/")
    return page


@pytest.fixture
def owner_desktop(browser, stack):
    page = signed_in(browser, stack, USERNAME, PASSWORD, **DESKTOP)
    yield page
    page.context.close()


@pytest.fixture
def member_phone(browser, stack):
    code = (
        "from django.contrib.auth import get_user_model\n"
        f"get_user_model().objects.create_user({MEMBER!r}, password={MEMBER_PASSWORD!r})\n"
    )
    stack.manage("shell", "-c", code)
    page = signed_in(browser, stack, MEMBER, MEMBER_PASSWORD, **PHONE)
    yield page
    page.context.close()


def test_the_phone_allows_and_the_desktop_sees_who_did_without_a_reload(
    stack, owner_desktop, member_phone
):
    desktop, phone = owner_desktop, member_phone
    session_id, approval_id = session_asking(stack, "Edit the notes")
    card = f"#approval-{approval_id}-card"

    # The board says the session waits for a person, on its card and its column.
    desktop.goto("/")
    desktop.wait_for_function(
        "() => window.kandevLive.socket && window.kandevLive.socket.readyState === 1"
    )
    task_card = desktop.locator(f"a.session-link[data-session='{session_id}']")
    assert task_card.locator("[data-state]").inner_text() == "Needs approval"
    heading = desktop.locator("#column-in_progress-title").inner_text()
    assert heading.endswith("1 needs approval"), heading

    open_session(desktop, session_id)
    open_session(phone, session_id)
    for page in (desktop, phone):
        page.wait_for_selector(f"{card}[data-state='pending']")
        assert page.locator("#session-state").inner_text() == "Needs approval"
        assert page.locator(f"{card} .approval-name").inner_text() == "Edit notes.txt"
        assert page.locator(f"{card} pre.diff .gi").all_inner_texts() == ["+++ b/notes.txt", "+2"]
        buttons = page.locator(f"{card} .approval-actions button").all_inner_texts()
        assert buttons == ["Allow once", "Reject"]
        assert axe_serious(page) == []
    assert_fits_a_phone(phone)

    desktop.evaluate("window.notReloaded = true")
    phone.tap(f"{card} button[value='once']")

    desktop.wait_for_selector(f"{card}[data-state='allowed']", timeout=30_000)
    outcome = desktop.locator(f"{card} .approval-outcome").inner_text()
    assert re.fullmatch(rf"Allowed once by {MEMBER} at \S+( [AP]M)?", outcome), outcome
    assert "UTC" not in outcome  # shown on the desktop's own clock
    assert desktop.evaluate("window.notReloaded") is True
    assert desktop.locator(f"{card} button").count() == 0
    phone.wait_for_selector(f"{card}[data-state='allowed']")
    assert phone.locator(f"#approval-{approval_id}-note").inner_text() == ""
    for page in (desktop, phone):
        assert axe_serious(page) == []
        assert violations(page) == []
        assert page.console_errors == []
