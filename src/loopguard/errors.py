"""Exceptions raised by loopguard."""

from __future__ import annotations

from typing import Any

__all__ = ["ConfigError", "InputError"]


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
