"""Page routes (the JSON API and /healthz are mounted by kandev_web.urls)."""

from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import path
from django.utils.functional import lazy
from django.views.generic import RedirectView

from sessions_app import session_views, views

urlpatterns = [
    path("", views.board, name="board"),
    path("sessions/new/", views.session_new, name="session_new"),
    path("tasks/<int:task_id>/", views.task_detail, name="task_detail"),
    path("tasks/<int:task_id>/rename/", views.task_rename_view, name="task_rename"),
    path("tasks/<int:task_id>/review/", views.task_review_view, name="task_review"),
    path("tasks/<int:task_id>/patch/", views.task_patch_view, name="task_patch"),
    path("tasks/<int:task_id>/status/", views.task_status_view, name="task_status"),
    path("tasks/<int:task_id>/archive/", views.task_archive_view, name="task_archive"),
    path("tasks/<int:task_id>/unarchive/", views.task_unarchive_view, name="task_unarchive"),
    path("sessions/<int:session_id>/", session_views.session_detail, name="session_detail"),
    path("sessions/<int:session_id>/prompts/", session_views.session_prompt, name="session_prompt"),
    path("sessions/<int:session_id>/stop/", session_views.session_stop_view, name="session_stop"),
    path(
        "sessions/<int:session_id>/cancel-retry/",
        session_views.session_cancel_retry,
        name="session_cancel_retry",
    ),
    path(
        "sessions/<int:session_id>/recover/",
        session_views.session_recover_view,
        name="session_recover",
    ),
    path(
        "sessions/<int:session_id>/recover/fresh/",
        session_views.session_fresh_confirm,
        name="session_fresh_confirm",
    ),
    path(
        "sessions/<int:session_id>/regenerate/",
        session_views.session_regenerate,
        name="session_regenerate",
    ),
    path(
        "sessions/<int:session_id>/approvals/decide/",
        session_views.session_approval_decide,
        name="session_approval_decide",
    ),
    path("sessions/<int:session_id>/edit/", session_views.session_edit, name="session_edit"),
    path(
        "sessions/<int:session_id>/version/",
        session_views.session_version,
        name="session_version",
    ),
    path(
        "sessions/<int:session_id>/switch-target/",
        session_views.session_switch_target,
        name="session_switch_target",
    ),
    # Browsers ask for /favicon.ico whatever the page links; send them to the one icon, under its
    # hashed name (read from the manifest when asked, not at import), and not permanently: the
    # next deploy's icon has another name.
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"))),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
