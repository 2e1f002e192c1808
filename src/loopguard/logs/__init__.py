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
* ``tool-call-records`` -- JSON Lines of recorded runs, a ``calls`` list of
  those objects per line (:mod:`.toolseq`);
* ``dataset`` -- JSON Lines records with the output in a string field (:mod:`.dataset`);
* ``empty`` -- nothing but whitespace (clean).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError, os_error_reason
from .chat import read_chat, read_chat_records
from .claude_code import read_claude_code
from .dataset import read_dataset
from .plain import read_plain
from .session import Conversation, LogFile, Message, ToolCall
from .sniff import DATASET_FIELDS, open_maybe_compressed, read_text, sniff
from .swe_agent import read_swe_agent
from .toolseq import read_tool_call_records, read_tool_calls

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
    "read_payload",
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
    "tool-call-records": lambda payload, path, field: read_tool_call_records(payload, path),
    "dataset": lambda payload, path, field: read_dataset(payload, path, field),
}

#: The format names :func:`read_log` can report.
FORMATS = tuple(_READERS)


def read_payload(kind: str, payload: Any, path: str, field: str | None = None) -> list[Conversation]:
    """The conversations of a parsed log: ``kind`` and ``payload`` as
    :func:`~loopguard.logs.sniff.sniff` returns them (``field`` for datasets).

    Raises
    ------
    InputError
        when the format's reader rejects the payload, naming the file and line.
    """
    return _READERS[kind](payload, path, field)


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
    return LogFile(name, kind, read_payload(kind, payload, name, field))


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
        Files and directories; ``"-"`` (standard input) is kept as it is.

    Returns
    -------
    list[tuple[str, InputError | None]]
        ``(path, None)`` per file, ``(path, error)`` for a path that cannot be
        scanned: it does not exist, is not a regular file or directory, is a
        symbolic link loop or a broken link, or is a directory that cannot be
        listed (e.g. permission denied) -- given or met inside a walked directory.
    """
    out: list[tuple[str, InputError | None]] = []
    seen: set[str] = set()

    def add(item: str, error: InputError | None = None) -> None:
        if item not in seen:
            seen.add(item)
            out.append((item, error))

    for raw in paths:
        path = str(raw)
        if path == "-":  # standard input (loopguard.logs.stream.STDIN)
            add(path)
            continue
        try:
            mode = os.stat(path).st_mode
        except OSError as exc:
            add(path, InputError(os_error_reason(path, exc), path=path))
            continue
        if stat.S_ISDIR(mode):
            for found, error in _walk(path):
                add(found, error)
        elif stat.S_ISREG(mode):
            add(path)
        else:
            add(path, InputError("not a regular file or directory", path=path))
    return out


def _walk(root: str) -> list[tuple[str, InputError | None]]:
    found: list[tuple[str, InputError | None]] = []

    def unlisted(exc: OSError) -> None:
        directory = str(exc.filename) if exc.filename is not None else root
        found.append(
            (directory, InputError(f"cannot list this directory: {os_error_reason(directory, exc)}", path=directory))
        )

    for directory, dirnames, filenames in os.walk(root, onerror=unlisted):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            try:
                mode = os.stat(path).st_mode
            except OSError as exc:
                found.append((path, InputError(os_error_reason(path, exc), path=path)))
                continue
            if stat.S_ISREG(mode):  # no FIFOs, sockets or devices
                found.append((path, None))
    return sorted(found, key=lambda item: Path(item[0]).relative_to(root).parts)
