"""Opening (maybe compressed) log files, decoding them, and telling their format.

Compression is recognised by its magic bytes (gzip ``1f 8b``, zstd
``28 b5 2f fd``), whatever the file is called; a file named ``.gz``/``.zst``
without the magic is reported as corrupt.  The format is told from the
content (see :func:`sniff`); the extension only decides whether text that
fails to parse as JSON is an error (``.json``, ``.jsonl``, ``.ndjson``,
``.traj``) or plain text.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

import zstandard

from ..errors import InputError

__all__ = [
    "DATASET_FIELDS",
    "Records",
    "compression_of",
    "decode_text",
    "open_maybe_compressed",
    "parse_json_lines",
    "read_text",
    "sniff",
]

#: String fields a dataset record may hold its model output in, in the order tried.
DATASET_FIELDS = ("text", "output", "response", "completion")

#: ``(line, record)`` pairs: 1-based line (``None`` inside a JSON array) and the object.
Records = list[tuple["int | None", dict[str, Any]]]

_GZIP_MAGIC = b"\x1f\x8b"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CHUNK = 1 << 16
_READ = 1 << 13  # decompressed bytes per read (read1: a corrupt stream loses nothing already decoded)
_JSON_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".traj"})
_JSONL_SUFFIXES = frozenset({".jsonl", ".ndjson"})
_COMPRESSED_SUFFIXES = {".gz": "gzip", ".zst": "zstd"}


# --------------------------------------------------------------------------- compression


class _ZstdReader(io.RawIOBase):
    """A zstd decompressing reader that, unlike ``stream_reader``, fails on truncation."""

    def __init__(self, raw: BinaryIO) -> None:
        self._raw = raw
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._buf = memoryview(b"")
        self._in_frame = False
        self._eof = False
        self._error: zstandard.ZstdError | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not len(self._buf) and not self._eof:
            self._fill()
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n

    def _fill(self) -> None:
        if self._error is not None:  # met in the last chunk, after the data handed out before it
            self._eof = True
            raise self._error
        chunk = self._raw.read(_CHUNK)
        if not chunk:
            self._eof = True
            if self._in_frame:
                raise zstandard.ZstdError("truncated zstd data: the last frame is incomplete")
            return
        out = []
        try:
            while chunk:
                out.append(self._obj.decompress(chunk))
                self._in_frame = True
                if self._obj.eof:  # a frame ended; the rest of the chunk starts the next one
                    chunk = self._obj.unused_data
                    self._obj = self._dctx.decompressobj()
                    self._in_frame = False
                else:
                    chunk = b""
        except zstandard.ZstdError as exc:
            if not out:
                raise
            self._error = exc  # the frames decoded before the bad one are read first
        self._buf = memoryview(b"".join(out))

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


def compression_of(path: str | Path) -> str | None:
    """The compression of a file: ``"gzip"``, ``"zstd"`` or ``None``, from its magic bytes.

    Parameters
    ----------
    path : str | Path
        The file.

    Returns
    -------
    str | None
        The compression, or ``None`` for an uncompressed file.

    Raises
    ------
    InputError
        when the file cannot be opened, or is named ``.gz``/``.zst``, is not
        empty and lacks that format's magic bytes.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise InputError(f"cannot open: {exc.strerror or exc}", path=str(path)) from exc
    if head.startswith(_GZIP_MAGIC):
        return "gzip"
    if head.startswith(_ZSTD_MAGIC):
        return "zstd"
    named = _COMPRESSED_SUFFIXES.get(Path(path).suffix.lower())
    if named is not None and head:  # an empty file is empty, whatever its name
        raise InputError(
            f"corrupt {named} data: the file is named {Path(path).suffix} but lacks the {named} magic bytes",
            path=str(path),
            line=1,
        )
    return None


def open_maybe_compressed(path: str | Path) -> BinaryIO:
    """Open a file for binary reading, decompressing gzip or zstd transparently.

    Parameters
    ----------
    path : str | Path
        The file; compression is detected from its magic bytes.

    Returns
    -------
    BinaryIO
        A readable binary stream of the (decompressed) content.  Reading a
        corrupt or truncated stream raises ``OSError``/``EOFError``/
        ``zlib.error`` (gzip) or ``zstandard.ZstdError`` (zstd).

    Raises
    ------
    InputError
        when the file cannot be opened (see :func:`compression_of`).
    """
    kind = compression_of(path)
    if kind == "gzip":
        return gzip.open(path, "rb")  # type: ignore[return-value]
    if kind == "zstd":
        return io.BufferedReader(_ZstdReader(open(path, "rb")), buffer_size=_CHUNK)
    return open(path, "rb")


def _read_bytes(path: str | Path) -> bytes:
    kind = compression_of(path)
    chunks: list[bytes] = []
    with open_maybe_compressed(path) as fh:
        read = getattr(fh, "read1", fh.read)  # one raw read at a time: nothing decoded is lost on an error
        try:
            while chunk := read(_READ):
                chunks.append(chunk)
        except (OSError, EOFError, zlib.error, zstandard.ZstdError) as exc:
            decoded = b"".join(chunks)
            line = decoded.count(b"\n") + 1  # the line it broke in (zstd decodes whole blocks of <= 128 KiB)
            raise InputError(
                f"corrupt {kind or 'file'} data: {exc} (after {len(decoded)} bytes of decompressed data)",
                path=str(path),
                line=line,
            ) from exc
    return b"".join(chunks)


def decode_text(data: bytes, path: str | Path) -> str:
    """Decode a whole file's bytes as :func:`read_text` does (the same errors)."""
    nul = data.find(b"\x00")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if nul < 0 or exc.start < nul:  # report whichever comes first
            line = data.count(b"\n", 0, exc.start) + 1
            raise InputError(
                f"unknown format: not UTF-8 text (byte 0x{data[exc.start]:02x}); binary file?",
                path=str(path),
                line=line,
            ) from None
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise InputError("unknown format: binary data (NUL byte), not a text or JSON log", path=str(path), line=line)
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | Path) -> str:
    """Read a whole (maybe compressed) file as UTF-8 text.

    Parameters
    ----------
    path : str | Path
        The file.

    Returns
    -------
    str
        The text, a leading byte-order mark removed; newlines untouched.

    Raises
    ------
    InputError
        naming the file and line, for unreadable or corrupt compressed data,
        NUL bytes (binary data) or invalid UTF-8.
    """
    return decode_text(_read_bytes(path), path)


# --------------------------------------------------------------------------- JSON


def _lines(text: str) -> Iterator[tuple[int, str]]:
    # Split on "\n" only: JSON strings may hold raw U+2028 and friends, which
    # str.splitlines() would treat as line breaks.
    for number, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield number, line


def _decode_line(line: str, number: int, path: str) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg} (column {exc.colno})", path=path, line=number) from None
    except ValueError as exc:  # e.g. an integer longer than Python's int_max_str_digits
        raise InputError(f"invalid JSON: {exc}", path=path, line=number) from None
    except RecursionError:
        raise InputError("invalid JSON: nested too deeply", path=path, line=number) from None


def parse_json_lines(text: str, path: str) -> Records:
    """Parse JSON Lines: one object per non-blank line.

    Parameters
    ----------
    text : str
        The file's text.
    path : str
        Named in errors.

    Returns
    -------
    Records
        ``(line, object)`` pairs, 1-based lines.

    Raises
    ------
    InputError
        at the first line that is not valid JSON or not an object.
    """
    records: Records = []
    for number, line in _lines(text):
        value = _decode_line(line, number, path)
        if not isinstance(value, dict):
            raise InputError(f"expected a JSON object on each line, got {_json_type(value)}", path=path, line=number)
        records.append((number, value))
    return records


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    return "a " + type(value).__name__


# --------------------------------------------------------------------------- format


def _classify_record(record: dict[str, Any], field: str | None) -> str | None:
    if field is not None and isinstance(record.get(field), str):
        return "dataset"
    kind = record.get("type")
    if kind in ("assistant", "user") and isinstance(record.get("message"), dict):
        return "claude-code"
    if kind == "system" and record.get("subtype") == "init":
        return "claude-code"
    if isinstance(record.get("messages"), list):
        return "chat-records"
    if isinstance(record.get("role"), str):
        return "chat"
    if field is None and any(isinstance(record.get(name), str) for name in DATASET_FIELDS):
        return "dataset"
    if isinstance(record.get("calls"), list):
        return "tool-call-records"
    return None


def _classify_records(records: Records, path: str, field: str | None) -> str:
    for _, record in records:
        kind = _classify_record(record, field)
        if kind is not None:
            return kind
    raise unknown_records(path, field, records[0][0])


def unknown_records(path: str, field: str | None, line: int | None) -> InputError:
    """The error for JSON Lines whose records no reader knows (``field``: ``--field``)."""
    wanted = f"a string field {field!r}" if field else "a string field " + "/".join(DATASET_FIELDS)
    return InputError(
        "unknown JSON format: no record is a chat message (role), a chat record (messages), "
        f"a Claude Code stream-json line (type + message), a dataset record ({wanted}) "
        "or a recorded run (calls)",
        path=path,
        line=line,
    )


def _classify_document(doc: Any, path: str, field: str | None, line: int) -> tuple[str, Any]:
    if isinstance(doc, dict):
        if isinstance(doc.get("trajectory"), list):
            return "swe-agent", doc
        records: Records = [(line, doc)]
        return _classify_records(records, path, field), records
    if isinstance(doc, list):
        if not doc:
            return "empty", None
        if all(isinstance(item, dict) for item in doc):
            if "tool" in doc[0]:
                return "tool-calls", doc
            if isinstance(doc[0].get("role"), str):
                return "chat", [(None, item) for item in doc]
    raise InputError(
        "unknown JSON format: expected a SWE-agent trajectory (an object with 'trajectory'), "
        "a tool-call list ([{'tool', 'args', 'result'}]) or chat messages",
        path=path,
        line=line,
    )


def sniff(text: str, path: str, *, field: str | None = None) -> tuple[str, Any]:
    """Tell a log's format from its content and parse it for its reader.

    Rules, in order: blank text is ``empty``; text that parses as one JSON
    document is a SWE-agent trajectory (object with a ``trajectory`` list), a
    tool-call list (array of objects with ``tool``), an array of chat
    messages, or a single JSON Lines record; text whose first non-blank line
    is a JSON object is JSON Lines, classified by its first recognisable
    record (Claude Code stream-json, chat records with ``messages``, one chat
    message per line with ``role``, a dataset record with a string
    ``text``/``output``/``response``/``completion`` field -- ``field`` first
    when given --, or a recorded run with a ``calls`` list); anything else is
    plain text, unless the file is named ``.json``/``.jsonl``/``.ndjson``/``.traj``
    (then it is invalid JSON).

    Parameters
    ----------
    text : str
        The decoded content.
    path : str
        The file (its suffix, ignoring ``.gz``/``.zst``, and for errors).
    field : str | None
        The dataset field named with ``--field``.

    Returns
    -------
    tuple[str, Any]
        The format and its payload: ``None`` (empty), the text (plain), the
        document (swe-agent, tool-calls) or :data:`Records` (JSON Lines kinds).

    Raises
    ------
    InputError
        for invalid JSON (naming the line) or an unrecognised JSON structure.
    """
    stripped = text.lstrip()
    if not stripped:
        return "empty", None
    suffix = _suffix(path)
    first_line = text.count("\n", 0, len(text) - len(stripped)) + 1
    if stripped[0] in "{[":
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
            doc_error: ValueError | RecursionError | None = exc
        else:
            return _classify_document(doc, path, field, first_line)
        head = next(_lines(text))[1]
        if _is_json_object(head) or suffix in _JSONL_SUFFIXES:
            records = parse_json_lines(text, path)
            return _classify_records(records, path, field), records
        if suffix in _JSON_SUFFIXES:
            if isinstance(doc_error, json.JSONDecodeError):
                raise InputError(
                    f"invalid JSON: {doc_error.msg} (column {doc_error.colno})", path=path, line=doc_error.lineno
                )
            if isinstance(doc_error, RecursionError):
                raise InputError("invalid JSON: nested too deeply", path=path, line=first_line)
            raise InputError(f"invalid JSON: {doc_error}", path=path, line=first_line)
    elif suffix in _JSON_SUFFIXES:
        raise InputError("invalid JSON: the file does not start with '{' or '['", path=path, line=first_line)
    return "plain", text


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _suffix(path: str) -> str:
    p = Path(path)
    if p.suffix.lower() in _COMPRESSED_SUFFIXES:
        p = p.with_suffix("")
    return p.suffix.lower()
