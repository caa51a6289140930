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
"""

from __future__ import annotations

import sys


def close_failed_sockets_with_a_code() -> None:
    daphne_server = sys.modules.get("daphne.server")
    if daphne_server is None:
        return
    base = daphne_server.WebSocketFactory
    if getattr(base, "fails_with_a_close_code", False):
        return

    class WebSocketFactory(base):
        fails_with_a_close_code = True

        def resetProtocolOptions(self) -> None:
            super().resetProtocolOptions()
            self.failByDrop = False

    daphne_server.WebSocketFactory = WebSocketFactory
