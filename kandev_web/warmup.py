"""Start-up warm-up, so the first prompt after start-up starts as fast as later ones.

Measured on `make run`: the first prompt waited seconds before its provider call, later ones well
under a second. The cost was all first-use work in long-running processes: Daphne's first
``send_task`` imports kombu's Redis transport (redis.asyncio and friends) and connects to the
broker (made worse where PYTHONDONTWRITEBYTECODE left no .pyc files: `make install` now compiles
them). Daphne now pays for it while starting, before it reports ready. Best effort: a broker that
is down at start-up is logged and left to the usual reconnects, never a reason not to start.
(A worker's pool process needs nothing: Celery closes the database connection before every task
anyway, and the task modules are imported before the pool forks.)
"""

from __future__ import annotations

import logging

from celery import Celery

logger = logging.getLogger(__name__)

BROKER_CONNECT_TIMEOUT_S = 2.0


def broker_warm_up(app: Celery) -> bool:
    """Load the broker transport and open the producer pool's connection (it stays pooled for the
    first send_task). False, with a warning, when the broker does not answer."""
    try:
        app.backend  # noqa: B018  (resolving it imports the backend module once)
        with app.producer_or_acquire() as producer:
            producer.connection.ensure_connection(
                max_retries=1, interval_start=0, interval_step=0.2, timeout=BROKER_CONNECT_TIMEOUT_S
            )
    except Exception:  # start-up must go on; sends reconnect by themselves
        logger.warning("broker warm-up failed; the first prompt will connect", exc_info=True)
        return False
    return True
