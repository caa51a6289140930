"""Real agent turns in bound tasks: the ACP app tests' fixtures (a mock ACP target, the agent's
state directory, the injected clock, a quiet queue), shared here rather than copied."""

from tests.integration.acp_app.conftest import (  # noqa: F401 (fixtures)
    _quiet_queue,
    acp_target,
    agent_state,
    clock,
)
