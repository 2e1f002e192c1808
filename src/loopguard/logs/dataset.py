"""Dataset JSON Lines: one record per line with the model output in a string field.

The field is ``--field NAME`` when given, else the first of ``text``,
``output``, ``response``, ``completion`` that the first such record holds as a
string.  Each record is its own conversation with one message whose
*reasoning* channel is the field: dataset outputs usually hold reasoning and
answer together, and scanning them as reasoning means fenced code is not
masked.  ``where`` is ``{"line": n, "id": ...}`` (``id`` only when the record
has one).  Records where the field is missing or null are skipped.
"""

from __future__ import annotations

from typing import Any

from ..errors import InputError
from ._util import record_where
from .session import Conversation, Message
from .sniff import DATASET_FIELDS, Records

__all__ = ["dataset_field", "read_dataset"]


def dataset_field(records: Records, field: str | None) -> str | None:
    """The field holding the model output: ``field``, or the first of :data:`DATASET_FIELDS` found."""
    if field is not None:
        return field
    for _, record in records:
        for name in DATASET_FIELDS:
            if isinstance(record.get(name), str):
                return name
    return None


def read_dataset(records: Records, path: str, field: str | None = None) -> list[Conversation]:
    """Read a dataset file.

    Parameters
    ----------
    records : Records
        ``(line, object)`` pairs from the sniffer.
    path : str
        Named in errors.
    field : str | None
        The output field (``--field``); ``None`` picks one (see module docs).

    Returns
    -------
    list[Conversation]
        One per record that holds the field.

    Raises
    ------
    InputError
        when a record's field is neither a string nor null, naming its line.
    """
    name = dataset_field(records, field)
    conversations = []
    for line, record in records:
        value: Any = record.get(name) if name is not None else None
        if value is None:
            continue
        if not isinstance(value, str):
            raise InputError(f"field {name!r} must be a string, not {type(value).__name__}", path=path, line=line)
        where = record_where(line, record)
        conversations.append(Conversation(dict(where), [Message(0, where, reasoning=value)]))
    return conversations
