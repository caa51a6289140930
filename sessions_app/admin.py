"""Admin: read-mostly views for operators. Writes belong to services, so most fields are read-only."""

from __future__ import annotations

from django.contrib import admin

from sessions_app.models import (
    ApiToken,
    Message,
    Note,
    PromptGeneration,
    ProviderTarget,
    Session,
    SessionEvent,
    TargetFallback,
    Task,
)


class TargetFallbackInline(admin.TabularInline):
    model = TargetFallback
    fk_name = "target"
    extra = 0


@admin.register(ProviderTarget)
class ProviderTargetAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "model", "base_url", "api_key_env", "created_at"]
    list_filter = ["kind"]
    search_fields = ["name", "model"]
    readonly_fields = ["created_at"]
    inlines = [TargetFallbackInline]


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["title", "owner", "status", "updated_at"]
    list_filter = ["status"]
    list_select_related = ["owner"]
    search_fields = ["title"]
    readonly_fields = ["created_at", "updated_at"]


@admin.register(Session)
class SessionAdmin(admin.ModelAdmin):
    list_display = ["title", "task", "owner", "target", "state", "last_seq", "updated_at"]
    list_filter = ["state", "target"]
    list_select_related = ["task", "owner", "target"]
    search_fields = ["title"]
    readonly_fields = ["state", "last_seq", "created_at", "updated_at"]
    filter_horizontal = ["members"]


@admin.register(PromptGeneration)
class PromptGenerationAdmin(admin.ModelAdmin):
    list_display = ["__str__", "session", "state", "mode", "error_code", "created_at", "duration"]
    list_filter = ["state", "mode"]
    list_select_related = ["session"]
    readonly_fields = [f.name for f in PromptGeneration._meta.fields]

    @admin.display(description="Duration")
    def duration(self, obj: PromptGeneration) -> str:
        if obj.claimed_at is None or obj.finished_at is None:
            return "-"
        return f"{(obj.finished_at - obj.claimed_at).total_seconds():.1f} s"


@admin.register(Message)
class MessageAdmin(admin.ModelAdmin):
    list_display = ["id", "session", "role", "status", "incomplete", "excerpt", "created_at"]
    list_filter = ["role", "status", "incomplete"]
    list_select_related = ["session"]
    readonly_fields = [f.name for f in Message._meta.fields]

    @admin.display(description="Text")
    def excerpt(self, obj: Message) -> str:
        return obj.text[:80]


@admin.register(SessionEvent)
class SessionEventAdmin(admin.ModelAdmin):
    list_display = ["session", "seq", "type", "created_at"]
    list_filter = ["type"]
    list_select_related = ["session"]
    readonly_fields = [f.name for f in SessionEvent._meta.fields]


@admin.register(Note)
class NoteAdmin(admin.ModelAdmin):
    list_display = ["session", "tool_call_id", "excerpt", "created_at"]
    list_select_related = ["session"]
    readonly_fields = [f.name for f in Note._meta.fields]

    @admin.display(description="Text")
    def excerpt(self, obj: Note) -> str:
        return obj.text[:80]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    # The digest alone is useless to an attacker, but there is no reason to show it either.
    list_display = ["prefix", "label", "user", "created_at", "last_used_at", "expires_at", "revoked_at"]
    list_select_related = ["user"]
    exclude = ["digest"]
    readonly_fields = ["user", "prefix", "label", "created_at", "last_used_at"]

    def has_add_permission(self, request) -> bool:
        return False  # tokens come from `manage.py create_api_token`, which shows them once
