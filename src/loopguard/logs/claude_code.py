"""Claude Code ``--output-format stream-json`` session logs.

Assistant lines (``type: "assistant"``) carry an Anthropic message whose
``content`` holds ``text``, ``thinking`` and ``tool_use`` blocks; Claude Code
writes one block per line, so consecutive lines share one ``message.id``.
All blocks of one message id form one assistant message: its ``text`` blocks
are concatenated (with nothing in between) into the text channel, its
``thinking`` blocks into the reasoning channel, and its ``tool_use`` blocks
(``name`` + ``input``) are its tool calls.  Tool results come from user
lines' ``tool_result`` blocks, matched by ``tool_use_id`` (``content`` a
string or a list of blocks, ``is_error``).  User text, system and result
lines are not model output and are not scanned.

Lines of a sub-agent (``parent_tool_use_id`` set) form their own
conversation, so their tool calls never join the main agent's runs.
``where["message"]`` is the 0-based index of the assistant message (by
message id) in its conversation; ``where["line"]`` the 1-based line of its
first block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ._util import require_str
from .session import Conversation, Message, ToolCall
from .sniff import Records

__all__ = ["ClaudeCodeStream", "read_claude_code"]


@dataclass
class _Builder:
    where: dict[str, Any]
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: list[tuple[str, Any, Any, dict[str, Any]]] = field(default_factory=list)  # name, input, id, where


def _identifier(value: Any, name: str, path: str, line: int | None) -> str | int | None:
    """An id as found in the log (string, integer or missing); anything else is malformed."""
    if value is None or isinstance(value, (str, int)):
        return value
    raise InputError(f"{name} must be a string, not {type(value).__name__}", path=path, line=line)


def read_claude_code(records: Records, path: str) -> list[Conversation]:
    """Read a Claude Code stream-json log.

    Parameters
    ----------
    records : Records
        ``(line, object)`` pairs from the sniffer.
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        The main conversation first, then one per sub-agent, in order of
        first appearance.

    Raises
    ------
    InputError
        for an assistant line without a ``message`` object or a malformed
        block, naming the line.
    """
    results = _tool_results(records, path)
    groups: dict[Any, dict[Any, _Builder]] = {}
    for line, record in records:
        if record.get("type") != "assistant":
            continue
        message = record.get("message")
        if not isinstance(message, dict):
            raise InputError("assistant line without a 'message' object", path=path, line=line)
        parent = _identifier(record.get("parent_tool_use_id"), "parent_tool_use_id", path, line)
        messages = groups.setdefault(parent, {})
        key = _identifier(message.get("id"), "message.id", path, line) or f"@line{line}"
        builder = messages.get(key)
        if builder is None:
            where: dict[str, Any] = {} if parent is None else {"parent_tool_use_id": parent}
            where.update({"message": len(messages), "line": line})
            if message.get("id"):
                where["message_id"] = message["id"]
            builder = messages[key] = _Builder(where)
        _add_blocks(builder, message.get("content"), path, line)
    return [_conversation(parent, messages, results) for parent, messages in _main_first(groups)]


def _main_first(groups: dict[Any, dict[Any, _Builder]]) -> list[tuple[Any, dict[Any, _Builder]]]:
    items = list(groups.items())
    return sorted(items, key=lambda item: item[0] is not None)  # stable: sub-agents keep their order


def _add_blocks(builder: _Builder, content: Any, path: str, line: int | None) -> None:
    if isinstance(content, str):
        builder.text.append(content)
        return
    if content is None:
        return
    if not isinstance(content, list):
        raise InputError(
            f"message.content must be a list of blocks, not {type(content).__name__}", path=path, line=line
        )
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            builder.text.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            builder.reasoning.append(block["thinking"])
        elif kind == "tool_use":
            name = require_str(block.get("name"), what="tool_use.name", path=path, line=line)
            where = {**builder.where, "line": line, "call": len(builder.calls)}
            where.pop("message_id", None)
            builder.calls.append((name, block.get("input"), block.get("id"), where))


def _tool_results(records: Records, path: str) -> dict[Any, tuple[Any, bool]]:
    results: dict[Any, tuple[Any, bool]] = {}
    for line, record in records:
        if record.get("type") != "user" or not isinstance(record.get("message"), dict):
            continue
        content = record["message"].get("content")
        if not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result" and "tool_use_id" in block:
                value = block.get("content")
                call_id = _identifier(block["tool_use_id"], "tool_use_id", path, line)
                results.setdefault(call_id, ("" if value is None else value, bool(block.get("is_error"))))
    return results


def _conversation(parent: Any, messages: dict[Any, _Builder], results: dict[Any, tuple[Any, bool]]) -> Conversation:
    out = []
    for builder in messages.values():
        calls = []
        for name, args, call_id, where in builder.calls:
            result, error = results.get(call_id, (None, False)) if call_id is not None else (None, False)
            calls.append(ToolCall(name, args, result, error, where))
        message = Message(
            builder.where["message"],
            builder.where,
            reasoning="".join(builder.reasoning),
            text="".join(builder.text),
            tool_calls=calls,
        )
        out.append(message)
    return Conversation({} if parent is None else {"parent_tool_use_id": parent}, out)


class ClaudeCodeStream:
    """Read a Claude Code log record by record, handing out each assistant message once it ends.

    A message (the blocks of one ``message.id``) ends when the next assistant
    line of its conversation (main agent or one sub-agent) starts another
    message, or at the end of the file; the tool results of its calls are
    the ``tool_result`` blocks read by then (Claude Code writes them before
    the next assistant message).  Memory is the open message of each
    conversation and its calls, not the file.  The messages are those of
    :func:`read_claude_code`, given the same records, except in a log that
    answers a call after its conversation's next message has started (that
    result is not matched) or writes blocks of one message id apart, with
    another message of the same conversation between (they form two messages).

    Parameters
    ----------
    path : str
        Named in errors.

    Attributes
    ----------
    groups : list
        The conversations' ``parent_tool_use_id`` (``None`` for the main
        agent) in order of their first assistant line.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self.groups: list[Any] = []
        self._open: dict[Any, tuple[Any, _Builder]] = {}  # parent -> (message key, builder)
        self._counts: dict[Any, int] = {}  # parent -> messages started
        self._waiting: dict[Any, int] = {}  # call id -> open calls with it
        self._results: dict[Any, tuple[Any, bool]] = {}  # call id -> its first result

    def add(self, line: int | None, record: dict[str, Any]) -> list[tuple[Any, Message]]:
        """Read one record; the messages it ended, as ``(parent_tool_use_id, message)`` pairs.

        Raises
        ------
        InputError
            for a malformed assistant or user line (the record is then not
            used: skip it and go on).
        """
        kind = record.get("type")
        if kind == "user":
            self._add_results(line, record)
            return []
        if kind != "assistant":
            return []
        message = record.get("message")
        if not isinstance(message, dict):
            raise InputError("assistant line without a 'message' object", path=self.path, line=line)
        parent = _identifier(record.get("parent_tool_use_id"), "parent_tool_use_id", self.path, line)
        key = _identifier(message.get("id"), "message.id", self.path, line) or f"@line{line}"
        current = self._open.get(parent)
        if current is not None and current[0] == key:
            builder = current[1]
            trial = _Builder(builder.where, calls=list(builder.calls))
        else:
            where: dict[str, Any] = {} if parent is None else {"parent_tool_use_id": parent}
            where.update({"message": self._counts.get(parent, 0), "line": line})
            if message.get("id"):
                where["message_id"] = message["id"]
            builder = trial = _Builder(where)
        _add_blocks(trial, message.get("content"), self.path, line)  # raises before anything changes
        out = []
        if trial is builder:  # a new message: the conversation's open one has ended
            if current is not None:
                out.append((parent, self._close(current[1])))
            if parent not in self._counts:
                self.groups.append(parent)
            self._counts[parent] = self._counts.get(parent, 0) + 1
            self._open[parent] = (key, builder)
            added = builder.calls
        else:
            builder.text += trial.text
            builder.reasoning += trial.reasoning
            added = trial.calls[len(builder.calls) :]
            builder.calls = trial.calls
        for _, _, call_id, _ in added:
            if call_id is not None:
                self._waiting[call_id] = self._waiting.get(call_id, 0) + 1
        return out

    def finish(self) -> list[tuple[Any, Message]]:
        """The messages still open at the end of the file, main agent first."""
        out = [(parent, self._close(builder)) for parent, (_, builder) in self._open.items()]
        self._open.clear()
        return sorted(out, key=lambda item: item[0] is not None)

    def _add_results(self, line: int | None, record: dict[str, Any]) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            return
        found = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result" and "tool_use_id" in block:
                value = block.get("content")
                call_id = _identifier(block["tool_use_id"], "tool_use_id", self.path, line)
                found.append((call_id, ("" if value is None else value, bool(block.get("is_error")))))
        for call_id, result in found:  # after the whole line is known good
            if call_id in self._waiting:
                self._results.setdefault(call_id, result)

    def _close(self, builder: _Builder) -> Message:
        calls = []
        for name, args, call_id, where in builder.calls:
            result, error = self._results.get(call_id, (None, False)) if call_id is not None else (None, False)
            calls.append(ToolCall(name, args, result, error, where))
            if call_id is not None:
                left = self._waiting.get(call_id, 0) - 1
                if left > 0:
                    self._waiting[call_id] = left
                else:
                    self._waiting.pop(call_id, None)
                    self._results.pop(call_id, None)
        return Message(
            builder.where["message"],
            builder.where,
            reasoning="".join(builder.reasoning),
            text="".join(builder.text),
            tool_calls=calls,
        )
