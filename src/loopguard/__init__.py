"""loopguard: catch LLM agents stuck in loops, and break them.

Text loops (a paragraph copied again and again, "Now. OK. Wait." rotations)
are found by a compiled stream core (:mod:`loopcore`) at a cost of nanoseconds
per character; positions are Unicode code points into the original text.
Tool loops (the same call returning the same result, A-B-A-B cycles,
reworded searches, errors walked around) are stopped by :class:`ToolGuard`;
:class:`LoopBrake` is the seed's exact consecutive-call brake.

>>> import loopguard
>>> [d.kind for d in loopguard.scan_text("Wait, let me recheck the sum. " * 40, config="rescue")]
['cycle']
"""

from __future__ import annotations

import logging as _logging
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

from .attempts import AttemptRecorder
from .brake import (
    InvalidMaxRepeatsError,
    LoopBrake,
    LoopBrakeError,
    LoopBrakeStoreError,
    decorate_tool,
    normalize_max_repeats,
    resolve_max_repeats,
    wrap_execute,
)
from .config import DETECTOR_KINDS, PROFILES, TextConfig
from .errors import ConfigError, InputError
from .guard import (
    GUARD_KINDS,
    GUARD_RULES,
    Decision,
    Intervention,
    ToolCallDenied,
    ToolGuard,
    ToolGuardConfig,
    ToolLoopCancelled,
    wrap_tool,
)
from .identity import action_fingerprint, call_hash, canonical_json, hash_prefix, session_key
from .results import normalize_result, result_digest
from .session import Session, SessionConfig, SessionState, Verdict
from .store import MemoryStore, RedisStore, StoreUnavailable
from .stream import LoopGuardCancelled, StreamConfig, StreamGuard, StreamOutcome, StreamState
from .text import CHANNELS, Detection, TextLoopDetector, scan_text, scan_tokens

# a library logs; the application decides where to (no "last resort" output to stderr)
_logging.getLogger("loopguard").addHandler(_logging.NullHandler())

try:
    __version__ = _version("loopguard")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "CHANNELS",
    "DETECTOR_KINDS",
    "GUARD_KINDS",
    "GUARD_RULES",
    "PROFILES",
    "AttemptRecorder",
    "ConfigError",
    "Decision",
    "Detection",
    "InputError",
    "Intervention",
    "InvalidMaxRepeatsError",
    "LoopBrake",
    "LoopBrakeError",
    "LoopBrakeStoreError",
    "LoopGuardCancelled",
    "MemoryStore",
    "RedisStore",
    "StoreUnavailable",
    "Session",
    "SessionConfig",
    "SessionState",
    "StreamConfig",
    "StreamGuard",
    "StreamOutcome",
    "StreamState",
    "TextConfig",
    "TextLoopDetector",
    "ToolCallDenied",
    "ToolGuard",
    "ToolGuardConfig",
    "ToolLoopCancelled",
    "Verdict",
    "__version__",
    "action_fingerprint",
    "call_hash",
    "canonical_json",
    "decorate_tool",
    "hash_prefix",
    "normalize_max_repeats",
    "normalize_result",
    "resolve_max_repeats",
    "result_digest",
    "scan_text",
    "scan_tokens",
    "session_key",
    "wrap_execute",
    "wrap_tool",
]
