"""What the rules read of names and arguments: tool-name words and families, path-like
argument values, argument and failure words, scope fields (never stored: compared, then dropped)."""

from __future__ import annotations

import fnmatch
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["arg_words", "family", "has_scope", "matches", "name_words", "path_values", "tool_words", "words"]

_WORD_SPLIT = re.compile(r"[_\-\s.:/]+|(?<=[a-z0-9])(?=[A-Z])")
_PATH_KEY = re.compile(r"(?i)(path|file|dir|folder|url|uri|cwd|target)")
_PATH_TOKEN = re.compile(
    r"""(?:[A-Za-z][A-Za-z0-9+.-]*://[^\s'"`]+|[^\s'"`=:,;()<>|&]*[/\\][^\s'"`,;()<>|&]*|[^\s'"`=:,;()<>|&/\\]+\.[A-Za-z0-9]{1,8})"""
)


def path_values(args: Any) -> frozenset[str]:
    """Path-like values of a call's arguments: values of keys named like paths,
    files, dirs or URLs, and path/URL/file-name tokens inside any string."""
    out: set[str] = set()

    def walk(value: Any, key: str, depth: int) -> None:
        if depth > 20 or len(out) > 256:
            return
        if isinstance(value, str):
            if _PATH_KEY.search(key) and value.strip():
                out.add(norm_path(value.strip()))
            for token in _PATH_TOKEN.findall(value[:4096]):
                token = token.rstrip(".")
                if len(token) > 2:
                    out.add(norm_path(token))
        elif isinstance(value, Mapping):
            for k, v in value.items():
                walk(v, str(k), depth + 1)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, key, depth + 1)

    walk(args, "", 0)
    return frozenset(out)


_WORD = re.compile(r"[^\W_]{3,}")


def words(text: str) -> frozenset[str]:
    """The words (3+ letters or digits, lower-cased) of a failure message."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def arg_words(args: Any) -> frozenset[str]:
    """The words of a call's argument values (read, never stored: ``error_avoidance`` compares them with the
    failure message's words)."""
    if isinstance(args, Mapping) and all(isinstance(v, str) for v in args.values()):  # the common shape
        return frozenset(w.lower() for w in _WORD.findall(" ".join(v[:2048] for v in args.values()))) - _COMMON_WORDS
    out: set[str] = set()
    stack: list[tuple[Any, int]] = [(args, 0)]
    while stack and len(out) < 256:
        value, depth = stack.pop()
        if isinstance(value, str):
            out.update(w.lower() for w in _WORD.findall(value[:2048]))
        elif isinstance(value, float) or (
            isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 256
        ):  # (no 4,300-digit text)
            out.update(_WORD.findall(repr(value)))
        elif depth < 20 and isinstance(value, Mapping):
            stack.extend((v, depth + 1) for v in value.values())
        elif depth < 20 and isinstance(value, (list, tuple)):
            stack.extend((v, depth + 1) for v in value)
    return frozenset(out - _COMMON_WORDS)


#: Words too common in failure messages to tie a call to one.
_COMMON_WORDS = frozenset(
    {
        "error",
        "the",
        "and",
        "not",
        "found",
        "failed",
        "for",
        "with",
        "true",
        "false",
        "none",
        "null",
        "file",
        "line",
        "name",
        "value",
        "type",
        "must",
        "cannot",
        "invalid",
    }
)


def name_words(tool: str) -> list[str]:
    """A tool's name as lower-case words (``_``, ``-``, ``.``, spaces and camelCase split)."""
    return [w.lower() for w in _WORD_SPLIT.split(tool) if w]


def tool_words(tool: str) -> str:
    """A tool's name as lower-case words joined by ``_``, ending with ``_``."""
    return "".join(w + "_" for w in name_words(tool))


def family(tool: str) -> str:
    """A tool's name family: its words but the last (``tool_words`` form), when at least two
    remain (``find_user_id_by_email`` → ``find_user_id_by_``: ``find_user_id_by_name_zip``,
    whose words start so, is another way to the same thing); ``""`` otherwise."""
    words = name_words(tool)
    return "".join(w + "_" for w in words[:-1]) if len(words) >= 3 else ""


def norm_path(value: str) -> str:
    """``./a.py`` → ``a.py``, ``src//x/`` → ``src/x``; URLs as they are."""
    if "://" in value:
        return value.rstrip("/")
    return posixpath.normpath(value.replace("\\", "/"))


def matches(tool: str, globs: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(tool, g) for g in globs)


def has_scope(args: Any, scope_fields: Sequence[str]) -> bool:
    if not isinstance(args, Mapping):
        return False
    for name in scope_fields:
        value = args.get(name)
        if value is None or value == "" or value == [] or value == {}:
            continue
        return True
    return False
