from django.contrib import admin

from sessions_app.ladder.models import AttemptRecord, RetryLoop, RetryNotice


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(RetryNotice)
class RetryNoticeAdmin(ReadOnlyAdmin):
    list_display = ("session", "code", "provider", "model", "attempt_of", "retry_at", "loop_state")
    list_filter = ("code", "provider")
    list_select_related = ("session", "loop")
    search_fields = ("session__title",)

    @admin.display(description="attempt")
    def attempt_of(self, notice):
        return f"{notice.attempt} of {notice.max_attempts}"

    @admin.display(description="loop state")
    def loop_state(self, notice):
        return notice.loop.state


@admin.register(RetryLoop)
class RetryLoopAdmin(ReadOnlyAdmin):
    list_display = ("id", "session", "generation", "state", "attempt", "max_attempts",
                    "target_name", "last_code", "next_attempt_at")
    list_filter = ("state", "last_code", "target_name")
    list_select_related = ("session", "generation")


@admin.register(AttemptRecord)
class AttemptRecordAdmin(ReadOnlyAdmin):
    list_display = ("created_at", "session", "generation", "attempt", "target", "phase", "kind",
                    "code", "rule_id", "exposure", "decision", "wait_s")
    list_filter = ("code", "decision", "target", "exposure")
    list_select_related = ("session", "generation")
