"""`python -m recovery.mock --port N`: run the mock provider server in the foreground."""

from __future__ import annotations

import argparse

from aiohttp import web

from recovery.mock.server import build_app


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m recovery.mock", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args()
    web.run_app(build_app(), host=options.host, port=options.port, print=None)


if __name__ == "__main__":
    main()
