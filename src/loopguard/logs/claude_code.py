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

__all__ = ["read_claude_code"]


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
