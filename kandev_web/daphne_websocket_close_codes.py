"""How Daphne's websocket transport fails a connection.

Daphne refuses a client message over its limit (``--websocket_max_message_size``, 1 MiB by
default) through autobahn, whose servers "fail by drop": the TCP connection is cut with no close
frame, so the browser sees 1006 and cannot tell a too-large frame from a network fault. With
failByDrop off, autobahn sends the close code the protocol defines instead (1009, message too big;
1002 for a protocol error) and then closes.

``close_failed_sockets_with_a_code()`` is called by kandev_web/asgi.py, which Daphne imports before
it builds its websocket factory, so every way of starting Daphne on this app gets it. Daphne's
command line has imported ``daphne.server`` by then; in a process Daphne does not serve (tests
through channels' communicator) it is not loaded, and importing it here would install Twisted's
reactor as a side effect, so nothing is patched.

The patch replaces ``daphne.server.WebSocketFactory`` (the name ``Server.run`` builds its factory
from) and relies on autobahn's ``resetProtocolOptions`` and its ``failByDrop`` option. It holds
for the versions in ``WRITTEN_FOR`` only: any other is refused at start-up
(kandev_web/pinned_internals.py), and so is a release without those names.
"""

from __future__ import annotations

import importlib.metadata
import inspect
import sys
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from kandev_web.pinned_internals import Version, names_check, written_for_check

PATCH = "kandev_web/daphne_websocket_close_codes.py"
WRITTEN_FOR = {"daphne": "4.2.3", "autobahn": "26.10.2"}


def close_failed_sockets_with_a_code(
    *,
    version: Version = importlib.metadata.version,
    modules: Mapping[str, ModuleType] = sys.modules,
) -> None:
    """Refuses (UnpatchableDependency) a Daphne or autobahn it was not written for, then patches
    the factory if Daphne's server is loaded."""
    written_for_check(patch=PATCH, written_for=WRITTEN_FOR, version=version)
    # Daphne ships no type hints: its module is patched and its class subclassed as Any.
    daphne_server: Any = modules.get("daphne.server")
    if daphne_server is None:
        return
    names_check(patch=PATCH, owner=daphne_server, names=["WebSocketFactory"])
    base: Any = daphne_server.WebSocketFactory
    if getattr(base, "fails_with_a_close_code", False):
        return
    names_check(patch=PATCH, owner=base, names=["resetProtocolOptions", "setProtocolOptions"])
    names_check(
        patch=PATCH,
        owner=inspect.signature(base.setProtocolOptions).parameters,
        names=["failByDrop"],
        where=f"{base.__qualname__}.setProtocolOptions",
    )

    class WebSocketFactory(base):
        fails_with_a_close_code = True

        def resetProtocolOptions(self) -> None:
            super().resetProtocolOptions()
            self.failByDrop = False

    daphne_server.WebSocketFactory = WebSocketFactory
