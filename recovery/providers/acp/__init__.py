"""ACP agents under the recovery engine: the whole prompt is the retry unit.

The app calls one of:

    outcome = await AcpPromptRun(spec=spec, on_event=callback, cancel=token).execute()
    for item in acp_prompt_iter(spec, cancel=token): ...   # blocking; outcome last

and hands a ``PromptFailure`` to the one failure judge, which says whether the whole prompt may
be sent again (``judgement.replay``) and what to do (``judgement.decision``, manual whenever the
replay is refused):

    judgement = recovery.judge.judge(
        evidence=failure.evidence, replay=failure.replay_facts, budget=budget, ...
    )

The adapter only observes: it never classifies a failure itself.
"""

from recovery.providers.acp.agent_events import (
    AgentEvent,
    AgentPermission,
    AgentText,
    AgentThought,
    AgentToolCall,
    AgentToolCallUpdate,
    Correlation,
    ModelSettled,
    PromptEnd,
    ResponseAttemptBoundary,
)
from recovery.providers.acp.evidence import AttemptEvidence, evidence_observe, evidence_start
from recovery.providers.acp.failure import (
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    TerminalError,
    failure_build,
)
from recovery.providers.acp.metadata import PromptErrorMetadata, metadata_project
from recovery.providers.acp.permissions import PermissionPolicy, permission_choose
from recovery.providers.acp.run import AcpPromptRun
from recovery.providers.acp.spec import AcpPromptSpec
from recovery.providers.acp.sync import acp_prompt_iter
from recovery.replay import (  # the judge's vocabulary for a whole-prompt replay
    RecordedDiagnostic,
    ReplayDisposition,
    ReplayFacts,
    ReplayReason,
    normalise_text,
)

__all__ = [
    "AcpPromptRun",
    "AcpPromptSpec",
    "AgentEvent",
    "AgentPermission",
    "AgentText",
    "AgentThought",
    "AgentToolCall",
    "AgentToolCallUpdate",
    "AttemptEvidence",
    "Correlation",
    "ModelSettled",
    "PermissionPolicy",
    "PromptCompleted",
    "PromptEnd",
    "PromptErrorMetadata",
    "PromptFailure",
    "PromptOutcome",
    "RecordedDiagnostic",
    "ReplayDisposition",
    "ReplayFacts",
    "ReplayReason",
    "ResponseAttemptBoundary",
    "TerminalError",
    "acp_prompt_iter",
    "evidence_observe",
    "evidence_start",
    "failure_build",
    "metadata_project",
    "normalise_text",
    "permission_choose",
]
