"""Approvals in the admin, read-only: who decided what, when, and how each request ended."""

from __future__ import annotations

from django.contrib import admin

from sessions_app.approvals.models import Approval
from sessions_app.ladder.admin import ReadOnlyAdmin, human_time


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyAdmin):
    list_display = (
        "id", "session_title", "kind", "title", "state", "option_id", "decided_by", "asked",
        "decided",
    )  # fmt: skip
    list_filter = ("state", "kind", ("created_at", admin.DateFieldListFilter))
    list_select_related = ("session", "decided_by")
    search_fields = ("session__title", "title", "command", "tool_call_id")
    date_hierarchy = "created_at"
    fields = (
        "session", "generation", "tool_call_id", "kind", "title", "command", "paths", "diff",
        "options", "state", "option_id", "decided_by", "standing", "asked", "decided", "deadline",
    )  # fmt: skip
    readonly_fields = fields

    @admin.display(description="asked", ordering="created_at")
    def asked(self, approval: Approval) -> str:
        return human_time(approval.created_at)

    @admin.display(description="decided", ordering="decided_at")
    def decided(self, approval: Approval) -> str:
        return human_time(approval.decided_at)
