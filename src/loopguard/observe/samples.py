"""Evidence samples (seed 002, line ④): on a detection or a deny, one JSON file of what the guard
saw, for tuning thresholds and for finding false cuts (a weak notice that cut nothing is a sample
worth more than a real loop).

A :class:`~loopguard.Session` made with ``dump_dir=`` offers a sample for each verdict that is
not ``allow`` (:class:`SampleDump`); a background thread writes it, so the stream never waits on
the disk.  Without ``dump_dir`` nothing here runs and the guard does no I/O.

One sample, ``<dump_dir>/<UTC time>-<sequence>-<kind>-<session digest>.json`` (UTF-8, written to a
temporary name and renamed, so a reader never sees half a file)::

    {"format": 1, "time": "2026-12-03T22:41:07.123Z", "event": "text_loop", "action": "cut",
     "rule": "text_loop", "kind": "cycle", "session": "conv-1", "turn": 1, "attempt": 1,
     "channel": "reasoning", "tool": "", "call_index": -1, "hash": "",
     "evidence": {"position": 600, "cut": 276, ...}, "replica": "host-123",
     "text": "…the channel's last dump_max_chars code points, redacted…",
     "text_start": 0, "text_chars": 640}

- ``text`` is the tail of the attempt's text on the detection's channel (text-loop samples only),
  cut to the last ``dump_max_chars`` code points (the evidence is at the end), then redacted with
  :func:`loopguard.redact.redact_secrets`; ``text_start`` is the code-point offset of its first
  character in the channel's text (``evidence.cut`` minus ``text_start`` is the cut inside
  ``text`` when it is not negative), ``text_chars`` the channel's length.  An attempt longer than
  the session's replay bound keeps no text (``text`` is ``""``).
- Tool samples carry the tool's name (redacted), the rule, the call index, the call's hash prefix
  and the evidence's numbers: never an argument value, a result or a reason (a deny reason quotes
  the arguments).
- ``session`` is the decision log's ``session`` field (hashed when
  :func:`~loopguard.configure_decision_log` was given ``hash_session_ids=True``).

Bounds: at most one sample per (session, turn, kind) — the first: a weak notice that cut nothing
is the sample worth most (seed 002) —; the directory keeps the newest ``keep``
samples (by modification time; older ones are deleted after each write; files not named like a
sample are never touched); at most :data:`QUEUE_SIZE` samples wait for the writer (one more is
dropped and counted).  A failed write is logged (``loopguard.samples`` logger, WARNING, at most
once a minute, the error's type and the directory only) and counted in :func:`counts` and in
``loopguard_samples_total{outcome}`` when metrics are on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import queue
import re
import threading
import time
from pathlib import Path
from typing import Any

from ..redact import redact_secrets
from . import metrics

__all__ = ["FORMAT", "QUEUE_SIZE", "SampleDump", "counts", "failed", "flush"]

logger = logging.getLogger("loopguard.samples")

#: the sample's ``format`` field
FORMAT = 1
#: samples waiting for the writer thread, at most; one more is dropped (and counted)
QUEUE_SIZE = 256
#: a sample's file name (what :class:`SampleDump` prunes; nothing else in the folder is touched)
NAME = re.compile(r"^\d{8}T\d{9}Z-\d{6}-[a-z_]{1,40}-[0-9a-f]{12}\.json$")
#: seconds between two warnings of failed writes
WARN_INTERVAL = 60.0

_COUNTS = {"written": 0, "failed": 0, "dropped": 0}
_LOCK = threading.Lock()
_QUEUE: queue.Queue[tuple[Path, int, str, dict[str, Any]] | None] = queue.Queue(QUEUE_SIZE)
_WRITER: list[threading.Thread] = []
_WARNED = [float("-inf")]
_SEQ = itertools.count(1)  # next() of a count is atomic under the GIL


def counts() -> dict[str, int]:
    """Samples ``written``, ``failed`` (an OS error while writing) and ``dropped`` (the queue
    was full) by this process so far."""
    with _LOCK:
        return dict(_COUNTS)


def flush(timeout: float = 10.0) -> bool:
    """Wait until every sample offered so far is written or has failed; ``False`` when
    ``timeout`` seconds passed first (for tests and orderly shutdowns)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with _QUEUE.all_tasks_done:
            if not _QUEUE.unfinished_tasks:
                return True
            _QUEUE.all_tasks_done.wait(min(0.05, max(0.0, deadline - time.monotonic())))
    return _QUEUE.unfinished_tasks == 0


def _count(outcome: str) -> None:
    with _LOCK:
        _COUNTS[outcome] += 1
    metrics.sample(outcome)


def _warn(error: BaseException, folder: Path) -> None:
    now = time.monotonic()
    with _LOCK:
        if now - _WARNED[0] < WARN_INTERVAL:
            return
        _WARNED[0] = now
    logger.warning("evidence sample not written to %s: %s", folder, type(error).__name__)


def _body(sample: dict[str, Any]) -> bytes:
    """The sample as UTF-8 JSON, its text redacted (here, in the writer: never on the stream)."""
    if "text" in sample:
        sample["text"] = redact_secrets(sample["text"])
    try:
        return json.dumps(sample, ensure_ascii=False, sort_keys=True).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in the text: escaped, still valid JSON
        return json.dumps(sample, ensure_ascii=True, sort_keys=True).encode("ascii")


def failed(error: BaseException) -> None:
    """Count a sample that could not be made (``error``: logged by type only)."""
    _count("failed")
    _warn(error, Path("?"))


def _write(folder: Path, keep: int, name: str, sample: dict[str, Any]) -> None:
    body = _body(sample)
    folder.mkdir(parents=True, exist_ok=True)
    temporary = folder / f".{name}.tmp"
    temporary.write_bytes(body)
    os.replace(temporary, folder / name)
    samples = []
    with os.scandir(folder) as entries:
        for entry in entries:
            if NAME.match(entry.name) and entry.is_file(follow_symlinks=False):
                samples.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    samples.sort()
    for _, old in samples[: max(0, len(samples) - keep)]:
        try:
            (folder / old).unlink()
        except FileNotFoundError:  # another process pruned it first
            pass


def _drain() -> None:
    while True:
        item = _QUEUE.get()
        try:
            if item is None:
                return
            folder, keep, name, sample = item
            try:
                _write(folder, keep, name, sample)
            except Exception as error:  # an OS error, or a bug: the writer thread goes on
                _count("failed")
                _warn(error, folder)
            else:
                _count("written")
        finally:
            _QUEUE.task_done()


def _offer(item: tuple[Path, int, str, dict[str, Any]]) -> None:
    with _LOCK:
        if not _WRITER or not _WRITER[0].is_alive():
            _WRITER[:] = [threading.Thread(target=_drain, name="loopguard-samples", daemon=True)]
            _WRITER[0].start()
    try:
        _QUEUE.put_nowait(item)
    except queue.Full:
        _count("dropped")


class SampleDump:
    """Where one session's evidence samples go (``Session(dump_dir=...)``; see the module).

    Parameters
    ----------
    folder : str | os.PathLike
        The directory (made when the first sample is written).
    max_chars : int, default 8000
        Code points of text kept per sample (the tail; seed 002's ``dumpMaxChars``).
    keep : int, default 30
        Samples kept in the directory, the newest (seed 002's ``dumpKeep``).

    Raises
    ------
    TypeError
        for a ``folder`` that is not a path, or a bound that is not an ``int``.
    ValueError
        for an empty ``folder`` or a bound below 1.
    """

    __slots__ = ("_seen", "folder", "keep", "max_chars")

    def __init__(self, folder: str | os.PathLike[str], max_chars: int = 8000, keep: int = 30) -> None:
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"dump_dir must be a path (str or os.PathLike), not {type(folder).__name__}")
        if not os.fspath(folder):
            raise ValueError("dump_dir must not be empty")
        for name, value in (("dump_max_chars", max_chars), ("dump_keep", keep)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, not {type(value).__name__}")
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        self.folder = Path(folder)
        self.max_chars = max_chars
        self.keep = keep
        self._seen: set[tuple[int, str]] = set()  # (turn, kind) sampled

    def new_turn(self) -> None:
        """Forget which kinds were sampled (a new turn may sample each kind again)."""
        self._seen.clear()

    def offer(
        self,
        fields: dict[str, Any],
        turn: int,
        attempt: int,
        text: str | None = None,
        text_chars: int = 0,
    ) -> bool:
        """Queue a sample of a decision record's ``fields`` (:func:`loopguard.observe.log.decision_fields`)
        unless this turn already has one of its kind; ``text``: the channel's whole attempt text
        (``None`` for a tool sample), ``text_chars``: the channel's length.  ``True`` when queued."""
        kind = fields["kind"] or fields["rule"] or "loop"
        if (turn, kind) in self._seen:
            return False
        self._seen.add((turn, kind))
        sample = {"format": FORMAT, **fields, "turn": turn, "attempt": attempt}
        if text is not None:
            tail = text[-self.max_chars :]
            sample.update(text=tail, text_start=text_chars - len(tail), text_chars=text_chars)
        now = time.time()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now)) + f"{int(now * 1000) % 1000:03d}Z"
        digest = hashlib.blake2b(str(fields["session"]).encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
        safe_kind = re.sub(r"[^a-z_]", "_", kind.lower())[:40]
        name = f"{stamp}-{next(_SEQ) % 1_000_000:06d}-{safe_kind}-{digest}.json"  # sorts in order of offer
        _offer((self.folder, self.keep, name, sample))
        return True
