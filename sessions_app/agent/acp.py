"""The ACP driver: one claimed prompt generation against an agent process; the whole prompt is
the retry unit.

One attempt is one fresh agent process (initialize, session/new, session/prompt) given the
person's latest prompt, preceded by the committed conversation so far (``acp_context``). The
driver only reports (``sessions_app.agent.reports``): it yields the agent's events as the prompt
run gives them, ``CallSucceeded`` when the prompt completed, and returns how the turn ended. The
Turn turns the events into rows (``sessions_app.agent.rows``: message chunks -> an assistant
row, thought chunks -> a thinking row, tool calls -> a tool_call row revised in place, a
response-attempt boundary -> the abandoned answer retracted) and tells the ladder.

A failed attempt goes to the ladder with what it showed (``failure.replay_facts``); the judge
allows an automatic retry only when that proves the attempt showed nothing, and then the visible
ladder owns the wait, the notice and the scheduled retry, which runs the whole prompt again in a
new agent process. Every other failure is manual recovery at once, with no notice: the agent may
have done something we can't undo.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path

from django.conf import settings
from django.utils import timezone

from recovery import wording
from recovery.cancel import CancelToken
from recovery.effects import granted_is_effect
from recovery.providers.acp import (
    AcpPromptSpec,
    AgentPermission,
    AgentToolCall,
    Correlation,
    ModelSettled,
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    acp_prompt_iter,
)
from recovery.providers.acp.asking import PermissionAsker
from sessions_app.agent.acp_context import acp_prompt_text
from sessions_app.agent.reports import CallSucceeded, HandedBack, Judged, Reports, TurnResult
from sessions_app.agent.targets import TargetUnusable, acp_config_for
from sessions_app.agent.transcript import context_rows
from sessions_app.db_connections import released_between
from sessions_app.effects.models import WorkspaceSnapshot
from sessions_app.effects.services import workspace_effects_measure, workspace_snapshot_record
from sessions_app.models import Message, PromptGeneration, ProviderTarget, Session

# Leave the agent enough room to stop cleanly before Celery's own soft limit would interrupt us.
_TIMEOUT_MARGIN_S = 30


class AcpDriver:
    def __init__(
        self,
        *,
        target: ProviderTarget,
        session: Session,
        generation: PromptGeneration,
        attempt: int,
        cancel: CancelToken,
        asker: PermissionAsker | None = None,
    ) -> None:
        """``asker`` (the runner's ApprovalAsker) asks a person whatever the target's policy
        leaves to one; without it those requests are refused as under read-only."""
        self.target = target
        self.asker = asker
        self.session = session
        self.generation = generation
        self.attempt = attempt
        self.cancel = cancel
        self.correlation = Correlation(
            session_id=str(session.pk),
            execution_id=f"gen-{generation.pk}-{attempt}",
            generation=generation.number,
        )
        self.model_id: str | None = None
        self.workspace: Path | None = None
        self.snapshot: WorkspaceSnapshot | None = None
        self.tool_kinds: dict[str, str | None] = {}
        self.non_read_granted = False

    def reports(self) -> Reports:
        try:
            spec = self._spec()
        except TargetUnusable as unusable:
            return HandedBack(code=unusable.code, detail=unusable.detail)
        outcome: PromptOutcome | None = None
        # The thread's connection goes back to the pool while it waits for the agent.
        with contextlib.closing(
            released_between(acp_prompt_iter(spec, cancel=self.cancel, asker=self.asker))
        ) as items:
            for item in items:
                if isinstance(item, (PromptCompleted, PromptFailure)):
                    outcome = item
                    break
                if isinstance(item, ModelSettled):
                    self.model_id = item.model_id
                self._note_tool(item)
                yield item
        if outcome is None:
            raise RuntimeError("the ACP prompt ended without an outcome")
        if self.cancel.cancelled or (
            isinstance(outcome, PromptCompleted) and outcome.stop_reason == "cancelled"
        ):
            return TurnResult.STOPPED
        if isinstance(outcome, PromptCompleted):
            # The whole prompt is this agent's one provider call: recorded like a model call.
            yield CallSucceeded()
            return TurnResult.SUCCEEDED
        return self._judged(outcome)

    def _note_tool(self, item: object) -> None:
        if isinstance(item, AgentToolCall):
            self.tool_kinds[item.id] = item.kind
        elif isinstance(item, AgentPermission):
            kind = self.tool_kinds.get(item.tool_call_id)  # unknown kind: an effect
            if granted_is_effect(granted=item.granted, tool_kind=kind):
                self.non_read_granted = True

    def _judged(self, failure: PromptFailure) -> Judged:
        # Effects are evidence: what the attempt did to its workspace since it started.
        effects = workspace_effects_measure(
            snapshot=self.snapshot,
            workspace=self.workspace or Path("/nonexistent"),
            non_read_granted=self.non_read_granted,
        )
        return Judged(
            evidence=failure.evidence,
            detail=failure.message,
            model=failure.metadata.model_id or self.model_id or self.target.model,
            replay=replace(failure.replay_facts, effects=effects),
        )

    def _spec(self) -> AcpPromptSpec:
        config = acp_config_for(self.target, session_id=self.session.pk)
        self.workspace = Path(config.host_cwd or config.cwd)
        self.snapshot = workspace_snapshot_record(
            generation=self.generation,
            attempt=self.attempt,
            workspace=self.workspace,
            now=timezone.now(),
        )
        # The person's own words, then what was really said before: retracted or partial rows
        # never reach the agent (acp_context decides which).
        text = acp_prompt_text(
            messages=context_rows(
                session_id=self.session.pk, roles=(Message.Role.USER, Message.Role.ASSISTANT)
            )
        )
        if text is None or not text.prompt:
            raise TargetUnusable(code="no_prompt", detail=wording.NO_PROMPT)
        return AcpPromptSpec(
            **config.launch_fields(),
            prompt=text.prompt,
            context=text.context,
            correlation=self.correlation,
            prompt_timeout_s=max(1, settings.CELERY_TASK_SOFT_TIME_LIMIT - _TIMEOUT_MARGIN_S),
            # The time people take to answer is not the agent's, up to the approval timeout in
            # all: the turn's task limits leave room for exactly that (settings).
            ask_budget_s=settings.KANDEV_APPROVAL_TIMEOUT,
            exit_grace_s=settings.KANDEV_AGENT_EXIT_GRACE_S,
        )
