"""The retry ladder in the admin: read-only, since every row is the ladder's own bookkeeping
(editing a loop's state or attempt would let a scheduled attempt run twice or never). Times and
durations read as people say them; retired notices stay listed with when, why and by which loop.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib import admin
from django.db.models import Model, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.formats import date_format

from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice


def human_duration(seconds: float | None) -> str:
    """9.301869474913463 -> "9.3 s"; 0.0123 -> "12 ms"; 75 -> "1 min 15 s"; None -> "-"."""
    if seconds is None:
        return "-"
    if seconds < 0:
        return "-" + human_duration(-seconds)
    if seconds < 1:
        return f"{round(seconds * 1000)} ms"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{round(seconds)} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if minutes else f"{hours} h"


def human_time(moment: datetime | None) -> str:
    """A local date and time to the second ("1 Dec 2026, 11:24:48"), "-" when unset."""
    if moment is None:
        return "-"
    return date_format(timezone.localtime(moment), "j M Y, H:i:s")


def _between(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return "-"
    return human_duration((end - start) / timedelta(seconds=1))


class ReadOnlyAdmin(admin.ModelAdmin):
    @admin.display(description="session", ordering="session__title")
    def session_title(self, row: Any) -> str:
        # A plain column, not the foreign key itself: the admin never wraps a foreign key's
        # cell, and one long title pushed the list past 1280 px.
        return row.session.title

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class NoticeStateFilter(admin.SimpleListFilter):
    title = "state"
    parameter_name = "state"

    def lookups(
        self, request: HttpRequest, model_admin: admin.ModelAdmin
    ) -> tuple[tuple[str, str], ...]:
        return (("live", "Live (shown to viewers)"), ("retired", "Retired"))

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        if self.value() == "live":
            return queryset.filter(retired_at__isnull=True)
        if self.value() == "retired":
            return queryset.filter(retired_at__isnull=False)
        return queryset


@admin.register(RetryNotice)
class RetryNoticeAdmin(ReadOnlyAdmin):
    list_display = (
        "id", "session_title", "state", "reason", "target", "attempt_of", "retry_time", "shown",
        "retired_because", "retired_by_loop",
    )  # fmt: skip
    list_filter = (
        NoticeStateFilter, "retired_reason", "provider", "code",
        ("session", admin.RelatedOnlyFieldListFilter), ("created_at", admin.DateFieldListFilter),
    )  # fmt: skip
    list_select_related = ("session", "loop", "retired_by")
    search_fields = ("session__title", "reason", "provider", "model")
    date_hierarchy = "created_at"
    fields = (
        "session", "loop", "state", "code", "reason", "provider", "model", "attempt_of",
        "retry_time", "switched_target", "created", "retired", "retired_because",
        "retired_by_loop", "shown",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description="state")
    def state(self, notice: RetryNotice) -> str:
        return "Retired" if notice.retired_at else "Live"

    @admin.display(description="target")
    def target(self, notice: RetryNotice) -> str:
        return f"{notice.provider} · {notice.model}" if notice.model else notice.provider

    @admin.display(description="attempt")
    def attempt_of(self, notice: RetryNotice) -> str:
        return f"{notice.attempt} of {notice.max_attempts}"

    @admin.display(description="retry at", ordering="retry_at")
    def retry_time(self, notice: RetryNotice) -> str:
        return human_time(notice.retry_at)

    @admin.display(description="created", ordering="created_at")
    def created(self, notice: RetryNotice) -> str:
        return human_time(notice.created_at)

    @admin.display(description="retired at", ordering="retired_at")
    def retired(self, notice: RetryNotice) -> str:
        return human_time(notice.retired_at)

    @admin.display(description="shown for")
    def shown(self, notice: RetryNotice) -> str:
        return _between(notice.created_at, notice.retired_at)

    @admin.display(description="why retired", ordering="retired_reason")
    def retired_because(self, notice: RetryNotice) -> str:
        return notice.get_retired_reason_display() or "-"

    @admin.display(description="retired by")
    def retired_by_loop(self, notice: RetryNotice) -> str:
        return f"loop {notice.retired_by_id}" if notice.retired_by_id else "-"


def loop_outcome(loop: RetryLoop) -> str:
    """What the loop came to, in words that never claim a retry that did not happen."""
    retries = loop.attempt
    made = "no retry" if retries == 0 else f"{retries} {'retry' if retries == 1 else 'retries'}"
    if loop.state == RetryLoop.State.WAITING:
        return f"Waiting for retry {retries} of {loop.max_attempts}"
    if loop.state == RetryLoop.State.RUNNING:
        return f"Running retry {retries} of {loop.max_attempts}"
    if loop.state == RetryLoop.State.EXHAUSTED:
        if retries == 0:
            return "Handed back before any retry"
        return f"Gave up after {made} of {loop.max_attempts}"
    return f"{loop.get_state_display()} after {made}"


@admin.register(RetryLoop)
class RetryLoopAdmin(ReadOnlyAdmin):
    list_display = (
        "id", "session_title", "generation", "outcome", "target_name", "last_code", "next_attempt",
        "started", "lasted",
    )  # fmt: skip
    list_filter = (
        "state", "last_code", "target_name",
        ("session", admin.RelatedOnlyFieldListFilter), ("created_at", admin.DateFieldListFilter),
    )  # fmt: skip
    list_select_related = ("session", "generation")
    search_fields = ("session__title", "target_name")
    date_hierarchy = "created_at"
    exclude = ("budget",)
    readonly_fields = (
        "session", "generation", "state", "outcome", "attempt", "max_attempts", "target_name",
        "last_code", "next_attempt", "started", "ended", "lasted",
    )  # fmt: skip

    @admin.display(description="outcome", ordering="state")
    def outcome(self, loop: RetryLoop) -> str:
        return loop_outcome(loop)

    @admin.display(description="next attempt", ordering="next_attempt_at")
    def next_attempt(self, loop: RetryLoop) -> str:
        return human_time(loop.next_attempt_at)

    @admin.display(description="started", ordering="created_at")
    def started(self, loop: RetryLoop) -> str:
        return human_time(loop.created_at)

    @admin.display(description="ended", ordering="ended_at")
    def ended(self, loop: RetryLoop) -> str:
        return human_time(loop.ended_at)

    @admin.display(description="lasted")
    def lasted(self, loop: RetryLoop) -> str:
        return _between(loop.created_at, loop.ended_at)


@admin.register(AttemptRecord)
class AttemptRecordAdmin(ReadOnlyAdmin):
    # The narrow columns a list needs; phase, kind, rule and byte counts are on each record's page.
    list_display = (
        "when", "session_title", "call", "target", "code", "decision", "wait", "first_token",
    )  # fmt: skip
    list_filter = (
        "decision", "code", "target", "exposure",
        ("session", admin.RelatedOnlyFieldListFilter), ("created_at", admin.DateFieldListFilter),
    )  # fmt: skip
    list_select_related = ("session", "generation")
    search_fields = ("session__title", "code", "rule_id")
    date_hierarchy = "created_at"
    readonly_fields = (
        "session", "generation", "attempt", "target", "phase", "kind", "code", "rule_id",
        "exposure", "decision", "wait", "first_token", "bytes_received", "input_tokens",
        "output_tokens", "when",
    )  # fmt: skip
    fields = readonly_fields

    @admin.display(description="call", ordering="attempt")
    def call(self, record: AttemptRecord) -> str:
        """Which provider call of which prompt turn: "turn 3 · call 2"."""
        return f"turn {record.generation.number} · call {record.attempt}"

    @admin.display(description="when", ordering="created_at")
    def when(self, record: AttemptRecord) -> str:
        return human_time(record.created_at)

    @admin.display(description="waited", ordering="wait_s")
    def wait(self, record: AttemptRecord) -> str:
        return human_duration(record.wait_s) if record.wait_s else "-"

    @admin.display(description="first token", ordering="ttft_ms")
    def first_token(self, record: AttemptRecord) -> str:
        return human_duration(record.ttft_ms / 1000) if record.ttft_ms is not None else "-"
