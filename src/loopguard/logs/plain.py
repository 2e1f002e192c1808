"""Plain text and Markdown: the whole file is one text channel."""

from __future__ import annotations

from .session import Conversation, Message

__all__ = ["read_plain"]


def read_plain(text: str, path: str) -> list[Conversation]:
    """Read a plain-text file as one message whose text channel is the whole file.

    Parameters
    ----------
    text : str
        The decoded file (newlines as in the file, so offsets match it).
    path : str
        Unused; kept for the common reader signature.

    Returns
    -------
    list[Conversation]
        One conversation with one message (index 0, ``where`` empty).
    """
    return [Conversation({}, [Message(0, {}, text=text)])]
