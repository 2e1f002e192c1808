"""Observability: the structured decision log, Prometheus metrics and OpenTelemetry span
events (``docs/metrics.md``).

>>> import io, json
>>> from loopguard import ToolGuard
>>> from loopguard.observe import configure_decision_log, reset
>>> out = io.StringIO()
>>> _ = configure_decision_log(out, replica_id="r1")
>>> guard, args = ToolGuard(), {"pattern": "x", "path": "src"}
>>> for _ in range(2):
...     _ = guard.before_call("s1", "grep", args)
...     _ = guard.after_call("s1", "grep", args, "a.py:3: x")
>>> _ = guard.before_call("s1", "grep", args)
>>> for line in out.getvalue().splitlines():
...     r = json.loads(line)
...     print(r["level"], r["event"], r["action"], r["rule"], r["call_index"], r["session"], r["evidence"])
INFO tool_result notice repeat 1 s1 {'count': 2}
WARNING tool_call deny repeat 2 s1 {'count': 2, 'limit': 2, 'replay': False}
>>> reset()
"""

from .log import DECISION_LOGGER, JsonLinesFormatter, configure_decision_log, refresh, reset
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
    "refresh",
    "reset",
    "store_error",
]
