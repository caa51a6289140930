"""Tasks, sessions, prompt generations, transcript messages and the durable session event log.

Models hold data and invariants only; writes live in services.py, reads in selectors.py.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class PermissionPolicyChoice(models.TextChoices):
    # The values are recovery.providers.acp.PermissionPolicy's (a unit test keeps them equal).
    ASK = "ask", "Ask a person (contained reads and searches pass)"
    ALLOW_READ_ONLY = "allow_read_only", "Allow contained reads, refuse the rest"
    ALLOW_ALL = "allow_all", "Allow everything"
    DENY_ALL = "deny_all", "Refuse everything"


class ProviderTarget(models.Model):
    class Kind(models.TextChoices):
        ANTHROPIC = "anthropic", "Anthropic Messages"
        OPENAI = "openai", "OpenAI-compatible Chat Completions"
        ACP = "acp", "ACP agent"
        MOCK = "mock", "Mock provider (Anthropic wire format)"

    class AgentKind(models.TextChoices):
        MOCK = "mock", "Mock ACP agent (tests and demos)"
        CLAUDE = "claude", "Claude Code (claude-agent-acp)"
        CODEX = "codex", "Codex (codex-acp)"
        GEMINI = "gemini", "Gemini CLI (gemini --acp)"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    base_url = models.URLField(max_length=500, blank=True)
    model = models.CharField(max_length=200, blank=True)
    # The *name* of the environment variable holding the key. The key itself is never stored.
    api_key_env = models.CharField(max_length=100, blank=True)
    # ACP only: which agent of the registry (sessions_app/agent/registry.py) runs the prompts.
    # A kind, never a command line: what an agent process runs is decided by code, not by data.
    agent_kind = models.CharField(max_length=20, choices=AgentKind.choices, blank=True)
    # Stream timeouts in seconds for this target's model calls; empty means the worker's default
    # (KANDEV_FIRST_CHUNK_TIMEOUT, KANDEV_IDLE_TIMEOUT, KANDEV_NO_PROGRESS_TIMEOUT). A reasoning
    # model that thinks silently for minutes gets a longer no-progress timeout here.
    first_chunk_timeout_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1), MaxValueValidator(3600)],
        help_text="Seconds until the provider's first byte after the headers (empty: default).",
    )
    idle_timeout_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1), MaxValueValidator(3600)],
        help_text="Seconds without any byte, pings included (empty: default).",
    )
    no_progress_timeout_s = models.FloatField(
        null=True,
        blank=True,
        validators=[MinValueValidator(0.1), MaxValueValidator(3600)],
        help_text="Seconds without new output (text, thinking, a tool call), before the first "
        "and between later ones (empty: default).",
    )
    # How an ACP agent's permission requests are answered (recovery.providers.acp.permissions).
    permission_policy = models.CharField(
        max_length=20,
        choices=PermissionPolicyChoice.choices,
        default=PermissionPolicyChoice.ASK,
        help_text="ACP agents: who answers the agent's requests to run a tool.",
    )
    fallbacks = models.ManyToManyField(
        "self", through="TargetFallback", symmetrical=False, related_name="+", blank=True
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TargetFallback(models.Model):
    """One ordered entry of a target's fallback list."""

    target = models.ForeignKey(
        ProviderTarget, on_delete=models.CASCADE, related_name="fallback_links"
    )
    fallback = models.ForeignKey(ProviderTarget, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["target", "position"], name="fallback_position_unique"),
            models.UniqueConstraint(fields=["target", "fallback"], name="fallback_once_per_target"),
            models.CheckConstraint(
                condition=~models.Q(target=models.F("fallback")), name="fallback_not_self"
            ),
        ]


class Task(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "Open"
        IN_PROGRESS = "in_progress", "In progress"
        NEEDS_ATTENTION = "needs_attention", "Needs attention"
        DONE = "done", "Done"

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks"
    )
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    # Archived tasks leave the board (they are listed under "Archived") and keep everything.
    archived_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["owner", "archived_at"])]

    def __str__(self) -> str:
        return self.title


class Session(models.Model):
    class State(models.TextChoices):
        IDLE = "idle", "Idle"
        # A prompt waits for a worker, for the person's earlier prompts or for an agent slot.
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_RETRY = "waiting_retry", "Waiting to retry"
        NEEDS_APPROVAL = "needs_approval", "Needs approval"
        NEEDS_ATTENTION = "needs_attention", "Needs attention"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owned_sessions"
    )
    # Members may view and prompt; the owner is always allowed and need not be listed.
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, related_name="member_sessions", blank=True
    )
    target = models.ForeignKey(ProviderTarget, on_delete=models.PROTECT, related_name="sessions")
    title = models.CharField(max_length=200)
    state = models.CharField(max_length=20, choices=State.choices, default=State.IDLE)
    # The last allocated SessionEvent.seq; bumped under a row lock by services.event_append.
    last_seq = models.BigIntegerField(default=0)
    # "Start fresh" begins a new model context here: earlier rows stay visible but are not sent.
    context_from = models.ForeignKey(
        "Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    # The last row of the conversation shown (one branch of the message tree, Message.parent):
    # new rows hang below it, and the history sent to the agent is the path up from it.
    tail = models.ForeignKey(
        "Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    # Not a column: the place in line that board_selectors.board_columns sets on the board's
    # sessions.
    queue: dict[str, Any] | None

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.title


class PromptGeneration(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_RETRY = "waiting_retry", "Waiting to retry"
        # The worker holds the turn while a person answers the agent's permission request.
        WAITING_APPROVAL = "waiting_approval", "Waiting for an approval"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        STOPPED = "stopped", "Stopped"
        SUPERSEDED = "superseded", "Superseded"

    class Mode(models.TextChoices):
        PROMPT = "prompt", "New prompt"
        RESUME = "resume", "Resume"
        FRESH = "fresh", "Start fresh"
        REGENERATE = "regenerate", "Regenerate"
        EDIT = "edit", "Edited prompt"

    class QueueReason(models.TextChoices):
        # What a queued generation waits for (sessions_app/services/lifecycle/queued.py).
        WORKER = "", "A free worker"
        USER_LIMIT = "user_limit", "The person's earlier prompts"
        AGENT_SLOT = "agent_slot", "A free agent slot on the worker box"
        WORKSPACE = "workspace", "The other session of this task to finish"

    ACTIVE_STATES = (State.QUEUED, State.RUNNING, State.WAITING_APPROVAL, State.WAITING_RETRY)
    # A worker holds the turn (it heartbeats, and counts towards its person's running limit).
    WORKER_STATES = (State.RUNNING, State.WAITING_APPROVAL)

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="generations")
    number = models.PositiveIntegerField()
    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.PROMPT)
    stop_requested = models.BooleanField(default=False)
    # Who sent the prompt: queues are fair between people, each with at most
    # KANDEV_USER_MAX_RUNNING generations running at once.
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    queue_reason = models.CharField(
        max_length=20, choices=QueueReason.choices, default=QueueReason.WORKER, blank=True
    )
    # The "N ahead" viewers were last told, so a position is announced only when it changes.
    queue_ahead = models.PositiveIntegerField(null=True, blank=True)
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)  # redacted, diagnostic tier
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    # Written every few seconds by the worker running it; a silent running generation lost its
    # worker (SIGKILL, OOM, a host gone) and is handed back to the person by the reaper.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["session", "number"]
        constraints = [
            models.UniqueConstraint(fields=["session", "number"], name="generation_number_unique"),
        ]
        indexes = [models.Index(fields=["state", "created_at"], name="generation_state_created")]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.number}"


class MessageManager(models.Manager):
    """Every read of a message carries the text streamed into it since its row was written
    (``streamed_text``, its chunks in order), so ``full_text`` is whole wherever it is read."""

    def get_queryset(self) -> models.QuerySet:
        chunks = (
            MessageChunk.objects.filter(message=models.OuterRef("pk"))
            .values("message")
            .annotate(
                joined=models.StringAgg("text", delimiter=models.Value(""), order_by="position")
            )
            .values("joined")
        )
        return super().get_queryset().annotate(streamed_text=models.Subquery(chunks))


class Message(models.Model):
    class Role(models.TextChoices):
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        THINKING = "thinking", "Thinking"
        TOOL_CALL = "tool_call", "Tool call"
        TOOL_RESULT = "tool_result", "Tool result"

    class Status(models.TextChoices):
        STREAMING = "streaming", "Streaming"
        COMPLETE = "complete", "Complete"
        ERROR = "error", "Error"

    class Replaced(models.TextChoices):
        """Why a row was replaced (``metadata["replaced"]``): kept, labelled, never sent again."""

        REGENERATE = "regenerate", "Replaced by Regenerate"
        EDIT = "edit", "Replaced by an edit"
        RESUME = "resume", "Superseded: Resume ran the turn again"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="messages")
    generation = models.ForeignKey(
        PromptGeneration, on_delete=models.CASCADE, related_name="messages", null=True, blank=True
    )
    role = models.CharField(max_length=20, choices=Role.choices)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.COMPLETE)
    text = models.TextField(blank=True)
    # tool_call: {"tool_call_id", "name", "arguments"}; tool_result: {"tool_call_id", "is_error"}
    metadata = models.JSONField(default=dict, blank=True)
    # Partial output of an attempt that did not finish (stopped, or failed after exposure).
    incomplete = models.BooleanField(default=False)
    # The row this one follows in the conversation. Rows sharing a parent are versions of one
    # another: an edited prompt beside the original, a regenerated answer beside the first.
    parent = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="children"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = MessageManager()
    # Not columns: MessageManager's annotation (None on a row created in this process), and the
    # stream writer's cursor into the row's chunks (services/messages.py).
    streamed_text: str | None
    _streamed: object

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.full_text[:40]}"

    @property
    def full_text(self) -> str:
        """The whole text: the row's own, then what was streamed into it (``MessageChunk``).
        ``text`` alone is only the row's part while the message streams."""
        return self.text + (getattr(self, "streamed_text", None) or "")


class MessageChunk(models.Model):
    """Text streamed into a message after its row was written, one row per coalesced flush.

    Appending is an INSERT of the new text only, so a flush costs what it adds, not what the
    message already holds (rewriting the row made a long answer slow down quadratically).
    Finishing the message folds its chunks into ``Message.text`` once and deletes them, so a
    finished message is one row again.
    """

    message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="chunks")
    position = models.PositiveIntegerField()
    text = models.TextField()

    class Meta:
        ordering = ["message", "position"]
        constraints = [
            models.UniqueConstraint(fields=["message", "position"], name="chunk_position_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.message_id}+{self.position}"


class SessionEvent(models.Model):
    """The durable, per-session ordered log every websocket push comes from."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="events")
    seq = models.BigIntegerField()
    type = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session", "seq"]
        constraints = [models.UniqueConstraint(fields=["session", "seq"], name="event_seq_unique")]

    def __str__(self) -> str:
        return f"{self.session_id}@{self.seq} {self.type}"


class Note(models.Model):
    """Written by the side-effecting `append_note` tool: proof of how often a tool really ran."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="notes")
    tool_call_id = models.CharField(max_length=200)
    text = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["session", "tool_call_id"], name="note_once_per_tool_call"
            ),
        ]


class ApiToken(models.Model):
    """A bearer token for the JSON API. Only its SHA-256 digest is stored. It works until it is
    revoked (by its owner or staff) or its optional expiry passes; the row stays for the record."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # shown in admin to tell tokens apart
    label = models.CharField(max_length=100, blank=True)  # the owner's note: "laptop", "ci"
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
