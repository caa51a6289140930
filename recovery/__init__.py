"""Provider-neutral recovery engine.

Plain Python: nothing here imports Django except ``recovery/django/``.
"""
