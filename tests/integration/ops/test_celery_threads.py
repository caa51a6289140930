"""The worker runs turns on a threads pool: what Celery keeps per thread must not cost each new
thread's first turn."""

from __future__ import annotations

import threading

from kandev_web.celery import app


def test_every_thread_shares_the_one_result_backend():
    """No results are stored, so the disabled backend is shared. Celery otherwise builds one per
    thread, and each build scans the installed packages' entry points (~9 ms of CPU): paid by
    every turn that started on a fresh thread of the pool."""
    main = app.backend
    seen = []
    thread = threading.Thread(target=lambda: seen.append(app.backend))
    thread.start()
    thread.join()
    assert seen == [main]
