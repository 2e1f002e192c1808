"""What the host integrations (issue 19) share: the fail-open log line and the text-loop check
of a finished model message.  No host package is imported here."""

from __future__ import annotations

import logging
import traceback
from collections.abc import Iterable

from .. import messages
from ..config import TextConfig
from ..text import Detection, scan_text

__all__ = ["CHANNEL_NAMES", "first_strong_loop", "log_failed_open", "text_loop_reason"]

logger = logging.getLogger("loopguard.integrations")

#: A channel's name in reasons: ``(English, Chinese)``.
CHANNEL_NAMES = {"reasoning": ("reasoning", "推理"), "text": ("answer", "正文")}


def log_failed_open(exc: BaseException, what: str, goes_on: str) -> None:
    """Log an error inside loopguard that the host survives (``loopguard failed <what> (<type>);
    <goes_on>`` and the frames): the type and frames only, as the message of an arbitrary error
    might quote a tool's arguments."""
    frames = "".join(traceback.format_tb(exc.__traceback__))
    logger.error("loopguard failed %s (%s); %s\n%s", what, type(exc).__name__, goes_on, frames)


def first_strong_loop(channels: Iterable[tuple[str, str]], config: TextConfig | None) -> tuple[str, Detection] | None:
    """``(channel, detection)`` of the first strong text loop in a finished model message, given
    as ``(channel, text)`` pairs (``"text"`` / ``"reasoning"``) in the order to check; ``None``
    when none loops.  Positions are code points of that channel's text."""
    for channel, text in channels:
        if text:
            for found in scan_text(text, channel, config):
                if found.strength == "strong":
                    return channel, found
    return None


def text_loop_reason(channel: str, found: Detection) -> str:
    """``[loopguard] The model's <answer|reasoning> started repeating itself (<kind> at <pos>).``
    (and one info log line, without the text)."""
    logger.info("loopguard: text loop (%s) in the model's %s at %d", found.kind, channel, found.position)
    return f"{messages.SOURCE_TAG} The model's {CHANNEL_NAMES[channel][0]} started repeating itself ({found.kind} at {found.position})."
