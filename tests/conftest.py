"""Shared test set-up. Tests run against the real PostgreSQL and Redis named by DATABASE_URL and
REDIS_URL (make test starts embedded ones when neither is set)."""
