"""Small helpers shared by the readers."""

from __future__ import annotations

from typing import Any

from ..errors import InputError

__all__ = ["parts_text", "reasoning_parts", "record_where", "require_str"]

_TEXT_PART_TYPES = frozenset({None, "text", "output_text", "input_text"})
_REASONING_PART_TYPES = frozenset({"reasoning", "thinking", "reasoning_text", "summary_text"})


def parts_text(value: Any, *, what: str, path: str, line: int | None, reasoning: bool = False) -> str:
    """The text of a message field: a string, or the concatenated ``text`` of a list of parts.

    Parameters
    ----------
    value : Any
        ``None``, a string, a list of parts (``{"type": "text", "text": ...}``;
        with ``reasoning=True`` also ``reasoning``/``thinking`` parts and their
        ``thinking`` key), or an object with ``text``/``content``.
    what : str
        The field, named in errors.
    path, line
        Named in errors.
    reasoning : bool
        Whether the field is a reasoning field (which part types count).

    Returns
    -------
    str
        The parts' texts joined with nothing in between (as a stream would
        deliver them); ``""`` for ``None``.

    Raises
    ------
    InputError
        for a value of another type.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("text", "content", "thinking"):
            if key in value:
                return parts_text(value[key], what=what, path=path, line=line, reasoning=reasoning)
        return ""
    if isinstance(value, list):
        wanted = _REASONING_PART_TYPES | {None, "text"} if reasoning else _TEXT_PART_TYPES
        out = []
        for part in value:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and part.get("type") in wanted:
                piece = part.get("text", part.get("thinking"))
                if isinstance(piece, str):
                    out.append(piece)
        return "".join(out)
    raise InputError(f"{what} must be a string or a list of parts, not {type(value).__name__}", path=path, line=line)


def reasoning_parts(value: Any, *, path: str, line: int | None) -> str:
    """The reasoning/thinking parts of a ``content`` list (``""`` for anything else)."""
    if not isinstance(value, list):
        return ""
    out = []
    for part in value:
        if isinstance(part, dict) and part.get("type") in _REASONING_PART_TYPES:
            piece = part.get("thinking", part.get("text"))
            if isinstance(piece, str):
                out.append(piece)
    return "".join(out)


def require_str(value: Any, *, what: str, path: str, line: int | None, nonempty: bool = False) -> str:
    """``value`` when it is a string (``nonempty``: and not ``""``, as a tool name).

    Raises
    ------
    InputError
        naming ``what``, the file and line, otherwise.
    """
    if not isinstance(value, str):
        raise InputError(f"{what} must be a string, not {type(value).__name__}", path=path, line=line)
    if nonempty and not value:
        raise InputError(f"{what} must be a non-empty string", path=path, line=line)
    return value


def record_where(line: int | None, record: dict[str, Any]) -> dict[str, Any]:
    """Where a record of a one-conversation-per-line file sits: ``{"line": n, "id": ...}``
    (``line`` when known, ``id`` only when the record has one)."""
    where: dict[str, Any] = {} if line is None else {"line": line}
    if "id" in record:
        where["id"] = record["id"]
    return where
