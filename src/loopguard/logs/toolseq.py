"""Tool-call sequences: a JSON array of ``{"tool", "args", "result", "error"?}``.

The format of ``data/cases/*.json``: one agent's calls in order, with no model
text.  ``error`` is optional (absent = false).  ``where["call"]`` is the
0-based index into the array.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ._util import require_str
from .session import Conversation, Message, ToolCall

__all__ = ["read_tool_calls"]


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
    calls = []
    for index, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise InputError(f"entry {index} of the tool-call list is not an object", path=path)
        name = require_str(entry.get("tool"), what=f"entry {index}: 'tool'", path=path, line=None, nonempty=True)
        result = entry.get("result")
        calls.append(ToolCall(name, entry.get("args"), result, bool(entry.get("error", False)), {"call": index}))
    return [Conversation({}, [Message(0, {}, tool_calls=calls)])]
