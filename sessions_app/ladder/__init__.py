"""The visible retry ladder's durable state: retry loops, their one notice per session, and a
record of every provider call. The writes live with the other services
(``sessions_app.services.ladder``, ``.loops``, ``.notices``).

A retry outlives the worker that saw the failure, so everything here is persisted: the wait is a
scheduled Celery task plus a persisted ``next_attempt_at``, never a sleep. The Django app keeps its
``ladder`` label (and so its tables and migration history) from when it lived in the library.
"""
