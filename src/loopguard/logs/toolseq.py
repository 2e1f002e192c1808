"""Tool-call sequences, without model text.

* ``tool-calls``: a JSON array of ``{"tool", "args", "result", "error"?}``,
  one agent's calls in order (the format of ``data/cases/*.json``);
  ``where["call"]`` is the 0-based index into the array.
* ``tool-call-records``: JSON Lines of recorded agent runs, one run per line
  with its calls in a ``calls`` list of the same objects (the layout of
  ``data/real/agentbench``; other fields such as ``id``, ``label`` or
  ``model`` are kept out of the scan).  Each record that holds ``calls`` is
  its own conversation; ``where`` is ``{"line": n, "id": ...}`` (``id`` only
  when the record has one) and a call's ``where`` adds ``call``, its 0-based
  index in ``calls``.

``error`` is optional (absent = false).
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ._util import record_where, require_str
from .session import Conversation, Message, ToolCall
from .sniff import Records

__all__ = ["read_tool_call_records", "read_tool_calls"]


def read_tool_calls(doc: list[Any], path: str) -> list[Conversation]:
    """Read a tool-call sequence.

    Parameters
    ----------
    doc : list
        The parsed array.
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        One conversation with one message (index 0) holding every call.

    Raises
    ------
    InputError
        for an entry that is not an object or has no string ``tool``.
    """
    return [Conversation({}, [Message(0, {}, tool_calls=_calls(doc, path, None, {}))])]


def _calls(entries: list[Any], path: str, line: int | None, where: dict[str, Any]) -> list[ToolCall]:
    calls = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise InputError(f"entry {index} of the tool-call list is not an object", path=path, line=line)
        name = require_str(entry.get("tool"), what=f"entry {index}: 'tool'", path=path, line=line, nonempty=True)
        at = {**where, "call": index}
        calls.append(ToolCall(name, entry.get("args"), entry.get("result"), bool(entry.get("error", False)), at))
    return calls


def read_tool_call_records(records: Records, path: str) -> list[Conversation]:
    """Read JSON Lines of recorded agent runs (``calls`` per line).

    Parameters
    ----------
    records : Records
        ``(line, object)`` pairs from the sniffer.
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        One per record that holds ``calls``, with one message (index 0)
        holding them; records where ``calls`` is missing or null are skipped.

    Raises
    ------
    InputError
        for a record whose ``calls`` is neither a list nor null, or a call
        that is not an object or has no non-empty string ``tool``, naming its
        line.
    """
    conversations = []
    for line, record in records:
        calls = record.get("calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise InputError(f"'calls' must be a list, not {type(calls).__name__}", path=path, line=line)
        where = record_where(line, record)
        message = Message(0, dict(where), tool_calls=_calls(calls, path, line, where))
        conversations.append(Conversation(dict(where), [message]))
    return conversations
