"""One snapshot of an agent's workspace per attempt of a turn: the evidence of its effects."""

from __future__ import annotations

from django.db import models

from sessions_app.models import PromptGeneration, Session


class WorkspaceSnapshot(models.Model):
    """The workspace as it was when an attempt started: a tree in the session's private snapshot
    store, or the reason there is none (then the attempt's effects are unknown)."""

    class Problem(models.TextChoices):
        NONE = "", "Taken"
        TOO_LARGE = "too_large", "Too large to snapshot"
        FAILED = "failed", "Could not be taken"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="snapshots")
    generation = models.ForeignKey(
        PromptGeneration, on_delete=models.CASCADE, related_name="snapshots"
    )
    attempt = models.PositiveSmallIntegerField()  # the driver's attempt number within the turn
    taken_at = models.DateTimeField()
    tree_oid = models.CharField(max_length=64, blank=True)
    problem = models.CharField(max_length=20, choices=Problem.choices, blank=True)

    class Meta:
        ordering = ["generation_id", "attempt"]
        constraints = [
            models.UniqueConstraint(
                fields=["generation", "attempt"], name="one_snapshot_per_attempt"
            )
        ]

    def __str__(self) -> str:
        return f"snapshot of {self.generation} attempt {self.attempt}"
