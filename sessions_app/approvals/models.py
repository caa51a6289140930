"""An agent's permission request waiting for (or answered by) a person."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from sessions_app.models import PromptGeneration, Session


class Approval(models.Model):
    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        ALLOWED = "allowed", "Allowed"
        REJECTED = "rejected", "Rejected"
        CANCELLED = "cancelled", "Cancelled"
        TIMED_OUT = "timed_out", "Timed out (rejected)"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="approvals")
    generation = models.ForeignKey(
        PromptGeneration, on_delete=models.CASCADE, related_name="approvals"
    )
    tool_call_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=40, blank=True)
    title = models.CharField(max_length=500, blank=True)
    command = models.TextField(blank=True)
    paths = models.JSONField(default=list, blank=True)
    # {"path", "old_text", "new_text"} as the agent proposed it; None when it sent no diff.
    diff = models.JSONField(null=True, blank=True)
    # [{"option_id", "name", "kind"}, ...] exactly as the agent offered them.
    options = models.JSONField(default=list)
    state = models.CharField(max_length=20, choices=State.choices, default=State.PENDING)
    option_id = models.CharField(max_length=200, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    # Answered without asking, by this earlier "allow always" of the same session.
    standing = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        indexes = [
            models.Index(fields=["session", "state"]),
            models.Index(fields=["state", "deadline"]),
        ]

    def __str__(self) -> str:
        return f"{self.kind or 'tool'}: {self.title}"[:120]
