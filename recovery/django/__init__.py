"""Django glue of the recovery ladder: the durable retry loop, its one notice, attempt records.

The only part of ``recovery/`` that imports Django. Everything here is persisted, because a retry
outlives the worker that saw the failure: the wait is a scheduled Celery task plus a persisted
``next_attempt_at``, never a sleep.
"""
