"""Approvals by a person: an ACP agent's permission request as a durable pending row, shown to
every viewer as a card; the first answer wins (models, services, the worker's asker, admin)."""
