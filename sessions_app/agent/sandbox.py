"""The agent's world: a bubblewrap sandbox built from nothing, with only what the agent needs.

An agent is untrusted code that a stranger's prompt steers, so it runs confined (bubblewrap from
Debian, ``/usr/bin/bwrap``), in namespaces of its own:

- mount: an empty root into which we bind the system's programs and libraries (``/usr`` and its
  ``/bin``, ``/lib`` links) read-only, the few ``/etc`` files a program needs (TLS roots, the
  dynamic linker's cache, ``/etc/alternatives``) read-only, the agent's runtime (``node_modules``,
  for our mock agent the Python it runs on) read-only at its own path, and exactly two writable
  places: its working directory, seen as ``/workspace``, and its private home, ``/home/agent``.
  In a task bound to a project the working directory is the task's git worktree, and the
  repository's git directory is bound read-only at its own path (the worktree's ``.git`` file
  names it): the agent's git can read (status, diff, log, show, blame) but writes nothing there,
  neither its own index nor any ref, hook, config or object, so it can never move another
  branch, plant a hook or a config the host's git would run, or touch the main checkout (which
  is not bound at all). Its changes stay files in its worktree; the app reviews them;
  ``/etc/passwd``, ``/etc/group`` and ``/etc/hosts`` are written for it and name only itself.
  The state directory, the checkout, other sessions' folders and everything else are absent;
- PID: it sees its own processes only (so no other process's ``/proc``, nor the worker's
  environment); ``/proc`` and ``/dev`` are fresh and minimal, ``/tmp`` is private;
- user: it runs as uid 1000 ("agent") with no capabilities;
- network: nothing but its own loopback. Each endpoint its launcher allows (the provider's host
  and port) is reached through one forwarder (``sandbox_entry.sh`` inside, recovery's
  ``egress.py`` outside), so PostgreSQL, Redis, the broker and the web app on this machine's
  loopback, and every other host, are out of reach;
- it dies with the worker thread that started it, and leads a session of its own.

If the sandbox cannot be set up (bubblewrap missing, user namespaces disabled), no agent starts
(``SandboxUnavailable``); only the operator's explicit ``KANDEV_AGENT_SANDBOX=off`` runs agents
unconfined, and every such launch is logged as a warning.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from django.conf import settings

from recovery.providers.acp.egress import EgressRoute

logger = logging.getLogger(__name__)

SEEN_WORKSPACE = "/workspace"
SEEN_HOME = "/home/agent"
AGENT_UID = 1000
ENTRY = Path(__file__).with_name("sandbox_entry.sh")
_SEEN_ENTRY = "/run/kandev/entry.sh"
_SEEN_SOCKETS = "/run/kandev"
# A port the agent's uid can listen on inside its namespace: privileged ones move up by this.
_PORT_SHIFT = 10000
# Read-only, only when present: what programs read from /etc, and nothing that names this box's
# users, services or secrets.
_ETC_READ_ONLY = (
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/ld.so.cache",
    "/etc/alternatives",
    "/etc/localtime",
    "/etc/nsswitch.conf",
)
_ROOT_LINKS = ("bin", "sbin", "lib", "lib64", "lib32", "libx32")


class SandboxUnavailable(Exception):
    """The agent can't be confined here; ``reason`` says why (for the operator's log)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class SandboxPlan:
    workspace: Path  # on this machine; the agent's only writable place besides its home
    home: Path
    runtime: tuple[Path, ...] = ()  # read-only, at the same path inside
    writable_files: tuple[Path, ...] = ()  # read-write, at the same path inside (must exist)
    endpoints: tuple[Endpoint, ...] = ()
    # A bound task's repository git directory: read-only, at the same path inside.
    git_dir: Path | None = None


@dataclass(frozen=True, slots=True)
class Confined:
    command: tuple[str, ...]
    egress: tuple[EgressRoute, ...]


def endpoint_of(url: str) -> Endpoint | None:
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Endpoint(host=parts.hostname, port=port)


def inside_port(port: int) -> int:
    return port if port >= 1024 else port + _PORT_SHIFT


def url_as_seen(url: str) -> str:
    """The URL the agent must use for ``url`` inside its sandbox: the same, except that a
    privileged port (443 of an https default) is listened on at port + 10000 there."""
    endpoint = endpoint_of(url)
    if endpoint is None or inside_port(endpoint.port) == endpoint.port:
        return url
    parts = urlsplit(url)
    host = f"[{endpoint.host}]" if ":" in endpoint.host else endpoint.host
    netloc = f"{host}:{inside_port(endpoint.port)}"
    if parts.username or parts.password:
        netloc = f"{parts.netloc.rpartition('@')[0]}@{netloc}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _etc_files(endpoints: Sequence[Endpoint]) -> Path:
    """passwd, group and hosts naming only the agent and its endpoints (written once per
    content, shared read-only by every sandbox that needs the same)."""
    names = " ".join(dict.fromkeys(e.host for e in endpoints if not _is_address(e.host)))
    files = {
        "passwd": f"agent:x:{AGENT_UID}:{AGENT_UID}:Kandev agent:{SEEN_HOME}:/bin/sh\n",
        "group": f"agent:x:{AGENT_UID}:\n",
        "hosts": f"127.0.0.1 localhost kandev-agent {names}".rstrip() + "\n",
    }
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    folder = Path(settings.KANDEV_ACP_WORKDIR) / "sandbox-etc" / digest
    if not folder.is_dir():
        staging = folder.with_name(f"{digest}.{secrets.token_hex(4)}")
        staging.mkdir(parents=True, mode=0o755)
        for name, text in files.items():
            (staging / name).write_text(text)
            (staging / name).chmod(0o644)
        try:
            staging.rename(folder)
        except OSError:  # another worker wrote the same files first
            for child in staging.iterdir():
                child.unlink()
            staging.rmdir()
    return folder


def _is_address(host: str) -> bool:
    return host.replace(".", "").isdigit() or ":" in host


def _system_binds() -> list[str]:
    args = ["--ro-bind", "/usr", "/usr"]
    for name in _ROOT_LINKS:
        path = Path("/", name)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--dir", "/etc"]
    for etc_file in _ETC_READ_ONLY:
        args += ["--ro-bind-try", etc_file, etc_file]
    return args


def _namespaces() -> list[str]:
    return [
        "--unshare-user",
        "--uid",
        str(AGENT_UID),
        "--gid",
        str(AGENT_UID),
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-net",
        "--unshare-cgroup-try",
        "--hostname",
        "kandev-agent",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
    ]


def _egress_dir() -> Path:
    path = Path(settings.KANDEV_AGENT_EGRESS_DIR)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def sandbox_command(plan: SandboxPlan, command: Sequence[str]) -> Confined:
    """The bubblewrap command line that runs ``command`` confined as ``plan`` says, and the
    egress sockets the worker must serve while it runs."""
    etc = _etc_files(plan.endpoints)
    args = [settings.KANDEV_AGENT_BWRAP, *_namespaces(), *_system_binds()]
    for name in ("passwd", "group", "hosts"):
        args += ["--ro-bind", str(etc / name), f"/etc/{name}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--dir", "/run"]
    for path in plan.runtime:
        args += ["--ro-bind", str(path), str(path)]
    if plan.git_dir is not None:
        args += ["--ro-bind", str(plan.git_dir), str(plan.git_dir)]
    for path in plan.writable_files:
        args += ["--bind", str(path), str(path)]
    args += ["--bind", str(plan.workspace), SEEN_WORKSPACE, "--bind", str(plan.home), SEEN_HOME]
    args += ["--dir", _SEEN_SOCKETS, "--ro-bind", str(ENTRY), _SEEN_ENTRY]
    routes: list[EgressRoute] = []
    forwards: list[str] = []
    token = secrets.token_hex(6)
    for index, endpoint in enumerate(plan.endpoints):
        host_socket = _egress_dir() / f"{token}-{index}.sock"
        seen_socket = f"{_SEEN_SOCKETS}/egress-{index}.sock"
        routes.append(EgressRoute(str(host_socket), endpoint.host, endpoint.port))
        # The socket exists once the worker listens, which it does before it starts bwrap.
        args += ["--ro-bind", str(host_socket), seen_socket]
        forwards += [str(inside_port(endpoint.port)), seen_socket]
    # The sandbox's own root (where /etc, /home and /run were made) becomes read-only too.
    args += ["--remount-ro", "/", "--chdir", SEEN_WORKSPACE]
    args += ["--", "/bin/sh", _SEEN_ENTRY, *forwards, "--", *command]
    return Confined(command=tuple(args), egress=tuple(routes))


_ready_lock = threading.Lock()
_ready = False


def sandbox_ready() -> None:
    """Raise SandboxUnavailable unless a sandbox like the agents' starts on this machine (checked
    once per process; a failure is checked again next time, so a fixed machine recovers)."""
    global _ready
    with _ready_lock:
        if _ready:
            return
        bwrap = settings.KANDEV_AGENT_BWRAP
        if not Path(bwrap).is_file():
            raise SandboxUnavailable(
                f"bubblewrap is not installed ({bwrap} is missing): apt-get install bubblewrap"
            )
        probe = [bwrap, *_namespaces(), *_system_binds(), "--proc", "/proc", "--dev", "/dev"]
        probe += ["--", "/bin/sh", "-c", "command -v socat >/dev/null"]
        try:
            result = subprocess.run(probe, capture_output=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise SandboxUnavailable(f"bubblewrap could not be run: {error}") from None
        if result.returncode != 0:
            detail = result.stderr.decode(errors="replace").strip() or "socat is not installed"
            raise SandboxUnavailable(f"the agent sandbox does not start here: {detail}")
        _ready = True


def sandbox_enabled() -> bool:
    return settings.KANDEV_AGENT_SANDBOX != "off"
