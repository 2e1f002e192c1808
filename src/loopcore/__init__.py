"""loopcore: the compiled stream core of loopguard.

One :class:`ChannelStream` holds the detector state of one channel (reasoning or
text) of one model attempt, over Unicode code points.  It knows nothing of
sessions, tools or JSON; :mod:`loopguard` builds the policy on top of it.

Two implementations exist with the same API and the same results:

* ``"cython"`` -- ``loopcore._core``, the compiled extension (the product);
* ``"python"`` -- ``loopcore._reference``, the literal pure-Python reference.

The same holds for the text scans of tool results (:class:`TokenFinder`,
:func:`word_lines`): ``loopcore._scan`` and its reference ``loopcore._scan_reference``.

``LOOPCORE_IMPLEMENTATION`` selects one: ``cython`` (fail if the extension is
missing), ``python`` (use the reference), or unset/``auto`` (the extension,
falling back to the reference with a one-time :class:`RuntimeWarning`).
:data:`IMPLEMENTATION` tells which one is live.
"""

from __future__ import annotations

import os
import warnings
from types import ModuleType

from . import _reference, _scan_reference

__all__ = ["ChannelStream", "IMPLEMENTATION", "KINDS", "TokenFinder", "implementations", "implementation", "word_lines"]

KINDS = _reference.KINDS


def _load_compiled() -> tuple[ModuleType | None, ModuleType | None]:
    try:
        from . import _core
    except ImportError:
        return None, None
    try:
        from . import _scan
    except ImportError:
        return _core, None
    return _core, _scan


_compiled, _compiled_scan = _load_compiled()


def implementations() -> dict[str, ModuleType]:
    """The available implementations by name (``"python"`` always, ``"cython"`` when built)."""
    found: dict[str, ModuleType] = {"python": _reference}
    if _compiled is not None:
        found["cython"] = _compiled
    return found


def implementation(name: str | None = None) -> ModuleType:
    """The module implementing ``name`` (``"cython"``/``"python"``; ``None`` = the live one).

    Raises
    ------
    ValueError
        for an unknown name.
    ImportError
        for ``"cython"`` when the extension is not built.
    """
    if name is None:
        return _live
    if name == "python":
        return _reference
    if name == "cython":
        if _compiled is None:
            raise ImportError(
                "loopcore._core (the compiled core) is not built; reinstall loopguard "
                "with a C compiler available, or use implementation='python'"
            )
        return _compiled
    raise ValueError(f"unknown loopcore implementation {name!r}: expected 'cython' or 'python'")


def _select() -> ModuleType:
    wanted = os.environ.get("LOOPCORE_IMPLEMENTATION", "auto").strip().lower() or "auto"
    if wanted == "auto":
        if _compiled is not None:
            return _compiled
        warnings.warn(
            "loopcore: the compiled core is not built, using the slow pure-Python "
            "reference; reinstall loopguard with a C compiler (or set "
            "LOOPCORE_IMPLEMENTATION=python to silence this)",
            RuntimeWarning,
            stacklevel=3,
        )
        return _reference
    if wanted in ("cython", "python"):
        return implementation(wanted)
    raise ImportError(f"LOOPCORE_IMPLEMENTATION={wanted!r} is not valid: expected 'cython', 'python' or 'auto'")


_live = _select()
IMPLEMENTATION: str = "cython" if _live is _compiled else "python"
ChannelStream = _live.ChannelStream
#: the text scans of the live implementation (the reference when the stream core is the reference)
_scan_live: ModuleType = _compiled_scan if _live is _compiled and _compiled_scan is not None else _scan_reference
TokenFinder = _scan_live.TokenFinder
word_lines = _scan_live.word_lines
