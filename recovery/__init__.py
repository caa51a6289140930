"""Provider-neutral recovery engine.

Plain Python: nothing here imports Django or the app; the ladder's durable state lives in
``sessions_app.ladder``.
"""
