"""Observability: the structured decision log, Prometheus metrics and OpenTelemetry span
events (``docs/metrics.md``).

>>> import io, logging
>>> from loopguard import ToolGuard
>>> from loopguard.observe import configure_decision_log, reset
>>> out = io.StringIO()
>>> _ = configure_decision_log(out, replica_id="r1")
>>> guard = ToolGuard()
>>> for _ in range(2):
...     _ = guard.before_call("s1", "grep", {"pattern": "x"})
...     _ = guard.after_call("s1", "grep", {"pattern": "x"}, "a.py:3: x")
>>> _ = guard.before_call("s1", "grep", {"pattern": "x"})
>>> [line.split('"action":')[1][:8] for line in out.getvalue().splitlines()]
['"notice"', '"deny","']
>>> reset()
"""

from .log import DECISION_LOGGER, JsonLinesFormatter, configure_decision_log, reset
from .metrics import disable_metrics, disable_tracing, enable_metrics, enable_tracing, fail_open, store_error

__all__ = [
    "DECISION_LOGGER",
    "JsonLinesFormatter",
    "configure_decision_log",
    "disable_metrics",
    "disable_tracing",
    "enable_metrics",
    "enable_tracing",
    "fail_open",
    "reset",
    "store_error",
]
