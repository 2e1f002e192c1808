"""OpenAI-style chat logs: one message per JSON line, or one record per line with ``messages``.

A message is an object with ``role``.  Assistant messages give the channels:
``content`` (a string, or a list of parts whose ``text`` is concatenated) is
the text channel; ``reasoning_content`` (or ``reasoning``), plus any
``reasoning``/``thinking`` parts of ``content``, is the reasoning channel.
Their ``tool_calls`` (``function.name`` / ``function.arguments``) are the tool
calls, answered by later ``role: "tool"`` messages with the same
``tool_call_id`` (the first unanswered call with that id is matched, so ids
reused across turns work).  The legacy ``function_call`` is answered by the
next ``role: "function"`` message with the same ``name``.

Message indices (``where["message"]``) are 0-based: the index into a record's
``messages`` array, or, for one message per line, the count of earlier lines
that hold a message (lines without ``role`` are skipped as metadata).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import InputError
from ._util import parts_text, reasoning_parts, record_where, require_str
from .session import Conversation, Message, ToolCall
from .sniff import Records

__all__ = ["ChatStream", "read_chat", "read_chat_records"]


@dataclass
class _Pending:
    name: str
    args: Any
    where: dict[str, Any]
    call_id: Any
    legacy: bool = False
    result: Any = None
    error: bool = False

    def freeze(self) -> ToolCall:
        return ToolCall(self.name, self.args, self.result, self.error, self.where)


@dataclass
class _Builder:
    message: Message
    calls: list[_Pending] = field(default_factory=list)


def read_chat(records: Records, path: str) -> list[Conversation]:
    """Read a file of one chat message per line (or a JSON array of messages).

    Parameters
    ----------
    records : Records
        ``(line, object)`` pairs from the sniffer.
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        One conversation holding every assistant message.

    Raises
    ------
    InputError
        for a malformed message, naming its line.
    """
    items = [(line, record) for line, record in records if isinstance(record.get("role"), str)]
    entries = [(index, line, record) for index, (line, record) in enumerate(items)]
    return [Conversation({}, _read_messages(entries, {}, path))]


def read_chat_records(records: Records, path: str) -> list[Conversation]:
    """Read a file of one chat record per line, each holding ``messages: [...]``.

    Parameters
    ----------
    records : Records
        ``(line, object)`` pairs from the sniffer; records without a
        ``messages`` list are skipped.
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        One conversation per record; its ``where`` holds the record's
        ``line`` and, when present, its ``id``.

    Raises
    ------
    InputError
        for a malformed message, naming the record's line.
    """
    conversations = []
    for line, record in records:
        messages = record.get("messages")
        if not isinstance(messages, list):
            continue
        base = record_where(line, record)
        entries = [
            (index, None, message)
            for index, message in enumerate(messages)
            if isinstance(message, dict) and isinstance(message.get("role"), str)
        ]
        conversations.append(Conversation(dict(base), _read_messages(entries, base, path)))
    return conversations


def _read_messages(
    entries: Sequence[tuple[int, int | None, dict[str, Any]]], base: dict[str, Any], path: str
) -> list[Message]:
    builders: list[_Builder] = []
    open_calls: list[_Pending] = []
    for index, line, record in entries:
        at = line if line is not None else base.get("line")
        role = record["role"]
        if role == "assistant":
            where = {**base, "message": index}
            if line is not None:
                where["line"] = line
            builder = _assistant(record, where, path, at)
            builders.append(builder)
            open_calls += builder.calls
        elif role == "tool":
            _answer(open_calls, record, legacy=False, key=record.get("tool_call_id"))
        elif role == "function":
            _answer(open_calls, record, legacy=True, key=record.get("name"))
    for builder in builders:
        builder.message.tool_calls = [pending.freeze() for pending in builder.calls]
    return [builder.message for builder in builders]


def _assistant(record: dict[str, Any], where: dict[str, Any], path: str, line: int | None) -> _Builder:
    content = record.get("content")
    reasoning_value = record.get("reasoning_content")
    if reasoning_value is None:
        reasoning_value = record.get("reasoning")
    reasoning = parts_text(reasoning_value, what="reasoning_content", path=path, line=line, reasoning=True)
    reasoning += reasoning_parts(content, path=path, line=line)
    text = parts_text(content, what="content", path=path, line=line)
    builder = _Builder(Message(where["message"], where, reasoning=reasoning, text=text))
    tool_calls = record.get("tool_calls")
    if tool_calls is None:
        tool_calls = []
    if not isinstance(tool_calls, list):
        raise InputError(f"tool_calls must be a list, not {type(tool_calls).__name__}", path=path, line=line)
    for j, call in enumerate(tool_calls):
        if not isinstance(call, dict):
            raise InputError(f"tool_calls[{j}] must be an object", path=path, line=line)
        function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
        name = require_str(
            function.get("name"), what=f"tool_calls[{j}].function.name", path=path, line=line, nonempty=True
        )
        args = function.get("arguments", function.get("args"))
        builder.calls.append(_Pending(name, args, {**where, "call": j}, call.get("id")))
    legacy = record.get("function_call")
    if isinstance(legacy, dict):
        name = require_str(legacy.get("name"), what="function_call.name", path=path, line=line, nonempty=True)
        where_call = {**where, "call": len(builder.calls)}
        builder.calls.append(_Pending(name, legacy.get("arguments"), where_call, None, legacy=True))
    return builder


def _answer(open_calls: list[_Pending], record: dict[str, Any], *, legacy: bool, key: Any) -> None:
    """Give ``record``'s content to the first open call it answers (by call id, or by name for legacy calls)."""
    for i, pending in enumerate(open_calls):
        if pending.legacy == legacy and (pending.name if legacy else pending.call_id) == key:
            content = record.get("content")
            pending.result = "" if content is None else content  # answered, even if empty
            pending.error = bool(record.get("is_error", False))
            del open_calls[i]
            return


class ChatStream:
    """Read a file of one chat message per line record by record, handing out each assistant
    message once it ends.

    An assistant message ends at the next assistant message or at the end of
    the file; its calls are answered by the ``tool``/``function`` messages
    read by then (a chat log answers them before the model speaks again).
    Memory is the open message, not the file.  The messages are those of
    :func:`read_chat`, given the same records, except in a log that answers
    a call after a later assistant message (that answer is not matched to
    it).

    Parameters
    ----------
    path : str
        Named in errors.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._index = 0
        self._open: _Builder | None = None
        self._calls: list[_Pending] = []

    def add(self, line: int | None, record: dict[str, Any]) -> list[Message]:
        """Read one record; the message it ended (none or one).

        Raises
        ------
        InputError
            for a malformed assistant message (the record is then not used:
            skip it and go on).
        """
        role = record.get("role")
        if not isinstance(role, str):
            return []
        out = []
        if role == "assistant":
            where: dict[str, Any] = {"message": self._index}
            if line is not None:
                where["line"] = line
            builder = _assistant(record, where, self.path, line)
            out = self.finish()
            self._open = builder
            self._calls = list(builder.calls)
        elif role == "tool":
            _answer(self._calls, record, legacy=False, key=record.get("tool_call_id"))
        elif role == "function":
            _answer(self._calls, record, legacy=True, key=record.get("name"))
        self._index += 1
        return out

    def finish(self) -> list[Message]:
        """The open message (at the end of the file), if any."""
        builder, self._open = self._open, None
        if builder is None:
            return []
        builder.message.tool_calls = [pending.freeze() for pending in builder.calls]
        return [builder.message]
