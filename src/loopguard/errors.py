"""Exceptions raised by loopguard."""

from __future__ import annotations

import dataclasses
import errno
import os
from typing import Any

__all__ = ["ConfigError", "InputError", "os_error_reason", "reduce_cancelled", "reduce_error"]


def os_error_reason(path: str, exc: OSError) -> str:
    """Why ``path`` cannot be read, in words, from what ``os.stat`` or ``os.scandir`` raised.

    ``ELOOP`` is ``"a symbolic link loop (too many levels of symbolic links)"``, ``ENOENT``
    on a link ``"a broken symbolic link"`` (else ``"no such file or directory"``); any other
    error is the system's own words in lower case (``"permission denied"``).

    Parameters
    ----------
    path : str
        The file or directory.
    exc : OSError
        The error.

    Returns
    -------
    str
        The reason, without the path.
    """
    if exc.errno == errno.ELOOP:
        return "a symbolic link loop (too many levels of symbolic links)"
    if exc.errno == errno.ENOENT:
        return "a broken symbolic link" if os.path.islink(path) else "no such file or directory"
    return (exc.strerror or type(exc).__name__).lower()


def reduce_error(error: BaseException, state: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """``__reduce__`` for an exception whose ``__init__`` does not take its own ``args``.

    Pickle's default for exceptions calls ``type(error)(*error.args)``: for an exception
    built from keyword attributes and a composed message, that fails (a missing argument) or
    garbles (the message passed as the first attribute).  This rebuilds the exception
    without calling ``__init__``: the same class, ``args`` (hence message) and attributes.

    Parameters
    ----------
    error : BaseException
        The exception.
    state : dict | None
        The attributes to restore; default ``error.__dict__``.

    Returns
    -------
    tuple
        ``(callable, arguments)`` as ``__reduce__`` returns it.
    """
    return _restore_error, (type(error), error.args, dict(vars(error) if state is None else state))


def reduce_cancelled(error: BaseException) -> tuple[Any, ...]:
    """How :class:`loopguard.LoopGuardCancelled` pickles and copies (its ``__reduce__``).

    The message and the outcome are kept, but not the argument text of the outcome's tool
    calls (arguments carry secrets): each ``StreamToolCall.arguments`` is ``""`` after
    unpickling (or copying).

    Parameters
    ----------
    error : LoopGuardCancelled
        The exception (its ``outcome`` a ``StreamOutcome``).

    Returns
    -------
    tuple
        ``(callable, arguments)`` as ``__reduce__`` returns it.
    """
    state = dict(vars(error))
    outcome = state.get("outcome")
    if dataclasses.is_dataclass(outcome) and not isinstance(outcome, type):
        calls = tuple(dataclasses.replace(call, arguments="") for call in getattr(outcome, "tool_calls", ()))
        state["outcome"] = dataclasses.replace(outcome, tool_calls=calls)
    return reduce_error(error, state)


def _restore_error(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigError(ValueError):
    """An invalid configuration value, raised at construction (spec §7).

    Attributes
    ----------
    key : str
        The configuration key, e.g. ``"window"``.
    value : Any
        The rejected value.
    rule : str
        What the key accepts, e.g. ``"an integer >= 1"``.
    """

    def __init__(self, key: str, value: Any, rule: str, *, owner: str = "TextConfig") -> None:
        self.key = key
        self.value = value
        self.rule = rule
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(f"{owner}: {key}={shown} is invalid: must be {rule}")

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_error(self)


class InputError(ValueError):
    """Input that cannot be read (bad log file, bad line), naming where it was.

    Attributes
    ----------
    path : str | None
        The file, when known.
    line : int | None
        The 1-based line number, when known.
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(f"{where}{message}")

    def __reduce__(self) -> tuple[Any, ...]:
        return reduce_error(self)
