"""Log readers: turn agent logs of many formats into one session representation.

:func:`read_log` opens a file (gzip or zstd compressed or not, told by magic
bytes), tells its format from the content (:func:`~loopguard.logs.sniff.sniff`)
and hands it to that format's reader, which returns
:class:`~loopguard.logs.session.Conversation` objects.  Formats:

* ``plain`` -- plain text / Markdown: one text channel (:mod:`.plain`);
* ``chat`` / ``chat-records`` -- OpenAI-style messages, one per line or
  ``messages: [...]`` per line (:mod:`.chat`);
* ``claude-code`` -- Claude Code stream-json (:mod:`.claude_code`);
* ``swe-agent`` -- SWE-agent ``.traj`` (:mod:`.swe_agent`);
* ``tool-calls`` -- ``[{"tool", "args", "result", "error"?}]`` (:mod:`.toolseq`);
* ``dataset`` -- JSON Lines records with the output in a string field (:mod:`.dataset`);
* ``empty`` -- nothing but whitespace (clean).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError
from .chat import read_chat, read_chat_records
from .claude_code import read_claude_code
from .dataset import read_dataset
from .plain import read_plain
from .session import Conversation, LogFile, Message, ToolCall
from .sniff import DATASET_FIELDS, open_maybe_compressed, read_text, sniff
from .swe_agent import read_swe_agent
from .toolseq import read_tool_calls

__all__ = [
    "DATASET_FIELDS",
    "FORMATS",
    "Conversation",
    "LogFile",
    "Message",
    "ToolCall",
    "expand_paths",
    "open_maybe_compressed",
    "read_log",
    "read_text",
    "sniff",
]

_Reader = Callable[[Any, str, "str | None"], list[Conversation]]

_READERS: dict[str, _Reader] = {
    "empty": lambda payload, path, field: [],
    "plain": lambda payload, path, field: read_plain(payload, path),
    "chat": lambda payload, path, field: read_chat(payload, path),
    "chat-records": lambda payload, path, field: read_chat_records(payload, path),
    "claude-code": lambda payload, path, field: read_claude_code(payload, path),
    "swe-agent": lambda payload, path, field: read_swe_agent(payload, path),
    "tool-calls": lambda payload, path, field: read_tool_calls(payload, path),
    "dataset": lambda payload, path, field: read_dataset(payload, path, field),
}

#: The format names :func:`read_log` can report.
FORMATS = tuple(_READERS)


def read_log(path: str | Path, *, field: str | None = None) -> LogFile:
    """Read one log file of any supported format.

    Parameters
    ----------
    path : str | Path
        The file (maybe ``.gz`` / ``.zst`` compressed).
    field : str | None
        For dataset JSON Lines: the string field holding the model output
        (default: the first of ``text``, ``output``, ``response``,
        ``completion``).  Giving it also makes records holding that field
        count as dataset records even when they look like chat records.

    Returns
    -------
    LogFile
        The format and its conversations.

    Raises
    ------
    InputError
        for an unreadable, corrupt, binary or unrecognised file; the error
        names the file and, when known, the 1-based line.
    """
    name = str(path)
    text = read_text(name)
    kind, payload = sniff(text, name, field=field)
    return LogFile(name, kind, _READERS[kind](payload, name, field))


def expand_paths(paths: Iterable[str | Path]) -> list[tuple[str, InputError | None]]:
    """The files to scan: files as given, directories walked recursively.

    Directory contents are sorted by path (deterministic order); entries
    whose name starts with ``.`` and special files (FIFOs, sockets, devices)
    are skipped inside directories (a dot-file named explicitly is read).
    Symbolic links to directories are not followed.
    Each path appears once, at its first occurrence.

    Parameters
    ----------
    paths : Iterable[str | Path]
        Files and directories.

    Returns
    -------
    list[tuple[str, InputError | None]]
        ``(path, None)`` per file, ``(path, error)`` for a path that does not
        exist or is not a regular file or directory.
    """
    out: list[tuple[str, InputError | None]] = []
    seen: set[str] = set()

    def add(item: str, error: InputError | None = None) -> None:
        if item not in seen:
            seen.add(item)
            out.append((item, error))

    for raw in paths:
        path = str(raw)
        if os.path.isdir(path):
            for found in _walk(path):
                add(found)
        elif os.path.isfile(path):
            add(path)
        elif os.path.exists(path):
            add(path, InputError("not a regular file or directory", path=path))
        else:
            add(path, InputError("no such file or directory", path=path))
    return out


def _walk(root: str) -> list[str]:
    found = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        paths = (os.path.join(directory, f) for f in filenames if not f.startswith("."))
        found += [p for p in paths if os.path.isfile(p)]  # no FIFOs, sockets or devices
    return sorted(found, key=lambda p: Path(p).relative_to(root).parts)
