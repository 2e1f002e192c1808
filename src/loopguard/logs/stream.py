"""Streaming log reading for ``loopguard scan``: line by line, bad lines skipped.

:class:`LogStream` opens a file (or ``-``, standard input), decompressing
gzip or zstd told by their magic bytes, and reads it one line at a time.
When the first non-blank line is a JSON object (and not a SWE-agent
trajectory), the file is JSON Lines and is read as a stream.  So it is when
the first non-blank line is a bad one (not JSON, not an object, not UTF-8)
and the next non-blank line is a JSON object: the first line is then
reported and skipped like any other bad line -- unless it looks like plain
text (it neither starts with ``{``/``[`` nor ends with ``}``, in a file not
named ``.jsonl``/``.ndjson``) or opens a JSON document written over several
lines (it ends with ``{``, ``[`` or ``,``).  In a JSON Lines file:

* ``dataset``, ``chat-records`` and ``tool-call-records`` files hold one
  conversation per record, handed out as each record is read: memory is
  bounded by the largest record (plus the findings), not by the file;
* ``chat`` (one message per line) and ``claude-code`` files are one
  conversation (or one per sub-agent) read message by message
  (:meth:`LogStream.messages`): each assistant message is handed out when it
  ends (at the next assistant message of its conversation), with the tool
  results read by then, so memory is the open message, not the file;
* a line that is not valid JSON, not an object, not UTF-8, or a record the
  reader rejects is recorded in :attr:`LogStream.bad_lines` (an
  :class:`~loopguard.errors.InputError` naming file and line) and skipped;
  the rest of the file is read;
* compressed data found corrupt or truncated after the format is known ends
  the file: the conversations read before it are handed out and
  :attr:`LogStream.stopped` names the line it broke in.

Anything else (plain text, a SWE-agent ``.traj``, a tool-call list, a JSON
array, any other file whose first line is not a JSON object) is read whole as
:func:`loopguard.logs.read_log` reads it, with the same errors.
"""

from __future__ import annotations

import gzip
import io
import os
import sys
import zlib
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import IO, Any, BinaryIO

import zstandard

from ..errors import InputError
from . import read_payload
from .chat import ChatStream
from .claude_code import ClaudeCodeStream
from .session import Conversation, Message
from .sniff import (
    _CHUNK,
    _COMPRESSED_SUFFIXES,
    _GZIP_MAGIC,
    _JSONL_SUFFIXES,
    _READ,
    _ZSTD_MAGIC,
    DATASET_FIELDS,
    Records,
    _classify_record,
    _decode_line,
    _json_type,
    _suffix,
    _ZstdReader,
    decode_text,
    sniff,
    unknown_records,
)

__all__ = ["STDIN", "LogStream"]

#: The path that names standard input.
STDIN = "-"

_DECOMPRESS_ERRORS = (OSError, EOFError, zlib.error, zstandard.ZstdError)


class LogStream:
    """One log file read as a stream of conversations.

    Parameters
    ----------
    path : str
        The file, or ``"-"`` for standard input (read as bytes; it may be
        compressed too).
    field : str | None
        The dataset output field (``--field``), as for :func:`~loopguard.logs.read_log`.

    Attributes
    ----------
    path : str
        As given.
    format : str
        The format (known once the constructor returns).
    bad_lines : list[InputError]
        The lines skipped so far, each naming the file and its 1-based line.
    stopped : InputError | None
        Set when corrupt or truncated compressed data ended a JSON Lines file
        early: it names the 1-based line the data broke in; the conversations
        before it were handed out.
    total : int | None
        The file's size in bytes (compressed size for a compressed file);
        ``None`` for standard input.

    Raises
    ------
    InputError
        when the file cannot be opened, its compressed data is corrupt, or a
        file read whole cannot be read (see :func:`~loopguard.logs.read_log`).
        Iterating :meth:`conversations` raises it for an unrecognised JSON
        Lines file (corrupt compressed data met later sets :attr:`stopped`).
    """

    def __init__(self, path: str, *, field: str | None = None) -> None:
        self.path = path
        self.field = field
        self.bad_lines: list[InputError] = []
        self.stopped: InputError | None = None
        self.groups: list[Any] = []
        self.format = "empty"
        self.total: int | None = None
        self._line = 0
        self._raw: IO[bytes]
        if path == STDIN:
            self._raw = sys.stdin.buffer
        else:
            try:
                self._raw = open(path, "rb")  # closed by close()
            except OSError as exc:
                raise InputError(f"cannot open: {exc.strerror or exc}", path=path) from exc
            self.total = os.fstat(self._raw.fileno()).st_size
        try:
            self._kind, self._fh = self._open()
            self._start()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ opening

    def _open(self) -> tuple[str | None, BinaryIO]:
        raw: Any = self._raw
        buffered: Any = raw if isinstance(raw, io.BufferedReader) else io.BufferedReader(raw)
        head: bytes = buffered.peek(4)[:4]
        if head.startswith(_GZIP_MAGIC):
            return "gzip", gzip.GzipFile(fileobj=buffered, mode="rb")  # type: ignore[return-value]
        if head.startswith(_ZSTD_MAGIC):
            return "zstd", io.BufferedReader(_ZstdReader(buffered), buffer_size=_CHUNK)
        named = _COMPRESSED_SUFFIXES.get(Path(self.path).suffix.lower())
        if named is not None and head:
            raise InputError(
                f"corrupt {named} data: the file is named {Path(self.path).suffix} but lacks the {named} magic bytes",
                path=self.path,
                line=1,
            )
        return None, buffered

    def position(self) -> int:
        """Bytes of the file read so far (0 for standard input)."""
        if self.total is None:
            return 0
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def close(self) -> None:
        """Close the file (standard input is left open)."""
        if self.path != STDIN:
            self._raw.close()

    def __enter__(self) -> LogStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ lines

    def _corrupt(self, exc: BaseException) -> InputError:
        return InputError(f"corrupt {self._kind or 'file'} data: {exc}", path=self.path, line=self._line + 1)

    def _next_line(self) -> bytes:
        try:
            data = self._fh.readline()
        except _DECOMPRESS_ERRORS as exc:
            raise self._corrupt(exc) from exc
        if data:
            self._line += 1
        return data

    def _start(self) -> None:
        """Read up to the first JSON object line and decide how the file is read."""
        consumed: list[bytes] = []
        head = self._next_nonblank(consumed)
        self._head: tuple[int, dict[str, Any]] | None = None
        record = self._parse(head, self._line, first=len(consumed) == 1) if head else None
        if isinstance(record, dict) and not isinstance(record.get("trajectory"), list):
            self._head = (self._line, record)
        elif isinstance(record, InputError) and self._bad_first_line(head):
            # a bad first line (a log whose head was cut, a corrupt record): when the next
            # line is a JSON object, the file is JSON Lines and the first line is skipped
            following = self._next_nonblank(consumed)
            second = self._parse(following, self._line, first=False) if following else None
            if isinstance(second, dict) and not isinstance(second.get("trajectory"), list):
                self.bad_lines.append(record)
                self._head = (self._line, second)
        if self._head is not None:
            self.format = "jsonl"  # told by the first classified record (_classify)
            self._records = self._parsed_records()
            self._pending: Records = []
            self._classify()
            return
        # read whole, exactly as read_log does
        chunks = consumed
        read = getattr(self._fh, "read1", self._fh.read)
        try:
            while chunk := read(_READ):
                chunks.append(chunk)
        except _DECOMPRESS_ERRORS as exc:
            decoded = b"".join(chunks)
            raise InputError(
                f"corrupt {self._kind or 'file'} data: {exc} (after {len(decoded)} bytes of decompressed data)",
                path=self.path,
                line=decoded.count(b"\n") + 1,
            ) from exc
        text = decode_text(b"".join(chunks), self.path)
        kind, payload = sniff(text, self.path, field=self.field)
        self.format = kind
        self._conversations = read_payload(kind, payload, self.path, self.field)

    def _next_nonblank(self, consumed: list[bytes]) -> bytes:
        """The next non-blank line (``b""`` at the end), every line read appended to ``consumed``."""
        while data := self._next_line():
            consumed.append(data)
            if data.strip():
                return data
        return b""

    def _bad_first_line(self, head: bytes) -> bool:
        """Whether a first line that is not a JSON object may be a bad JSON Lines line: it starts
        with ``{`` or ``[``, ends with ``}`` (the tail of a record), or the file is named
        ``.jsonl``/``.ndjson``; and it does not open a JSON document written over several lines
        (it does not end with ``{``, ``[`` or ``,``)."""
        line = head.strip().removeprefix(b"\xef\xbb\xbf").strip()
        if line.endswith((b"{", b"[", b",")):
            return False
        return line.startswith((b"{", b"[")) or line.endswith(b"}") or _suffix(self.path) in _JSONL_SUFFIXES

    def _parse(self, data: bytes, number: int, *, first: bool) -> dict[str, Any] | InputError:
        """One non-blank line as a JSON object, or the error that skips it."""
        if b"\x00" in data:
            return InputError("binary data (NUL byte), not a JSON object", path=self.path, line=number)
        try:
            line = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return InputError(f"not UTF-8 text (byte 0x{data[exc.start]:02x})", path=self.path, line=number)
        if first and line.startswith("\ufeff"):
            line = line[1:]
        try:
            value = _decode_line(line, number, self.path)
        except InputError as exc:
            return exc
        if not isinstance(value, dict):
            return InputError(
                f"expected a JSON object on each line, got {_json_type(value)}", path=self.path, line=number
            )
        return value

    def _parsed_records(self) -> Iterator[tuple[int, dict[str, Any]]]:
        assert self._head is not None
        yield self._head
        while True:
            try:
                data = self._next_line()
            except InputError as exc:  # corrupt compressed data: what was read before it stands
                self.stopped = exc
                return
            if not data:
                return
            if not data.strip():
                continue
            value = self._parse(data, self._line, first=False)
            if isinstance(value, InputError):
                self.bad_lines.append(value)
                continue
            yield self._line, value

    def _classify(self) -> None:
        """Read records until one tells the format (they are kept for the reader)."""
        for line, record in self._records:
            self._pending.append((line, record))
            kind = _classify_record(record, self.field)
            if kind is not None:
                self.format = kind
                return
        if self.stopped is not None:
            raise self.stopped
        raise unknown_records(self.path, self.field, self._pending[0][0] if self._pending else None)

    # ------------------------------------------------------------------ conversations

    def conversations(self) -> Iterator[Conversation]:
        """The file's conversations, in file order, read as they are needed."""
        if self._head is None:
            yield from self._conversations
            return
        if self.format in ("dataset", "chat-records", "tool-call-records"):
            yield from self._per_record()
            return
        groups: dict[Any, list[Message]] = {}
        for group, message in self.messages():
            groups.setdefault(group, []).append(message)
        for group in self.groups:
            where = {} if group is None else {"parent_tool_use_id": group}
            yield Conversation(where, groups.get(group, []))

    @property
    def streams_messages(self) -> bool:
        """Whether the file is one conversation (or one per sub-agent) read message by message
        (:meth:`messages`): a ``chat`` or ``claude-code`` JSON Lines file."""
        return self._head is not None and self.format in ("chat", "claude-code")

    def messages(self) -> Iterator[tuple[Any, Message]]:
        """A ``chat`` or ``claude-code`` file's assistant messages, each as soon as it ends.

        Yields ``(group, message)``: ``group`` is ``None`` for the main
        conversation, else a Claude Code sub-agent's ``parent_tool_use_id``.
        Messages of one group come in order; :attr:`groups` lists the groups
        in the order :func:`~loopguard.logs.read_log` gives their
        conversations (main first, then by first appearance).  See
        :class:`~loopguard.logs.chat.ChatStream` and
        :class:`~loopguard.logs.claude_code.ClaudeCodeStream` for when a
        message ends; a malformed record is a bad line, skipped.  Memory is
        the open message of each group, not the file.

        Raises
        ------
        ValueError
            when the file is not ``chat`` or ``claude-code`` JSON Lines
            (:attr:`streams_messages` is false).
        """
        if not self.streams_messages:
            raise ValueError(f"not a chat or Claude Code JSON Lines file: {self.format}")
        reader: ChatStream | ClaudeCodeStream
        if self.format == "chat":
            reader = ChatStream(self.path)
            self.groups = [None]
        else:
            reader = ClaudeCodeStream(self.path)
        pending, self._pending = self._pending, []
        for line, record in chain(pending, self._records):
            try:
                ended = reader.add(line, record)
            except InputError as exc:
                self.bad_lines.append(exc)
                continue
            if isinstance(reader, ChatStream):
                yield from ((None, message) for message in ended)  # type: ignore[misc]
            else:
                yield from ended  # type: ignore[misc]
        if isinstance(reader, ClaudeCodeStream):
            self.groups = sorted(reader.groups, key=lambda group: group is not None)  # stable
            yield from reader.finish()
        else:
            yield from ((None, message) for message in reader.finish())

    def _per_record(self) -> Iterator[Conversation]:
        name = self.field
        pending = self._pending
        if self.format == "dataset" and name is None:
            name = next(
                (n for _, r in pending for n in DATASET_FIELDS if isinstance(r.get(n), str)),
                None,
            )

        def read(item: tuple[int | None, dict[str, Any]]) -> list[Conversation]:
            try:
                return read_payload(self.format, [item], self.path, name)
            except InputError as exc:
                self.bad_lines.append(exc)
                return []

        for item in pending:
            yield from read(item)
        self._pending = []
        for item in self._records:
            yield from read(item)
