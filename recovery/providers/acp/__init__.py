"""ACP agents under the recovery engine: the whole prompt is the retry unit.

The Django layer calls one of:

    outcome = await AcpPromptRun(spec=spec, on_event=callback, cancel=token).execute()
    for item in acp_prompt_iter(spec, cancel=token): ...   # blocking; outcome last

and, on a ``PromptFailure``, retries the whole prompt automatically only when
``failure.replay.retry_allowed`` (then hands ``failure.evidence`` and ``failure.classification``
to ``recovery.policy.decide``); otherwise it offers manual recovery.
"""

from recovery.providers.acp.events import (
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
from recovery.providers.acp.evidence import (
    AttemptEvidence,
    RecordedDiagnostic,
    evidence_observe,
    evidence_start,
    normalise_text,
)
from recovery.providers.acp.failure import (
    PromptCompleted,
    PromptFailure,
    PromptOutcome,
    TerminalError,
    failure_build,
)
from recovery.providers.acp.metadata import PromptErrorMetadata, metadata_project
from recovery.providers.acp.permissions import PermissionPolicy, permission_choose
from recovery.providers.acp.replay import (
    ReplayDisposition,
    ReplayReason,
    TerminalFacts,
    replay_disposition,
)
from recovery.providers.acp.run import AcpPromptRun, AcpPromptSpec
from recovery.providers.acp.sync import acp_prompt_iter

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
    "ReplayReason",
    "ResponseAttemptBoundary",
    "TerminalError",
    "TerminalFacts",
    "acp_prompt_iter",
    "evidence_observe",
    "evidence_start",
    "failure_build",
    "metadata_project",
    "normalise_text",
    "permission_choose",
    "replay_disposition",
]
