"""Tasks, sessions, prompt generations, transcript messages and the durable session event log.

Models hold data and invariants only; writes live in services.py, reads in selectors.py.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


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

    target = models.ForeignKey(ProviderTarget, on_delete=models.CASCADE, related_name="fallback_links")
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

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tasks")
    title = models.CharField(max_length=200)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.title


class Session(models.Model):
    class State(models.TextChoices):
        IDLE = "idle", "Idle"
        RUNNING = "running", "Running"
        WAITING_RETRY = "waiting_retry", "Waiting to retry"
        NEEDS_ATTENTION = "needs_attention", "Needs attention"

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="sessions")
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="owned_sessions"
    )
    # Members may view and prompt; the owner is always allowed and need not be listed.
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, related_name="member_sessions", blank=True)
    target = models.ForeignKey(ProviderTarget, on_delete=models.PROTECT, related_name="sessions")
    title = models.CharField(max_length=200)
    state = models.CharField(max_length=20, choices=State.choices, default=State.IDLE)
    # The last allocated SessionEvent.seq; bumped under a row lock by services.event_append.
    last_seq = models.BigIntegerField(default=0)
    # "Start fresh" begins a new model context here: earlier rows stay visible but are not sent.
    context_from = models.ForeignKey(
        "Message", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at", "-id"]

    def __str__(self) -> str:
        return self.title


class PromptGeneration(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_RETRY = "waiting_retry", "Waiting to retry"
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

    ACTIVE_STATES = (State.QUEUED, State.RUNNING, State.WAITING_RETRY)

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="generations")
    number = models.PositiveIntegerField()
    state = models.CharField(max_length=20, choices=State.choices, default=State.QUEUED)
    mode = models.CharField(max_length=10, choices=Mode.choices, default=Mode.PROMPT)
    stop_requested = models.BooleanField(default=False)
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

    def __str__(self) -> str:
        return f"{self.session_id}#{self.number}"


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
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session", "id"])]

    def __str__(self) -> str:
        return f"{self.role}: {self.text[:40]}"


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
            models.UniqueConstraint(fields=["session", "tool_call_id"], name="note_once_per_tool_call"),
        ]


class ApiToken(models.Model):
    """A bearer token for the JSON API. Only its SHA-256 digest is stored. It works until it is
    revoked (by its owner or staff) or its optional expiry passes; the row stays for the record."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    digest = models.CharField(max_length=64, unique=True)
    prefix = models.CharField(max_length=12)  # shown in admin to tell tokens apart
    label = models.CharField(max_length=100, blank=True)  # the owner's note: "laptop", "ci"
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
