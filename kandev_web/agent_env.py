"""What of the worker's environment an ACP agent process inherits, read by settings.py: the
locale, the import path (the mock agent is a module of this project) and the mock agent's
counters; never the database or Redis URL, the Django secret or other keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

ACP_INHERITABLE = (
    "LANG",
    "LC_ALL",
    "PYTHONPATH",
    "KANDEV_MOCK_ACP_STATE",
    "KANDEV_MOCK_ACP_RECORD",
)


def acp_inherited_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The inheritable variables that ``environ`` sets (an empty one counts as unset)."""
    return {name: environ[name] for name in ACP_INHERITABLE if environ.get(name)}


def agent_path_default(node: str) -> str:
    """The PATH an agent CLI runs with unless KANDEV_AGENT_PATH says otherwise: the directory of
    the Node.js that runs it, then the system's own, once each."""
    dirs = (os.path.dirname(node), "/usr/local/bin", "/usr/bin", "/bin")
    return os.pathsep.join(dict.fromkeys(dirs))
