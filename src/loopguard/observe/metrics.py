"""Prometheus metrics and OpenTelemetry span events (optional; ``docs/metrics.md``).

Nothing is imported and nothing is counted until :func:`enable_metrics` /
:func:`enable_tracing` is called; :func:`store_error` and :func:`fail_open` are then cheap
no-ops.  Labels are bounded: no session id, no tool name, never a value from arguments,
results or model text.

Metrics (``prometheus_client``, the ``loopguard[metrics]`` extra):

``loopguard_detections_total{kind,channel}``
    Detections that acted or were reported: tool-guard decisions and interventions other
    than ``allow`` (channel ``tool``), text loops that cut, cancel or notice (channel
    ``reasoning`` / ``text``), brake denials (kind ``brake``, channel ``tool``).
``loopguard_actions_total{rule,action}``
    Every decision by rule (``none`` for a plain allow) and action (``allow``, ``notice``,
    ``deny``, ``cancel``, ``cut``, ``observe``): tool guard, text, stream, brake.
``loopguard_decision_seconds{surface}``
    Decision latency in seconds: ``tool_guard`` (``before_call`` / ``after_call``), ``text``
    (a session's checkpoint that judged), ``brake`` (``LoopBrake.check``).
``loopguard_store_errors_total{operation}``
    State-store errors by operation (reported by the store through :func:`store_error`).
``loopguard_fail_open_total``
    Decisions allowed because the store failed (:func:`fail_open`).
``loopguard_samples_total{outcome}``
    Evidence samples (``Session(dump_dir=...)``, :mod:`loopguard.observe.samples`) by outcome:
    ``written``, ``failed`` (an OS error), ``dropped`` (the writer's queue was full).
"""

from __future__ import annotations

import time
from typing import Any

from ..terminal import printable
from . import log

__all__ = [
    "disable_metrics",
    "disable_tracing",
    "enable_metrics",
    "enable_tracing",
    "fail_open",
    "sample",
    "store_error",
]

#: Histogram buckets of ``loopguard_decision_seconds`` (10 µs to 1 s).
BUCKETS = (1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 0.1, 1.0)

_BY_REGISTRY: dict[int, _Metrics] = {}


class _Metrics:
    """The six metrics in one registry."""

    def __init__(self, registry: Any) -> None:
        from prometheus_client import Counter, Histogram

        self.registry = registry
        self.detections = Counter(
            "loopguard_detections", "Loop detections by kind and channel", ["kind", "channel"], registry=registry
        )
        self.actions = Counter(
            "loopguard_actions", "Decisions by rule and action", ["rule", "action"], registry=registry
        )
        self.seconds = Histogram(
            "loopguard_decision_seconds", "Decision latency (s)", ["surface"], registry=registry, buckets=BUCKETS
        )
        self.store_errors = Counter(
            "loopguard_store_errors", "State-store errors by operation", ["operation"], registry=registry
        )
        self.fail_open = Counter("loopguard_fail_open", "Decisions allowed because the store failed", registry=registry)
        self.samples = Counter("loopguard_samples", "Evidence samples by outcome", ["outcome"], registry=registry)


def enable_metrics(registry: Any = None) -> None:
    """Count decisions in Prometheus metrics (see the module docstring).

    Parameters
    ----------
    registry : prometheus_client.CollectorRegistry, optional
        Where to register them (default ``prometheus_client.REGISTRY``).  Enabling twice
        with one registry reuses its metrics.

    Raises
    ------
    ImportError
        when ``prometheus_client`` is not installed (``pip install "loopguard[metrics]"``).
    """
    try:
        import prometheus_client
    except ImportError as exc:
        raise ImportError('enable_metrics needs prometheus_client: pip install "loopguard[metrics]"') from exc
    if registry is None:
        registry = prometheus_client.REGISTRY
    metrics = _BY_REGISTRY.get(id(registry))
    if metrics is None or metrics.registry is not registry:
        metrics = _BY_REGISTRY[id(registry)] = _Metrics(registry)
    log.SETTINGS.metrics = metrics
    log.refresh()


def disable_metrics() -> None:
    """Stop counting (the metrics stay registered, with their values)."""
    log.SETTINGS.metrics = None
    log.refresh()


def enable_tracing() -> None:
    """Add a ``loopguard.decision`` event, with the decision record's fields as attributes
    (``evidence.<name>`` for each evidence number), to the current OpenTelemetry span.

    Raises
    ------
    ImportError
        when ``opentelemetry-api`` is not installed.
    """
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ImportError("enable_tracing needs opentelemetry-api: pip install opentelemetry-api") from exc
    log.SETTINGS.tracing = trace
    log.refresh()


def disable_tracing() -> None:
    """Stop adding span events."""
    log.SETTINGS.tracing = None
    log.refresh()


def store_error(operation: str) -> None:
    """Count one state-store error of ``operation`` (a short constant such as ``"get"``,
    ``"update"``; printable, at most 40 code points).  A no-op when metrics are off."""
    metrics = log.SETTINGS.metrics
    if metrics is not None:
        metrics.store_errors.labels(printable(str(operation))[:40]).inc()


def fail_open() -> None:
    """Count one decision allowed because the store failed.  A no-op when metrics are off."""
    metrics = log.SETTINGS.metrics
    if metrics is not None:
        metrics.fail_open.inc()


def sample(outcome: str) -> None:
    """Count one evidence sample by ``outcome`` (``written``, ``failed``, ``dropped``).  A no-op
    when metrics are off."""
    metrics = log.SETTINGS.metrics
    if metrics is not None:
        metrics.samples.labels(outcome).inc()


def observe(fields: dict[str, Any], *, detection: bool = True, act: bool = True) -> None:
    """Count one record's detection (unless ``allow``) and action; add its span event."""
    metrics = log.SETTINGS.metrics
    if metrics is not None:
        if detection and fields["action"] != "allow":
            metrics.detections.labels(fields["kind"] or fields["rule"], fields["channel"]).inc()
        if act:
            metrics.actions.labels(fields["rule"] or "none", fields["action"]).inc()
    tracing = log.SETTINGS.tracing
    if tracing is not None and act:
        attributes = {k: v for k, v in fields.items() if k != "evidence"}
        attributes.update({f"evidence.{k}": v for k, v in fields["evidence"].items()})
        tracing.get_current_span().add_event("loopguard.decision", attributes=attributes)


def seconds(surface: str, started: float) -> None:
    """Observe the latency of a decision that started at ``started`` (``time.perf_counter``)."""
    metrics = log.SETTINGS.metrics
    if metrics is not None and started:
        metrics.seconds.labels(surface).observe(time.perf_counter() - started)
