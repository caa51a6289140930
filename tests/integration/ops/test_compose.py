"""docker-compose.yml and the Dockerfile run the processes of devtools/processes.py, flag for flag,
so a container never runs a worker that `make run` would not."""

from __future__ import annotations

import json
import shutil
import subprocess
from urllib.parse import urlparse

import pytest
import yaml

from devtools import processes
from devtools.processes import ROOT

COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
# Inside the containers every process binds all interfaces on its usual port, and `python` is the
# image's virtualenv (first on PATH).
CONTAINER_SPECS = processes.app_processes(
    web_host="0.0.0.0",
    web_port=8000,
    mock_host="0.0.0.0",
    mock_port=8765,
    worker_concurrency=2,
    beat_schedule="/tmp/celerybeat-schedule",
    python="python",
)
ONE_SHOTS = {"migrate"}


def compose_services() -> dict[str, dict]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


@pytest.mark.parametrize("spec", CONTAINER_SPECS, ids=lambda spec: spec.name)
def test_each_app_service_runs_its_process_spec(spec):
    assert compose_services()[spec.name]["command"] == list(spec.argv)


def test_the_app_image_runs_no_long_running_process_without_a_spec():
    from_app_image = {
        name for name, service in compose_services().items() if service.get("image") == "kandev-web"
    }
    assert from_app_image - ONE_SHOTS == {spec.name for spec in CONTAINER_SPECS}


def test_the_image_runs_the_web_spec_by_default():
    (cmd,) = [line for line in DOCKERFILE.read_text().splitlines() if line.startswith("CMD ")]
    web = next(spec for spec in CONTAINER_SPECS if spec.name == "web")
    assert json.loads(cmd.removeprefix("CMD ")) == list(web.argv)


def test_the_mock_is_checked_and_reached_where_its_spec_listens():
    services = compose_services()
    mock = next(spec for spec in CONTAINER_SPECS if spec.name == "mock")
    assert mock.ready_url in " ".join(services["mock"]["healthcheck"]["test"])
    reached = urlparse(services["web"]["environment"]["KANDEV_MOCK_PROVIDER_URL"])
    assert (reached.hostname, reached.port) == ("mock", urlparse(mock.ready_url).port)


@pytest.mark.skipif(shutil.which("docker-compose") is None, reason="docker-compose not installed")
def test_docker_compose_accepts_the_file():
    result = subprocess.run(
        ["docker-compose", "--file", str(COMPOSE), "config", "--quiet"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def test_the_containers_have_no_default_secret_key():
    # `${SECRET_KEY:?...}`: compose refuses to start without one; a written-in default would be
    # a key anyone with the source knows.
    secret = compose_services()["web"]["environment"]["SECRET_KEY"]
    assert secret.startswith("${SECRET_KEY:?")
