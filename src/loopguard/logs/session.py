"""The format-agnostic session representation every log reader produces.

A log file becomes a :class:`LogFile`: one or more :class:`Conversation`
objects (a chat-records, tool-call-records or dataset file holds one per record), each a list of
assistant :class:`Message` objects with their two channels and their
:class:`ToolCall` objects.  The scanner only ever sees these classes.

Every object carries a ``where`` dict that tells a human where it sits in the
file: ``line`` (1-based line of the file), ``message`` (0-based message
index), ``step`` (0-based index into a SWE-agent ``trajectory``), ``call``
(0-based tool-call index), ``id`` (a dataset or chat record's ``id``),
``message_id`` (a Claude Code message id).  Only the keys that make sense for
the format are present.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Conversation", "LogFile", "Message", "ToolCall"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call made by the model, with its result when the log has it.

    Attributes
    ----------
    name : str
        The tool name (for SWE-agent: the first word of the action).
    args : Any
        The arguments as logged (object, JSON string or plain string).  Never
        printed: they may contain secrets.
    result : Any
        The tool's result as logged; ``None`` when the log holds no result.
    error : bool
        Whether the result was flagged as an error.
    where : dict
        Where the call sits in the file (see the module docstring).
    """

    name: str
    args: Any
    result: Any = None
    error: bool = False
    where: dict[str, Any] = field(default_factory=dict)


@dataclass
class Message:
    """One assistant message (one model attempt): its channels and tool calls.

    Attributes
    ----------
    index : int
        0-based index of the message (or step, or record) in its conversation,
        as the reader defines it; ``where`` has the user-facing labels.
    where : dict
        Where the message sits in the file.
    reasoning : str
        The reasoning channel (``reasoning_content``, thinking blocks, or a
        dataset record's text); ``""`` when absent.
    text : str
        The answer-text channel; ``""`` when absent.
    tool_calls : list[ToolCall]
        The calls the message made, in order.
    """

    index: int
    where: dict[str, Any]
    reasoning: str = ""
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class Conversation:
    """One agent conversation: its assistant messages in order.

    Tool-call runs are looked for within one conversation, never across two.

    Attributes
    ----------
    where : dict
        Where the conversation sits (``{}`` for a whole-file session; ``line``
        and ``id`` for one record of a chat-records or dataset file).
    messages : list[Message]
        The assistant messages.
    """

    where: dict[str, Any]
    messages: list[Message] = field(default_factory=list)

    def tool_calls(self) -> list[ToolCall]:
        """All tool calls of the conversation, in order."""
        return [call for message in self.messages for call in message.tool_calls]


@dataclass
class LogFile:
    """A parsed log file.

    Attributes
    ----------
    path : str
        The path as given (or as found under a directory).
    format : str
        ``empty``, ``plain``, ``chat``, ``chat-records``, ``claude-code``,
        ``swe-agent``, ``tool-calls``, ``tool-call-records`` or ``dataset``.
    conversations : list[Conversation]
        The sessions in the file.
    """

    path: str
    format: str
    conversations: list[Conversation] = field(default_factory=list)
