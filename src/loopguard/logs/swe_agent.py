"""SWE-agent ``.traj`` trajectories.

A ``.traj`` file is one JSON object whose ``trajectory`` is a list of steps.
Each step is one model attempt: its model text goes to the text channel, its
``action`` is its one tool call, and its ``observation`` that call's result.
The text channel is ``thought`` (the model text without the action; SWE-agent's
``response`` is ``thought`` plus the action in a code fence), or ``response``
when a step has no ``thought`` string: so the action, which may hold secrets,
is reported only as a tool call.

The tool call's name is the action's first word (``submit``, ``edit``,
``python``...) and its arguments are the whole action string, so two steps
are the same call exactly when their actions are identical.  Steps are
0-based indices into ``trajectory`` (``where["step"]``); SWE-agent logs do
not flag errors, so ``error`` is always false.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from .session import Conversation, Message, ToolCall

__all__ = ["command_name", "read_swe_agent"]


def command_name(action: str) -> str:
    """The first word of an action (``"submit"`` for ``"submit flag{...}"``); ``""`` if blank."""
    words = action.split(None, 1)
    return words[0] if words else ""


def read_swe_agent(doc: dict[str, Any], path: str) -> list[Conversation]:
    """Read a SWE-agent trajectory.

    Parameters
    ----------
    doc : dict
        The parsed ``.traj`` object (with a ``trajectory`` list).
    path : str
        Named in errors.

    Returns
    -------
    list[Conversation]
        One conversation, one message per step (``index`` = step).

    Raises
    ------
    InputError
        for a step that is not an object or has a non-string ``action``.
    """
    messages = []
    for step, entry in enumerate(doc["trajectory"]):
        if not isinstance(entry, dict):
            raise InputError(f"trajectory[{step}] is not an object", path=path)
        thought = entry.get("thought")
        if not isinstance(thought, str):
            thought = entry.get("response")
        text = thought if isinstance(thought, str) else ""
        where = {"step": step}
        calls = []
        action = entry.get("action")
        if action is not None and not isinstance(action, str):
            raise InputError(f"trajectory[{step}].action must be a string, not {type(action).__name__}", path=path)
        if action and action.strip():
            calls.append(ToolCall(command_name(action), action, entry.get("observation"), False, dict(where)))
        messages.append(Message(step, where, text=text, tool_calls=calls))
    return [Conversation({}, messages)]
