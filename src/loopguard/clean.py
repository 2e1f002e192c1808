"""``loopguard clean PATH...``: prune, drop or flag the loops already written into stored logs.

Loops are found exactly as ``loopguard scan`` finds them (the same readers, :func:`loopguard.logs.sniff`,
and :func:`loopguard.cli.scan_message` with the same ``--profile``); every text loop ``scan`` lists is
acted on.  What is done, per format (JSON Lines only, uncompressed):

* ``dataset`` (one record per line, output in ``--field``): ``prune`` cuts the field at the loop's
  cut and appends the live guard's marker line; ``drop`` removes the record's line; ``flag`` adds
  ``"loopguard": {...}`` to the record.
* ``chat`` (one message per line) and ``chat-records`` (``messages: [...]`` per line): ``prune``
  cuts ``content`` (text channel) or ``reasoning_content`` / ``reasoning`` / reasoning parts
  (reasoning channel) at the cut, later parts of the same channel removed; ``drop`` removes the
  line (for one message per line: only a message without tool calls, so no tool answer is
  orphaned); ``flag`` adds the field to the line.
* ``claude-code``: ``prune`` cuts the message's ``text`` (or ``thinking``) blocks, across its lines,
  later blocks of that channel removed; ``flag`` adds the field to the message's first line;
  ``drop`` is not done (a dropped line breaks the session's ``parentUuid`` chain).
* ``tool-call-records`` (recorded runs, a ``calls`` list per line): no text to prune; their
  tool-call loops as below.
* Tool-call loops (runs of identical calls): ``flag`` marks the lines holding the calls;
  ``drop`` removes a ``chat-records`` or ``tool-call-records`` record (the whole conversation
  or run, its calls and answers together); otherwise they are left and reported as not
  cleanable in this format (a ``tool_use`` / ``tool_result`` or ``tool_calls`` / ``tool`` pair,
  a call and its result, must stay paired).
* Other formats (SWE-agent ``.traj``, tool-call lists, JSON arrays, plain text) and compressed
  files are never written; their loops are reported as not cleanable in this format.

Lines that are not changed stay byte-identical; a changed line is written back with its keys
in their order and in the original's JSON style (separators, ``ensure_ascii``) when re-encoding
the original reproduces it exactly, else the closest style.

Safety: before a file changes, its bytes are copied into the run's backup folder --
``--backup-dir DIR``, or ``.loopguard-backup/<UTC timestamp>/`` beside the file -- whose
``manifest.json`` lists for each file the original path, the backup, sha256/size/mtime
before and after, the loopguard version and the options.  The new content is written to a
temporary file in the same folder, fsynced, and moved over the original with ``os.replace``.
A file modified in the last 60 seconds, or whose mtime changed between its read and the
replace, is refused (exit status 2) unless ``--force``; one whose content changed in between
is refused even with ``--force`` (the host's new lines would be lost).  ``--undo BACKUP...`` restores
each file of a manifest (or backup folder) byte-identical, refusing one whose content is no
longer what clean wrote unless ``--force``.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import __version__
from . import cli as _cli
from .config import PROFILES, TextConfig
from .errors import InputError
from .logs import DATASET_FIELDS, Conversation, Message, expand_paths, read_payload
from .logs.dataset import dataset_field
from .logs.sniff import compression_of, decode_text, sniff
from .messages import prune_text
from .terminal import printable
from .text import Detection
from .toolruns import find_runs

__all__ = ["ACTIONS", "RECENT_SECONDS", "CleanResult", "clean_paths", "register", "undo"]

#: What ``--action`` can do to a looping record.
ACTIONS = ("prune", "drop", "flag")
#: A file modified this recently (seconds) may still be written by its host: refused unless ``--force``.
RECENT_SECONDS = 60.0
#: The manifest's file name in a backup folder.
MANIFEST = "manifest.json"
#: The folder (beside each file) holding the default backups, one sub-folder per run.
BACKUP_FOLDER = ".loopguard-backup"

_CLEANABLE = ("dataset", "chat", "chat-records", "claude-code", "tool-call-records")
#: Formats whose records are whole conversations: ``drop`` removes a tool-call loop's record.
_RECORD_PER_CONVERSATION = ("chat-records", "tool-call-records")
_MAX_PASSES = 8
_TEXT_PARTS = frozenset({None, "text", "output_text", "input_text"})
_REASONING_PARTS = frozenset({"reasoning", "thinking", "reasoning_text", "summary_text"})


def _before_replace(path: str) -> None:
    """Called between the temporary file's fsync and the checks before ``os.replace`` (a test seam)."""


# --------------------------------------------------------------------------- where a channel is stored

# a segment: (container, key): container[key] is one string of the channel, in reading order
_Segment = tuple[Any, Any]


def _parts(container: Any, key: Any, reasoning: bool) -> list[_Segment]:
    """The strings :func:`loopguard.logs._util.parts_text` joins, as segments."""
    value = container[key]
    if isinstance(value, str):
        return [(container, key)]
    if isinstance(value, dict):
        for name in ("text", "content", "thinking"):
            if name in value:
                return _parts(value, name, reasoning)
        return []
    out: list[_Segment] = []
    if isinstance(value, list):
        wanted = _REASONING_PARTS | {None, "text"} if reasoning else _TEXT_PARTS
        for i, part in enumerate(value):
            if isinstance(part, str):
                out.append((value, i))
            elif isinstance(part, dict) and part.get("type") in wanted:
                name = "text" if "text" in part else "thinking"
                if isinstance(part.get(name), str):
                    out.append((part, name))
    return out


def _chat_segments(record: dict[str, Any]) -> dict[str, list[_Segment]]:
    """A chat message's channels as segments (as :func:`loopguard.logs.chat._assistant` reads them)."""
    key = "reasoning_content" if record.get("reasoning_content") is not None else "reasoning"
    reasoning = _parts(record, key, True) if record.get(key) is not None else []
    content = record.get("content")
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and part.get("type") in _REASONING_PARTS:
                name = "thinking" if "thinking" in part else "text"
                if isinstance(part.get(name), str):
                    reasoning.append((part, name))
    text = _parts(record, "content", False) if content is not None else []
    return {"reasoning": reasoning, "text": text}


def _value(segment: _Segment) -> str:
    value: str = segment[0][segment[1]]
    return value


def _cut_segments(segments: list[_Segment], cut: int, marker: str, owners: list[list[Any]]) -> None:
    """Keep the channel's first ``cut`` code points plus ``marker``; drop the segments after."""
    start = 0
    doomed: list[_Segment] = []
    placed = False
    for segment in segments:
        value = _value(segment)
        if placed:
            doomed.append(segment)
        elif start + len(value) > cut or (start == cut and value):
            segment[0][segment[1]] = value[: cut - start] + marker
            placed = True
        start += len(value)
    for container, key in reversed(doomed):  # later parts of the channel go
        if isinstance(container, list):
            del container[key]
        elif isinstance(container, dict):
            owner = next((lst for lst in owners if any(item is container for item in lst)), None)
            if owner is not None:  # a later part / block of the channel goes
                del owner[next(i for i, item in enumerate(owner) if item is container)]
            else:
                container[key] = ""
        else:
            container[key] = ""


# --------------------------------------------------------------------------- one file


@dataclass
class CleanResult:
    """What clean did (or would do) to one file.

    ``status``: ``clean`` (nothing to do), ``cleaned``, ``would clean`` (``--dry-run``),
    ``refused``, ``unreadable`` or ``not cleanable``.
    """

    path: str
    format: str = ""
    status: str = "clean"
    reason: str = ""
    pruned: int = 0
    dropped: int = 0
    flagged: int = 0
    removed: int = 0
    not_cleanable: dict[str, int] = field(default_factory=dict)
    styled: int = 0  # changed lines whose original JSON style was reproduced exactly
    backup: str | None = None

    @property
    def records(self) -> int:
        return self.pruned + self.dropped + self.flagged

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "format": self.format,
            "status": self.status,
            "pruned": self.pruned,
            "dropped": self.dropped,
            "flagged": self.flagged,
            "removed_code_points": self.removed,
        }
        if self.reason:
            out["reason"] = self.reason
        if self.not_cleanable:
            out["not_cleanable"] = dict(self.not_cleanable)
        if self.backup is not None:
            out["backup"] = self.backup
        return out

    def line(self) -> str:
        name = printable(self.path)
        kind = f" [{self.format}]" if self.format else ""
        counts = (
            f"{self.pruned} pruned, {self.dropped} dropped, {self.flagged} flagged, {self.removed} code points removed"
        )
        extra = "".join(f"; {n} {what} not cleanable in this format" for what, n in self.not_cleanable.items())
        if self.status in ("refused", "unreadable"):
            return f"{name}{kind}: {self.status}: {printable(self.reason)}"
        if self.status == "would clean":
            return f"{name}{kind}: would clean: {counts}{extra}"
        if self.status == "cleaned":
            return f"{name}{kind}: cleaned: {counts}{extra}; backup {printable(self.backup or '')}"
        if self.status == "not cleanable":
            what = ", ".join(f"{n} {loops}" for loops, n in self.not_cleanable.items())
            return f"{name}{kind}: not cleanable in this format: {printable(what or self.reason)}"
        return f"{name}{kind}: clean{extra}"


@dataclass
class _Plan:
    lines: list[str]
    records: dict[int, dict[str, Any]]
    changed: set[int] = field(default_factory=set)
    dropped: set[int] = field(default_factory=set)
    flags: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dump_like(original: str, before: Any, after: Any) -> tuple[str, bool]:
    """``after`` as one JSON line in ``original``'s style: ``(line, exact)``, ``exact`` when
    re-encoding ``before`` in that style gives ``original`` back (whitespace around it kept)."""
    body = original.strip()
    head = original[: len(original) - len(original.lstrip())]
    tail = original[len(original.rstrip()) :]
    styles = [(a, s) for a in (False, True) for s in ((", ", ": "), (",", ":"))]
    exact = False
    for ensure_ascii, separators in styles:
        if json.dumps(before, ensure_ascii=ensure_ascii, separators=separators) == body:
            exact = True
            break
    else:
        ensure_ascii = body.isascii() and "\\u" in body
        separators = (", ", ": ") if '": ' in body or '", ' in body else (",", ":")
    line = json.dumps(after, ensure_ascii=ensure_ascii, separators=separators)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \ud800 escape: keep it escaped
        line = json.dumps(after, ensure_ascii=True, separators=separators)
    return head + line + tail, exact


def _findings(message: Message, config: TextConfig) -> list[Detection]:
    return [finding.detection for finding in _cli.scan_message(message, config, detail="none")]


def _cuts(message: Message, config: TextConfig, language: str) -> dict[str, int]:
    """The cut per channel: the first loop scan lists, again on the pruned text until scan lists none."""
    texts = {"reasoning": message.reasoning, "text": message.text}
    cuts: dict[str, int] = {}
    for _ in range(_MAX_PASSES):
        current = {
            channel: prune_text(texts[channel], cuts[channel], channel, language)[3]
            if channel in cuts
            else texts[channel]
            for channel in texts
        }
        found = _findings(Message(message.index, message.where, current["reasoning"], current["text"]), config)
        moved = False
        for detection in found:
            channel = detection.channel
            at = max(0, min(detection.cut, len(texts[channel])))
            if at < cuts.get(channel, len(texts[channel]) + 1):
                cuts[channel] = at
                moved = True
        if not moved:
            break
    return cuts


def _plan_file(
    kind: str,
    payload: Any,
    path: str,
    text: str,
    action: str,
    field_name: str | None,
    config: TextConfig,
    language: str,
) -> tuple[_Plan, CleanResult]:
    result = CleanResult(path, kind)
    plan = _Plan(text.split("\n"), {line: record for line, record in payload if line is not None})
    if len(plan.records) != len(payload):  # a JSON array: not JSON Lines
        raise _NotCleanable("not JSON Lines")
    conversations = read_payload(kind, payload, path, field_name)
    name = dataset_field(payload, field_name) if kind == "dataset" else None
    cc_lines = _claude_code_lines(payload) if kind == "claude-code" else {}
    for conversation in conversations:
        for message in conversation.messages:
            found = _findings(message, config)
            if not found:
                continue
            first = found[0]
            loop_lines = _message_lines(kind, message, cc_lines)
            info = {"loop": True, "kind": first.kind, "channel": first.channel, "cut": first.cut}
            if "message" in message.where and kind != "dataset":
                info["message"] = message.where["message"]
            if action == "flag":
                plan.flags.setdefault(loop_lines[0], []).append(info)
                result.flagged += 1
                continue
            if action == "drop":
                line = loop_lines[0]
                record = plan.records[line]
                if kind == "claude-code" or (
                    kind == "chat" and (record.get("tool_calls") or record.get("function_call"))
                ):
                    result.not_cleanable["text loops"] = result.not_cleanable.get("text loops", 0) + 1
                    continue
                if line not in plan.dropped:
                    plan.dropped.add(line)
                    result.dropped += 1
                continue
            cuts = _cuts(message, config, language)
            segments = _segments(kind, message, plan, name, cc_lines)
            texts = {"reasoning": message.reasoning, "text": message.text}
            for channel, cut in cuts.items():
                original = texts[channel]
                if "".join(_value(s) for s in segments[channel]) != original:  # not where the reader found it
                    result.not_cleanable["text loops"] = result.not_cleanable.get("text loops", 0) + 1
                    continue
                _, removed, marker, _ = prune_text(original, cut, channel, language)
                if not removed:
                    continue
                _cut_segments(segments[channel], cut, marker, _content_lists(kind, message, loop_lines, plan))
                result.removed += removed
                plan.changed.update(loop_lines)
            if any(line in plan.changed for line in loop_lines):
                result.pruned += 1
    _tool_loops(kind, conversations, action, plan, result)
    return plan, result


def _tool_loops(kind: str, conversations: list[Conversation], action: str, plan: _Plan, result: CleanResult) -> None:
    for conversation in conversations:
        runs = [run for run in find_runs(conversation.tool_calls()) if run.loop]
        for run in runs:
            lines = sorted({w["line"] for w in run.where if isinstance(w.get("line"), int)})
            if action == "flag" and lines:
                for line in lines:
                    plan.flags.setdefault(line, []).append({"loop": True, "kind": "tool_run", "calls": run.count})
                result.flagged += 1
            elif action == "drop" and kind in _RECORD_PER_CONVERSATION and lines:
                if lines[0] not in plan.dropped:
                    plan.dropped.add(lines[0])
                    result.dropped += 1
            else:
                result.not_cleanable["tool-call loops"] = result.not_cleanable.get("tool-call loops", 0) + 1


def _claude_code_lines(payload: Any) -> dict[tuple[Any, Any], list[int]]:
    """Claude Code: the lines of each message, by ``(parent_tool_use_id, message key)``."""
    out: dict[tuple[Any, Any], list[int]] = {}
    for line, record in payload:
        message = record.get("message")
        if record.get("type") != "assistant" or not isinstance(message, dict):
            continue
        key = message.get("id") or f"@line{line}"
        out.setdefault((record.get("parent_tool_use_id"), key), []).append(line)
    return out


def _message_lines(kind: str, message: Message, cc_lines: dict[tuple[Any, Any], list[int]]) -> list[int]:
    where = message.where
    if kind == "claude-code":
        key = where.get("message_id") or f"@line{where['line']}"
        return cc_lines.get((where.get("parent_tool_use_id"), key), [where["line"]])
    return [where["line"]]


def _content_lists(kind: str, message: Message, lines: list[int], plan: _Plan) -> list[list[Any]]:
    """The lists of parts / blocks a later part of a cut channel is removed from."""
    if kind == "claude-code":
        bodies = [plan.records[line]["message"] for line in lines]
    elif kind == "chat-records":
        bodies = [plan.records[lines[0]]["messages"][message.where["message"]]]
    else:
        bodies = [plan.records[lines[0]]]
    out = []
    for body in bodies:
        for key in ("content", "reasoning_content", "reasoning"):
            if isinstance(body.get(key), list):
                out.append(body[key])
    return out


def _segments(
    kind: str, message: Message, plan: _Plan, name: str | None, cc_lines: dict[tuple[Any, Any], list[int]]
) -> dict[str, list[_Segment]]:
    if kind == "dataset":
        return {"reasoning": [(plan.records[message.where["line"]], name)], "text": []}
    if kind == "chat":
        return _chat_segments(plan.records[message.where["line"]])
    if kind == "chat-records":
        return _chat_segments(plan.records[message.where["line"]]["messages"][message.where["message"]])
    out: dict[str, list[_Segment]] = {"reasoning": [], "text": []}
    for line in _message_lines(kind, message, cc_lines):
        body = plan.records[line]["message"]
        content = body.get("content")
        if isinstance(content, str):
            out["text"].append((body, "content"))
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                out["text"].append((block, "text"))
            elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                out["reasoning"].append((block, "thinking"))
    return out


class _NotCleanable(Exception):
    pass


def _render(plan: _Plan, originals: dict[int, Any], result: CleanResult) -> str:
    out = []
    for number, line in enumerate(plan.lines, 1):
        if number in plan.dropped:
            continue
        if number in plan.changed or number in plan.flags:
            record = plan.records[number]
            flags = plan.flags.get(number)
            if flags:
                record["loopguard"] = flags[0] if len(flags) == 1 else {"loop": True, "loops": flags}
            line, exact = _dump_like(line, originals[number], record)
            result.styled += exact
        out.append(line)
    return "\n".join(out)


def _stat(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns


def _report_other(kind: str, payload: Any, path: str, config: TextConfig, result: CleanResult) -> None:
    """A format clean does not write: its loops, counted as scan counts them, are not cleanable."""
    try:
        conversations = read_payload(kind, payload, path)
    except InputError as exc:
        result.status, result.reason = "unreadable", str(exc)
        return
    report = _cli.FileReport(path, kind)
    for conversation in conversations:
        _cli.scan_conversation(conversation, config, report, detail="none")
    counts = report.counts()
    if counts["text loops"]:
        result.not_cleanable["text loops"] = counts["text loops"]
    loops = sum(1 for run in report.tool_runs if run.loop)
    if loops:
        result.not_cleanable["tool-call loops"] = loops
    if result.not_cleanable:
        result.status = "not cleanable"


def clean_file(
    path: str,
    *,
    action: str = "prune",
    field_name: str | None = None,
    config: TextConfig | None = None,
    language: str = "auto",
    dry_run: bool = False,
    force: bool = False,
    backups: _Backups | None = None,
) -> CleanResult:
    """Clean one file (see the module docs); never raises for bad input."""
    config = config or TextConfig()
    result = CleanResult(path)
    shown, path = path, os.path.realpath(path)  # a symbolic link: its target is cleaned, the link stays
    try:
        size, mtime = _stat(path)
        if not force and not dry_run and time.time() - mtime / 1e9 < RECENT_SECONDS:
            result.status = "refused"
            result.reason = (
                f"modified {max(0.0, time.time() - mtime / 1e9):.0f} s ago (still being written?); --force to clean it"
            )
            return result
        with open(path, "rb") as fh:
            data = fh.read()
        if compression_of(path) is not None:
            result.format, result.status = "compressed", "not cleanable"
            result.reason = "compressed: decompress it to clean it"
            return result
        bom = "\ufeff" if data.startswith(b"\xef\xbb\xbf") else ""
        text = decode_text(data, shown)
        kind, payload = sniff(text, shown, field=field_name)
        result.format = kind
        if kind not in _CLEANABLE:
            _report_other(kind, payload, shown, config, result)
            return result
        originals = {line: json.loads(json.dumps(record)) for line, record in payload if line is not None}
        plan, planned = _plan_file(kind, payload, shown, text, action, field_name, config, language)
    except _NotCleanable as exc:
        result.status, result.reason = "not cleanable", str(exc)
        return result
    except InputError as exc:
        result.status, result.reason = "unreadable", str(exc)
        return result
    except (OSError, ValueError, RecursionError) as exc:
        result.status, result.reason = "unreadable", f"{shown}: {exc}"
        return result
    result = planned
    result.path = shown
    if not result.records:
        result.status = "not cleanable" if result.not_cleanable else "clean"
        return result
    new = (bom + _render(plan, originals, result)).encode("utf-8")
    if new == data:
        result.status = "clean"
        return result
    if dry_run:
        result.status = "would clean"
        return result
    assert backups is not None
    try:
        result.backup = _replace(path, data, new, (size, mtime), backups, force)
        result.status = "cleaned"
    except _Refused as exc:
        result.status, result.reason = "refused", str(exc)
    except OSError as exc:
        result.status, result.reason = "refused", f"cannot write: {exc.strerror or exc}"
    return result


class _Refused(Exception):
    pass


def _write_temp(path: str, data: bytes) -> str:
    directory = os.path.dirname(os.path.abspath(path))
    fd, temp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".loopguard-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.chmod(temp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
    except BaseException:
        os.unlink(temp)
        raise
    return temp


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _replace(path: str, data: bytes, new: bytes, seen: tuple[int, int], backups: _Backups, force: bool) -> str:
    backup = backups.save(path, data)
    temp = _write_temp(path, new)
    try:
        _before_replace(path)
        with open(path, "rb") as fh:
            now = fh.read()
        if now != data:  # even with --force: what the host wrote meanwhile would be lost
            raise _Refused("changed while it was being cleaned (still being written?); clean it when nothing writes it")
        if _stat(path) != seen and not force:
            raise _Refused("touched while it was being cleaned (still being written?); --force to clean it")
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        backups.forget(backup)
        raise
    _fsync_dir(path)
    backups.record(path, backup, data, new, seen)
    return backups.folder(path)


# --------------------------------------------------------------------------- backups


class _Backups:
    """The run's backup folders (one per folder of cleaned files, or ``--backup-dir``) and manifests."""

    def __init__(self, root: str | None, options: dict[str, Any]) -> None:
        self.root = root
        self.stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        self.options = options
        self.folders: dict[str, str] = {}
        self.entries: dict[str, list[dict[str, Any]]] = {}

    def folder(self, path: str) -> str:
        key = self.root or os.path.dirname(os.path.abspath(path))
        if key not in self.folders:
            base = self.root if self.root is not None else os.path.join(key, BACKUP_FOLDER, self.stamp)
            folder, n = base, 1
            while os.path.exists(os.path.join(folder, MANIFEST)):
                n += 1
                folder = f"{base}-{n}"
            os.makedirs(folder, exist_ok=True)
            self.folders[key] = folder
        return self.folders[key]

    def save(self, path: str, data: bytes) -> str:
        folder = self.folder(path)
        name, n = os.path.basename(path), 1
        while os.path.exists(os.path.join(folder, name)):
            n += 1
            name = f"{n}-{os.path.basename(path)}"
        target = os.path.join(folder, name)
        with open(target, "xb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        return target

    def forget(self, backup: str) -> None:
        """Remove a backup whose file was not changed (and its folders, when left empty)."""
        folder = os.path.dirname(backup)
        try:
            os.unlink(backup)
            if not os.listdir(folder):
                os.rmdir(folder)
                self.folders = {k: v for k, v in self.folders.items() if v != folder}
                if self.root is None and os.path.basename(os.path.dirname(folder)) == BACKUP_FOLDER:
                    os.rmdir(os.path.dirname(folder))  # fails, as it should, when other runs are there
        except OSError:
            pass

    def record(self, path: str, backup: str, data: bytes, new: bytes, seen: tuple[int, int]) -> None:
        folder = self.folder(path)
        after = _stat(path)
        self.entries.setdefault(folder, []).append(
            {
                "path": os.path.abspath(path),
                "backup": os.path.basename(backup),
                "sha256_before": _sha256(data),
                "sha256_after": _sha256(new),
                "size_before": seen[0],
                "size_after": after[0],
                "mtime_ns_before": seen[1],
                "mtime_ns_after": after[1],
            }
        )
        manifest = {
            "loopguard_version": __version__,
            "created": self.stamp,
            "options": self.options,
            "files": self.entries[folder],
        }
        target = os.path.join(folder, MANIFEST)
        temp = (
            _write_temp(target, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
            if os.path.exists(target)
            else None
        )
        if temp is None:
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
                fh.flush()
                os.fsync(fh.fileno())
        else:
            os.replace(temp, target)


# --------------------------------------------------------------------------- runs


def clean_paths(
    paths: Sequence[str],
    *,
    action: str = "prune",
    field_name: str | None = None,
    profile: str = "default",
    language: str = "auto",
    dry_run: bool = False,
    force: bool = False,
    backup_dir: str | None = None,
) -> list[CleanResult]:
    """Clean every file of ``paths`` (folders walked as ``scan`` walks them; dot-folders such
    as the backups skipped)."""
    config = TextConfig(profile)
    options = {"action": action, "field": field_name, "profile": profile, "force": force, "paths": list(paths)}
    backups = _Backups(backup_dir, options)
    results = []
    for path, error in expand_paths(paths):
        if path == "-":
            results.append(CleanResult(path, status="refused", reason="standard input cannot be cleaned in place"))
        elif error is not None:
            results.append(CleanResult(path, status="unreadable", reason=str(error)))
        else:
            results.append(
                clean_file(
                    path,
                    action=action,
                    field_name=field_name,
                    config=config,
                    language=language,
                    dry_run=dry_run,
                    force=force,
                    backups=backups,
                )
            )
    return results


def _manifests(paths: Sequence[str]) -> Iterator[tuple[str, str | None]]:
    """``(manifest, None)`` for each of ``paths`` with a manifest, else ``(path, why not)``."""
    for path in paths:
        manifest = os.path.join(path, MANIFEST) if os.path.isdir(path) else path
        if os.path.isfile(manifest):
            yield manifest, None
        else:
            yield path, "no backup manifest here (give a manifest.json or its backup folder)"


def undo(paths: Sequence[str], *, force: bool = False) -> list[CleanResult]:
    """Restore every file listed in the manifests (or backup folders) ``paths``, byte-identical."""
    results = []
    for manifest, error in _manifests(paths):
        if error is not None:
            results.append(CleanResult(manifest, status="unreadable", reason=error))
            continue
        try:
            with open(manifest, encoding="utf-8") as fh:
                files = json.load(fh)["files"]
            entries = [
                (str(e["path"]), str(e["backup"]), str(e["sha256_before"]), str(e["sha256_after"]), e) for e in files
            ]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            results.append(CleanResult(manifest, status="unreadable", reason=f"not a loopguard manifest: {exc}"))
            continue
        folder = os.path.dirname(manifest)
        for path, name, before, after, entry in entries:
            results.append(_restore(path, os.path.join(folder, os.path.basename(name)), before, after, entry, force))
    return results


def _restore(path: str, backup: str, before: str, after: str, entry: dict[str, Any], force: bool) -> CleanResult:
    result = CleanResult(path, status="restored")
    try:
        with open(backup, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return CleanResult(path, status="refused", reason=f"cannot read the backup {backup}: {exc.strerror or exc}")
    if _sha256(data) != before:
        return CleanResult(path, status="refused", reason=f"the backup {backup} does not match its manifest sha256")
    try:
        with open(path, "rb") as fh:
            current: bytes | None = fh.read()
    except OSError:
        current = None
    if current is not None and _sha256(current) == before:
        result.status = "already original"
        return result
    if (current is None or _sha256(current) != after) and not force:
        what = "is missing" if current is None else "changed since the clean"
        return CleanResult(path, status="refused", reason=f"the file {what}; --force to restore it anyway")
    try:
        if current is None:
            with open(path, "xb") as fh:
                fh.write(data)
        else:
            temp = _write_temp(path, data)
            os.replace(temp, path)
        _fsync_dir(path)
        mtime = entry.get("mtime_ns_before")
        if isinstance(mtime, int):
            os.utime(path, ns=(mtime, mtime))
    except OSError as exc:
        return CleanResult(path, status="refused", reason=f"cannot write: {exc.strerror or exc}")
    return result


# --------------------------------------------------------------------------- command line


def _run(args: argparse.Namespace) -> int:
    if args.undo:
        results = undo(args.paths, force=args.force)
    else:
        results = clean_paths(
            args.paths,
            action=args.action,
            field_name=args.field,
            profile=args.profile,
            dry_run=args.dry_run,
            force=args.force,
            backup_dir=args.backup_dir,
        )
    write: Callable[[str], Any] = sys.stdout.write
    if args.json:
        totals = _totals(results)
        write(
            json.dumps({"dry_run": bool(args.dry_run), "files": [r.to_dict() for r in results], "totals": totals})
            + "\n"
        )
    else:
        for result in results:
            if result.status in ("refused", "unreadable"):  # on standard error, with the reason
                print(f"loopguard: error: {printable(result.line())}", file=sys.stderr)
                continue
            shown = result.line() if not args.undo else f"{printable(result.path)}: {result.status}"
            write(printable(shown) + "\n")
        if not args.undo:
            t = _totals(results)
            verb = "would change" if args.dry_run else "changed"
            write(
                printable(
                    f"{len(results)} files, {t['files_changed']} {verb}: {t['pruned']} records pruned, "
                    f"{t['dropped']} dropped, {t['flagged']} flagged, {t['removed_code_points']} code points removed"
                )
                + "\n"
            )
    if any(r.status in ("refused", "unreadable") for r in results):
        return 2
    if args.dry_run and any(r.status == "would clean" for r in results):
        return 1
    return 0


def _totals(results: list[CleanResult]) -> dict[str, int]:
    return {
        "files": len(results),
        "files_changed": sum(r.status in ("cleaned", "would clean", "restored") for r in results),
        "pruned": sum(r.pruned for r in results),
        "dropped": sum(r.dropped for r in results),
        "flagged": sum(r.flagged for r in results),
        "removed_code_points": sum(r.removed for r in results),
        "refused": sum(r.status == "refused" for r in results),
        "unreadable": sum(r.status == "unreadable" for r in results),
    }


_DESCRIPTION = """\
Prune, drop or flag the loops already written into stored logs (chat JSONL, Claude Code session
JSONL, dataset JSONL, recorded runs with "calls" per line), with a backup and a manifest first, an
atomic replace, --dry-run and --undo.
Loops are found as `loopguard scan` finds them. Exit status: 0 nothing to clean or cleaned
(or restored), 1 --dry-run found something to clean, 2 a file was refused or unreadable.
"""


def register(commands: Any) -> None:
    """Add the ``clean`` command to the ``loopguard`` parser's subcommands."""
    clean = commands.add_parser(
        "clean",
        help="prune, drop or flag the loops in stored logs (backup, --dry-run, --undo)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    clean.add_argument(
        "paths", nargs="+", metavar="PATH", help="log files or folders (with --undo: manifests or backup folders)"
    )
    clean.add_argument("--action", choices=ACTIONS, default="prune", help="what to do to a loop (default: %(default)s)")
    clean.add_argument(
        "--field", help=f"dataset JSON Lines: the output field (default: first of {', '.join(DATASET_FIELDS)})"
    )
    clean.add_argument(
        "--profile", default="default", choices=sorted(PROFILES), help="text detector profile (default: %(default)s)"
    )
    clean.add_argument("--dry-run", action="store_true", help="print what would change; write nothing")
    clean.add_argument("--undo", action="store_true", help="restore the files of the given manifests / backup folders")
    clean.add_argument(
        "--backup-dir",
        metavar="DIR",
        help=f"backup folder (default: {BACKUP_FOLDER}/<UTC timestamp>/ beside each file)",
    )
    clean.add_argument(
        "--force",
        action="store_true",
        help="clean a file modified recently or touched during the run (never one whose content changed during it); undo a changed file",
    )
    clean.add_argument("--json", action="store_true", help="print one JSON object")
    clean.set_defaults(run=_run)
