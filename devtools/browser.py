"""The browser that browser tests, the screenshots and the browser benchmark drive: Debian's
Chromium through Playwright, with what it would otherwise fetch or sync in the background off."""

from __future__ import annotations

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
