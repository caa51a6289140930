"""The terminal-error metadata allowlist and the permission policy."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from recovery.providers.acp import PermissionPolicy, metadata_project, permission_choose
from recovery.providers.acp.metadata import PromptErrorMetadata
from recovery.providers.acp.permissions import ToolRequest, Workspace

OPTIONS = [("a1", "allow_once"), ("a2", "allow_always"), ("r1", "reject_once")]


def test_only_the_allowlisted_fields_cross():
    projected = metadata_project(
        code=-32603,
        data={"errorKind": "server_error", "token": "sk-ant-test-000", "raw": {"x": 1}},
        provider_id="claude-code-acp",
        model_id="claude-sonnet-4.5",
    )

    assert projected == PromptErrorMetadata(
        jsonrpc_code=-32603,
        error_kind="server_error",
        provider_id="claude-code-acp",
        model_id="claude-sonnet-4.5",
    )
    assert "sk-ant-test" not in repr(projected)


def test_malformed_fields_are_dropped_one_by_one():
    projected = metadata_project(
        code=True,
        data={"errorKind": "server error; rm -rf"},
        provider_id="/usr/bin/agent",
        model_id=None,
    )

    assert projected == PromptErrorMetadata()


def test_the_error_kind_is_at_most_64_bytes():
    assert metadata_project(
        code=1, data={"errorKind": "k" * 64}, provider_id=None, model_id=None
    ).error_kind
    assert (
        metadata_project(
            code=1, data={"errorKind": "k" * 65}, provider_id=None, model_id=None
        ).error_kind
        is None
    )


@given(
    data=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(),
        lambda c: st.lists(c) | st.dictionaries(st.text(), c),
        max_leaves=10,
    ),
    code=st.none() | st.integers() | st.text() | st.floats(),
)
def test_any_payload_projects_without_raising_and_keeps_only_clean_values(data, code):
    projected = metadata_project(code=code, data=data, provider_id="agent", model_id=None)

    assert projected.provider_id == "agent"
    kind = projected.error_kind
    assert kind is None or (
        len(kind.encode()) <= 64
        and kind.replace("_", "a").replace("-", "a").replace(".", "a").isalnum()
    )
    assert projected.jsonrpc_code is None or isinstance(projected.jsonrpc_code, int)


def choose(policy: PermissionPolicy, kind: str, options=OPTIONS, paths=("/w/notes.md",)):
    return permission_choose(
        policy=policy,
        request=ToolRequest(kind=kind, paths=paths),
        workspace=Workspace(seen="/w", host="/w"),
        options=options,
    )


def test_read_only_policy_allows_looking_and_refuses_changing():
    read = choose(PermissionPolicy.ALLOW_READ_ONLY, "read")
    edit = choose(PermissionPolicy.ALLOW_READ_ONLY, "edit")

    assert (read.option_id, read.granted) == ("a1", True)
    assert (edit.option_id, edit.granted) == ("r1", False)


def test_allow_all_prefers_a_one_time_grant_and_deny_all_refuses():
    assert choose(PermissionPolicy.ALLOW_ALL, "execute").option_id == "a1"
    assert choose(PermissionPolicy.DENY_ALL, "read").option_id == "r1"


def test_without_a_reject_option_a_refusal_is_a_cancelled_answer():
    choice = choose(PermissionPolicy.DENY_ALL, "read", options=[("a1", "allow_once")])

    assert (choice.option_id, choice.granted) == (None, False)
