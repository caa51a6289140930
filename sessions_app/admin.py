"""Admin: read-mostly views for operators. Writes belong to services, so most fields are
read-only."""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from sessions_app.errors import InvalidInput
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
from sessions_app.services import target_fields_check
from sessions_app.target_rules import target_problems
from sessions_app.text_rules import name_problem

# The app list beside every page took 300 of 1280 px and squeezed the ladder's lists until their
# tables scrolled sideways; Home and the breadcrumbs reach every list as well.
admin.site.enable_nav_sidebar = False


class TargetFallbackInline(admin.TabularInline):
    model = TargetFallback
    fk_name = "target"
    extra = 0


class ProviderTargetForm(forms.ModelForm):
    """Staff's way to set up a target: the service's checks (the operator's allowlists) decide."""

    class Meta:
        model = ProviderTarget
        fields = [
            "name",
            "kind",
            "agent_kind",
            "base_url",
            "model",
            "api_key_env",
            "first_chunk_timeout_s",
            "idle_timeout_s",
            "no_progress_timeout_s",
            "permission_policy",
        ]
        help_texts = {
            "base_url": "Empty for the provider's default. Its host must be listed in "
            "KANDEV_PROVIDER_HOSTS. For an ACP agent, what the agent's own base-URL variable "
            "takes (see the README).",
            "agent_kind": "ACP only: which agent of the registry runs the prompts.",
            "api_key_env": "The name of the environment variable holding the key (never the "
            "key itself), one of KANDEV_PROVIDER_KEY_ENVS.",
        }

    def clean_name(self) -> str:
        problem = name_problem(self.cleaned_data["name"])
        if problem is not None:
            raise forms.ValidationError(problem)
        return self.cleaned_data["name"].strip()

    def clean(self) -> dict:
        super().clean()
        cleaned = self.cleaned_data
        try:
            target_fields_check(
                kind=cleaned.get("kind", ""),
                base_url=cleaned.get("base_url", ""),
                model=cleaned.get("model", ""),
                api_key_env=cleaned.get("api_key_env", ""),
                agent_kind=cleaned.get("agent_kind", ""),
            )
        except InvalidInput as error:
            self.add_error(error.field if error.field in self.fields else None, error.message)
        return cleaned


@admin.register(ProviderTarget)
class ProviderTargetAdmin(admin.ModelAdmin):
    form = ProviderTargetForm
    list_display = [
        "name", "kind", "model", "base_url", "api_key_env", "permission_policy", "allowed",
        "created_at",
    ]  # fmt: skip
    list_filter = ["kind", "permission_policy"]
    search_fields = ["name", "model"]
    readonly_fields = ["created_at", "refused_because"]
    inlines = [TargetFallbackInline]

    @admin.display(boolean=True, description="Allowed")
    def allowed(self, obj: ProviderTarget) -> bool:
        """False for a target the workers refuse under today's allowlists (say, after a change
        to KANDEV_PROVIDER_HOSTS, or a row edited in the database)."""
        return not target_problems(
            kind=obj.kind, base_url=obj.base_url, api_key_env=obj.api_key_env
        )

    @admin.display(description="Refused because")
    def refused_because(self, obj: ProviderTarget) -> str:
        problems = target_problems(
            kind=obj.kind, base_url=obj.base_url, api_key_env=obj.api_key_env
        )
        return "; ".join(f"{p.field} {p.message}" for p in problems) or "-"


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
    # A streaming message's text is its row's plus its chunks (MessageChunk): shown whole here,
    # so the chunks need no admin of their own.
    exclude = ["text"]
    readonly_fields = [f.name for f in Message._meta.fields if f.name != "text"] + ["whole_text"]

    @admin.display(description="Text")
    def excerpt(self, obj: Message) -> str:
        return obj.full_text[:80]

    @admin.display(description="Text")
    def whole_text(self, obj: Message) -> str:
        return obj.full_text


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
    list_display = [
        "prefix",
        "label",
        "user",
        "created_at",
        "last_used_at",
        "expires_at",
        "revoked_at",
    ]
    list_select_related = ["user"]
    exclude = ["digest"]
    readonly_fields = ["user", "prefix", "label", "created_at", "last_used_at"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # tokens come from `manage.py create_api_token`, which shows them once
