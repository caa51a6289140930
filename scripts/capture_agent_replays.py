"""Record replay fixtures live from the real agent CLIs against the mock provider.

    make install && .venv/bin/python scripts/capture_agent_replays.py [--agent claude] [--case cut]

Each agent kind is launched exactly as the worker launches it (sessions_app.agent.registry: a
private home, the target's key and base URL only, its own retries off) against an in-process mock
provider on 127.0.0.1, once per case; every frame the agent sends after ``session/prompt`` is
kept, identities, URLs and host paths are replaced by placeholders, and the result is written to
recovery/providers/acp/recorded/{agent}-{case}.json with what the adapter made of it. A case whose
outcome differs from the code written below is refused, not written: look before you re-record.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kandev_web.settings")
os.environ.setdefault("DATABASE_URL", "postgresql://unused@127.0.0.1:1/unused")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:1/0")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from recovery.mock.testing import running_mock_server  # noqa: E402
from recovery.providers.acp import AcpPromptRun, AcpPromptSpec, Correlation  # noqa: E402
from recovery.providers.acp.recorded import RECORDED_DIR  # noqa: E402
from recovery.providers.acp.replay_fixtures.consume import event_token, outcome_token  # noqa: E402
from recovery.providers.acp.replay_fixtures.forbidden import forbidden_shapes_in  # noqa: E402
from sessions_app.agent.registry import AGENTS, LaunchRequest  # noqa: E402

URL_SUFFIX = {"claude": "", "codex": "/v1", "gemini": ""}
# case -> (mock scenario, the classification the adapter must reach, whether it may be retried)
CASES = {
    "overloaded": ("overloaded:9", "provider_overloaded", True),
    "rate-limited": ("rate-limited:9:3", "rate_limited", True),
    "after-text": ("overloaded-after-text:9", None, False),
    "cut": ("cut:9", "truncated_stream", False),
    "cut-before-output": ("cut-before-output:9", "truncated_stream", True),
}
# What each agent makes of some cases, where it differs from the plain expectation above.
AGENT_CASE_CODES = {
    ("claude", "after-text"): "provider_overloaded",
    ("codex", "after-text"): "provider_overloaded",
    ("gemini", "after-text"): "truncated_stream",  # end_turn with no finished model call
}
_URL = re.compile(r"https?://[^\s\"',)]+")
# Host paths an agent mentions (its slash commands' help says "~/Desktop"; tools name files).
_HOST_PATH = re.compile(
    r"(?<![\w.:/~])(?:~|/(?:home|Users|root|var|etc|tmp|opt|srv|mnt|usr))/[\w.@+\-/]*"
)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)


def _sanitise(value, *, replacements: dict[str, str]):
    if isinstance(value, str):
        for raw, placeholder in replacements.items():
            value = value.replace(raw, placeholder)
        value = _URL.sub("<url>", value)
        value = _HOST_PATH.sub("<path>", value)
        return _UUID.sub("<uuid>", value)
    if isinstance(value, dict):
        return {key: _sanitise(item, replacements=replacements) for key, item in value.items()}
    if isinstance(value, list):
        return [_sanitise(item, replacements=replacements) for item in value]
    return value


async def _capture(kind: str, case: str, *, mock_url: str, work: Path) -> dict:
    scenario, _, _ = CASES[case]
    conversation = f"capture-{kind}-{case}-{uuid.uuid4().hex[:8]}"
    home, cwd = work / f"{kind}-{case}-home", work / f"{kind}-{case}-work"
    cwd.mkdir(parents=True)
    launch = AGENTS[kind].launch(
        LaunchRequest(
            home=home,
            key="mock-key-not-secret",
            base_url=f"{mock_url}/conversations/{conversation}{URL_SUFFIX[kind]}",
            model=AGENTS[kind].default_model,
        )
    )
    for path, text in launch.files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    Path(launch.env["TMPDIR"]).mkdir(parents=True, exist_ok=True)
    session_id = f"replay-recorded-{kind}-{case}"
    correlation = Correlation(session_id=session_id, execution_id="exec-recorded", generation=1)
    tokens: list[str] = []
    run = AcpPromptRun(
        spec=AcpPromptSpec(
            command=launch.command,
            cwd=str(cwd),
            prompt=f"[[mock:{scenario}]] say hello",
            correlation=correlation,
            env=launch.env,
            prompt_timeout_s=180,
        ),
        on_event=lambda event: tokens.append(event_token(event)),
    )
    frames: list[dict] = []
    observe = run._observe

    def record(message) -> None:
        raw = message.message
        if message.direction.value == "incoming" and run._prompting:
            frames.append(raw)
        observe(message)

    run._observe = record
    outcome = await run.execute()
    agent_session = run._acp_session_id or ""
    replacements = {agent_session: session_id, str(home): "<home>", str(cwd): "<cwd>"}
    recorded = _sanitise(frames, replacements=replacements)
    return {
        "gateway": kind,
        "case": case,
        "agent": run._provider_id or kind,
        "classifying": True,
        "capture": {
            "mode": "recorded",
            "note": (
                f"{AGENTS[kind].label} as the agent registry launches it, against the mock "
                f"provider's [[mock:{scenario}]] scenario; recorded by "
                "scripts/capture_agent_replays.py."
            ),
        },
        "session_id": session_id,
        "execution_id": correlation.execution_id,
        "generation": correlation.generation,
        "delivery": "paced",
        "frames": recorded,
        "expect": {
            # Model announcements come with session/new, which the replay agent does not send.
            "events": [t for t in tokens if t != "model"] + [outcome_token(outcome)],
            "diagnostic_code": str(outcome.classification.code)
            if hasattr(outcome, "classification")
            else None,
            "recorded_diagnostic_code": None
            if getattr(outcome, "attempt", None) is None or outcome.attempt.diagnostic is None
            else str(outcome.attempt.diagnostic.code),
            "disposition": {
                "retry_allowed": bool(
                    getattr(outcome, "replay", None) and outcome.replay.retry_allowed
                ),
                "reason": str(outcome.replay.reason) if hasattr(outcome, "replay") else "",
            },
        },
    }


def _check(kind: str, case: str, fixture: dict) -> list[str]:
    _, code, retry = CASES[case]
    code = AGENT_CASE_CODES.get((kind, case), code)
    expect = fixture["expect"]
    problems = []
    if expect["diagnostic_code"] != code:
        problems.append(f"classified {expect['diagnostic_code']}, expected {code}")
    if expect["disposition"]["retry_allowed"] is not retry:
        problems.append(f"retry_allowed {expect['disposition']['retry_allowed']}, expected {retry}")
    if not fixture["frames"] or "id" not in fixture["frames"][-1]:
        problems.append("no prompt response recorded")
    found = forbidden_shapes_in({k: v for k, v in fixture.items() if k != "capture"})
    if found:
        problems.append(f"forbidden shapes left after sanitising: {found}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", choices=sorted(URL_SUFFIX), action="append")
    parser.add_argument("--case", choices=sorted(CASES), action="append")
    options = parser.parse_args()
    failed = 0
    with running_mock_server() as mock_url, tempfile.TemporaryDirectory() as scratch:
        settings.KANDEV_ACP_INHERITED_ENV = {}
        for kind in options.agent or sorted(URL_SUFFIX):
            for case in options.case or list(CASES):
                fixture = asyncio.run(_capture(kind, case, mock_url=mock_url, work=Path(scratch)))
                problems = _check(kind, case, fixture)
                target = RECORDED_DIR / f"{kind}-{case}.json"
                if problems:
                    failed += 1
                    refused = Path(scratch).parent / f"refused-{target.name}"
                    refused.write_text(json.dumps(fixture, indent=2, ensure_ascii=False))
                    print(f"REFUSED {target.name}: {'; '.join(problems)} (see {refused})")
                    continue
                target.write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n")
                print(f"wrote {target.relative_to(ROOT)}: {' '.join(fixture['expect']['events'])}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
