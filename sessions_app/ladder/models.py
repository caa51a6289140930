"""Retry loops, retry notices and attempt records."""

from __future__ import annotations

from django.db import models

from sessions_app.models import PromptGeneration, Session


class RetryLoop(models.Model):
    """The one retry owner of a (session, prompt generation), held in the database.

    ``attempt`` is the retry scheduled next or running (0 before the first retry); a scheduled
    attempt claims the loop with a conditional UPDATE on (state=waiting, attempt=n), so a
    redelivered or swept task can never run the same attempt twice.
    """

    class State(models.TextChoices):
        RUNNING = "running", "Running an attempt"
        WAITING = "waiting", "Waiting to retry"
        SUCCEEDED = "succeeded", "Succeeded"
        EXHAUSTED = "exhausted", "Exhausted"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        DISARMED = "disarmed", "Disarmed"

    LIVE_STATES = (State.RUNNING, State.WAITING)

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="retry_loops")
    generation = models.OneToOneField(
        PromptGeneration, on_delete=models.CASCADE, related_name="retry_loop"
    )
    state = models.CharField(max_length=20, choices=State.choices, default=State.RUNNING)
    attempt = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField()
    budget = models.JSONField()  # recovery.budget.Budget.to_dict()
    target_name = models.CharField(max_length=100)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_code = models.CharField(max_length=64, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["state", "next_attempt_at"])]

    def __str__(self) -> str:
        return f"loop {self.pk} of {self.generation} ({self.state}, attempt {self.attempt})"


class RetryNoticeQuerySet(models.QuerySet):
    def live(self) -> RetryNoticeQuerySet:
        """Notices not retired: what a viewer may see (at most one per session)."""
        return self.filter(retired_at__isnull=True)


class RetryNotice(models.Model):
    """The calm banner of a waiting retry loop. At most one live (unretired) notice per session:
    writes are serialised on the session row, and duplicates left by older runs are consolidated
    on the next write. Retiring keeps the row (when, why, which loop's end did it) for the admin;
    viewers only ever see the live one."""

    class Retired(models.TextChoices):
        RECOVERED = "recovered", "Provider recovered (the retried call answered)"
        SUCCEEDED = "succeeded", "Turn succeeded"
        EXHAUSTED = "exhausted", "Retries used up"
        FAILED = "failed", "Turn failed"
        CANCELLED = "cancelled", "Cancelled or stopped by a viewer"
        REPLACED = "replaced", "Replaced (new prompt, start fresh or target change)"
        DUPLICATE = "duplicate", "Duplicate consolidated"
        CLEANUP = "cleanup", "Swept: its loop had already ended"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="retry_notices")
    loop = models.ForeignKey(RetryLoop, on_delete=models.CASCADE, related_name="notices")
    code = models.CharField(max_length=64)
    reason = models.CharField(max_length=200)
    provider = models.CharField(max_length=100)
    model = models.CharField(max_length=200, blank=True)
    attempt = models.PositiveSmallIntegerField()
    max_attempts = models.PositiveSmallIntegerField()
    retry_at = models.DateTimeField()
    switched_target = models.CharField(max_length=100, blank=True)
    retired_at = models.DateTimeField(null=True, blank=True)
    retired_reason = models.CharField(max_length=20, choices=Retired.choices, blank=True)
    # The loop whose end retired the notice (its own, or a later one of the session); null when
    # the sweeper or a consolidation retired it.
    retired_by = models.ForeignKey(
        RetryLoop, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = RetryNoticeQuerySet.as_manager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        indexes = [models.Index(fields=["session", "retired_at"])]

    def __str__(self) -> str:
        return f"{self.reason} (attempt {self.attempt} of {self.max_attempts})"


class AttemptRecord(models.Model):
    """One provider call: what happened and what the policy decided. No free text, no secrets."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="attempt_records")
    generation = models.ForeignKey(
        PromptGeneration, on_delete=models.CASCADE, related_name="attempt_records"
    )
    attempt = models.PositiveSmallIntegerField()
    target = models.CharField(max_length=100)
    phase = models.CharField(max_length=20, blank=True)
    kind = models.CharField(max_length=20, blank=True)
    code = models.CharField(max_length=64, blank=True)
    rule_id = models.CharField(max_length=100, blank=True)
    exposure = models.CharField(max_length=20, blank=True)
    decision = models.CharField(max_length=20)
    wait_s = models.FloatField(default=0)
    ttft_ms = models.PositiveIntegerField(null=True, blank=True)
    bytes_received = models.PositiveBigIntegerField(default=0)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        return f"{self.generation} attempt {self.attempt}: {self.code or 'ok'} -> {self.decision}"
