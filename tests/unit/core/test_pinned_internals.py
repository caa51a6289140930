"""The patches of third-party internals refuse a release they were not written for."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
import types
from pathlib import Path

import pytest
from channels_redis.core import RedisChannelLayer as ChannelsRedisLayer
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler

from kandev_web import channel_layer, daphne_websocket_close_codes, static_files
from kandev_web.channel_layer import channels_redis_check
from kandev_web.daphne_websocket_close_codes import close_failed_sockets_with_a_code
from kandev_web.pinned_internals import UnpatchableDependency

ROOT = Path(__file__).resolve().parents[3]


def installed_but(name: str, version: str):
    """importlib.metadata.version, except that ``name`` is installed at ``version``."""
    return lambda dist: version if dist == name else importlib.metadata.version(dist)


def pinned_versions() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pins = (line.split("==") for line in project["dependencies"] if "==" in line)
    return {name.strip().lower().replace("_", "-"): version.strip() for name, version in pins}


def test_the_patches_were_written_for_the_installed_releases():
    # Fails as soon as a lock update brings another release in: read its internals again.
    for written_for in (daphne_websocket_close_codes.WRITTEN_FOR, channel_layer.WRITTEN_FOR):
        for name, version in written_for.items():
            assert importlib.metadata.version(name) == version, name


def test_the_patches_were_written_for_the_releases_pyproject_pins():
    pins = pinned_versions()
    assert pins["daphne"] == daphne_websocket_close_codes.WRITTEN_FOR["daphne"]
    assert pins["channels-redis"] == channel_layer.WRITTEN_FOR["channels-redis"]


@pytest.mark.parametrize(("name", "version"), [("daphne", "4.2.4"), ("autobahn", "25.1.1")])
def test_the_daphne_patch_refuses_a_release_it_was_not_written_for(name, version):
    with pytest.raises(UnpatchableDependency, match=re.escape(f"{name} {version} is installed")):
        close_failed_sockets_with_a_code(version=installed_but(name, version), modules={})


def test_the_daphne_patch_refuses_a_server_without_the_factory_it_replaces():
    renamed = types.ModuleType("daphne.server")
    with pytest.raises(UnpatchableDependency, match="relies on WebSocketFactory"):
        close_failed_sockets_with_a_code(modules={"daphne.server": renamed})


def test_the_daphne_patch_refuses_a_factory_without_the_fail_by_drop_option():
    class Factory:
        def resetProtocolOptions(self) -> None: ...

        def setProtocolOptions(self, *, failByConnectionLoss: bool = True) -> None: ...

    server = types.ModuleType("daphne.server")
    server.WebSocketFactory = Factory
    with pytest.raises(UnpatchableDependency, match="relies on failByDrop"):
        close_failed_sockets_with_a_code(modules={"daphne.server": server})
    assert server.WebSocketFactory is Factory


def test_the_daphne_patch_applies_to_the_real_server():
    # In a process of its own: importing daphne.server installs Twisted's reactor.
    script = (
        "import daphne.server\n"
        "from kandev_web.daphne_websocket_close_codes import close_failed_sockets_with_a_code\n"
        "close_failed_sockets_with_a_code()\n"
        "assert daphne.server.WebSocketFactory.fails_with_a_close_code\n"
    )
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)


def test_the_channel_layer_refuses_a_channels_redis_it_was_not_written_for():
    with pytest.raises(UnpatchableDependency, match=re.escape("channels-redis 4.4.0 is installed")):
        channels_redis_check(version=installed_but("channels-redis", "4.4.0"))


@pytest.mark.parametrize("name", ["_group_key", "_map_channel_keys_to_connection"])
def test_the_channel_layer_refuses_a_release_without_a_private_method_it_calls(name):
    kept = {n: getattr(ChannelsRedisLayer, n) for n in channel_layer.LAYER_METHODS if n != name}
    renamed = type("RedisChannelLayer", (), kept)
    with pytest.raises(UnpatchableDependency, match=f"relies on {name} of RedisChannelLayer"):
        channels_redis_check(layer=renamed)


def test_the_installed_channels_redis_has_every_name_the_layer_relies_on():
    channels_redis_check()
    layer = channel_layer.RedisChannelLayer(hosts=["redis://127.0.0.1:1"])
    assert all(hasattr(layer, name) for name in channel_layer.LAYER_ATTRIBUTES)


@pytest.mark.parametrize("name", static_files.HANDLER_NAMES)
def test_the_static_handler_refuses_a_django_without_a_name_it_overrides(name):
    kept = {n: getattr(ASGIStaticFilesHandler, n) for n in static_files.HANDLER_NAMES if n != name}
    renamed = type("ASGIStaticFilesHandler", (), kept)
    with pytest.raises(UnpatchableDependency, match=f"relies on {name} of ASGIStaticFilesHandler"):
        static_files.handler_check(renamed)


def test_the_installed_django_has_every_name_the_static_handler_relies_on():
    static_files.handler_check()
