"""Run the real mock ACP agent (and the replay fake agent) as subprocesses of the adapter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from recovery.providers.acp import AcpPromptSpec, Correlation, PermissionPolicy

REPO = Path(__file__).resolve().parents[3]
CURRENT = Correlation(session_id="session-7", execution_id="exec-7", generation=3)


class MockAgent:
    def __init__(self, tmp_path: Path) -> None:
        self.state = tmp_path / "mock-state.json"
        self.record = tmp_path / "prompts.jsonl"
        self.cwd = tmp_path

    def spec(
        self,
        prompt: str,
        *args: str,
        policy: PermissionPolicy = PermissionPolicy.ALLOW_READ_ONLY,
        **kwargs,
    ) -> AcpPromptSpec:
        return AcpPromptSpec(
            command=(sys.executable, "-m", "recovery.mock.acp_agent", *args),
            cwd=str(self.cwd),
            prompt=prompt,
            correlation=CURRENT,
            env={
                "PYTHONPATH": str(REPO),
                "KANDEV_MOCK_ACP_STATE": str(self.state),
                "KANDEV_MOCK_ACP_RECORD": str(self.record),
            },
            permission_policy=policy,
            **kwargs,
        )


@pytest.fixture
def mock_agent(tmp_path) -> MockAgent:
    return MockAgent(tmp_path)
