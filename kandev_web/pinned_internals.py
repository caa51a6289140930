"""Guards for the patches of third-party internals (Daphne's websocket factory, channels_redis'
private methods, the static handler's ``serve``).

Such a patch was written against one release's source; a release that renames or changes what
it touches would break it without any error, and the first sign would be a websocket dropped
without a close code or a message lost in a group send. Each patch module therefore names the
exact versions it was read against and the private names it uses, and checks both when it is
loaded or applied: any other version, or a missing name, is refused with an error that says
what to do, before the process serves anything.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Iterable, Mapping

# Distribution name -> its installed version (importlib.metadata.version); tests inject one.
Version = Callable[[str], str]


class UnpatchableDependency(RuntimeError):
    """A patched library is not the one the patch was written for."""


def written_for_check(
    *, patch: str, written_for: Mapping[str, str], version: Version = importlib.metadata.version
) -> None:
    """Refuse unless every distribution in ``written_for`` is installed at exactly that version."""
    installed = {name: version(name) for name in written_for}
    wrong = {name: found for name, found in installed.items() if found != written_for[name]}
    if wrong:
        found = ", ".join(f"{name} {version}" for name, version in sorted(wrong.items()))
        expected = ", ".join(f"{name} {written_for[name]}" for name in sorted(wrong))
        raise UnpatchableDependency(
            f"{patch} was written for {expected}, but {found} is installed: read the patched "
            f"internals in the new release, adapt the patch, then record the version it was "
            f"written for"
        )


def names_check(*, patch: str, owner: object, names: Iterable[str], where: str = "") -> None:
    """Refuse unless ``owner`` (a class, a module, an instance; or a mapping, such as a signature's
    parameters, by its keys) still has every one of ``names``."""
    if isinstance(owner, Mapping):
        missing = [name for name in names if name not in owner]
    else:
        missing = [name for name in names if not hasattr(owner, name)]
    if missing:
        named = where or getattr(owner, "__qualname__", None) or getattr(owner, "__name__", None)
        where = str(named or type(owner).__qualname__)
        raise UnpatchableDependency(
            f"{patch} relies on {', '.join(missing)} of {where}, which the installed release "
            f"no longer has"
        )
