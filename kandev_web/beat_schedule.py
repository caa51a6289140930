"""The periodic tasks Celery beat runs, read by settings.py as CELERY_BEAT_SCHEDULE: each entry
says why it exists; the intervals an operator may tune come in as arguments, read from the
environment there.
"""

from __future__ import annotations

from typing import Any


def beat_schedule(
    *, sweep_s: float, prune_s: float, announce_s: float
) -> dict[str, dict[str, Any]]:
    return {
        # A retry whose scheduled task was lost with its worker is re-enqueued; stale notices
        # retired.
        "ladder-sweep": {"task": "ladder.sweep", "schedule": sweep_s},
        # A queued generation whose run was never enqueued (broker hiccup) is enqueued again.
        "requeue-stale-generations": {
            "task": "sessions_app.requeue_stale_generations",
            "schedule": 30.0,
        },
        # A running generation whose worker died mid-run is handed back (Resume / Start fresh).
        "reap-lost-generations": {"task": "sessions_app.reap_lost_generations", "schedule": 30.0},
        "approvals-sweep": {"task": "approvals.sweep", "schedule": 15.0},  # overdue ones rejected
        # Snapshots of settled turns that Start fresh can no longer put back, and their git
        # objects.
        "prune-snapshots": {"task": "effects.prune_snapshots", "schedule": prune_s},
        # Queued sessions are told when their place in line moved ("2 ahead").
        "announce-queue-positions": {
            "task": "sessions_app.announce_queue_positions",
            "schedule": announce_s,
        },
    }
