"""The load test of issue 18 (item 5): two replica processes, each a ``ToolGuard`` on one shared
``RedisStore``, decide 1,000 sessions x 50 tool calls sent concurrently, each session's calls
alternating between the replicas in order (call i+1 is sent when call i's decision came back);
the in-memory guard fed the same calls in order gives the reference decisions.

``python tests/store_load.py [--sessions N] [--calls N]`` runs it and prints the numbers
(it starts its own ``redis-server``); ``tests/test_store_load.py`` (``-m slow``) asserts them.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from loopguard import RedisStore, ToolGuard
from redis_server import RedisServer
from store_workload import decide, session_calls

__all__ = ["Replicas", "in_memory", "percentile", "run_load"]

THREADS = 16
#: Redis reply timeout of the replicas: the decisions equal the in-memory guard only without
#: faults, and 32 threads on a loaded 2-core CI machine can stall a reply past the default 0.25 s
SOCKET_TIMEOUT = 5.0


class _Count(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def _replica(url: str, prefix: str, requests: Any, results: Any, calls: int, retry: float) -> None:
    """One replica: ``THREADS`` threads deciding the requests ``(session, index)``; an exception
    is reported as a result (it must never happen)."""
    store = RedisStore(url, prefix=prefix, retry_interval=retry, socket_timeout=SOCKET_TIMEOUT)
    guard = ToolGuard(store=store)
    count = _Count()
    logging.getLogger("loopguard.store").addHandler(count)
    cache: dict[int, list[Any]] = {}

    def work() -> None:
        while True:
            req = requests.get()
            if req is None:
                return
            if req == "stats":
                results.put(("stats", store.errors, store.conflicts, list(count.records)))
                continue
            sid, i = req
            seq = cache.get(sid) or cache.setdefault(sid, session_calls(sid, calls))
            started = time.perf_counter()
            try:
                record = decide(guard, f"s{sid}", i, seq[i])
            except Exception as exc:
                record = ("exception", type(exc).__name__)
            results.put((sid, i, record, time.perf_counter() - started))

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


class Replicas:
    """Two replica processes on one Redis; :meth:`run` drives sessions through them."""

    def __init__(self, url: str, prefix: str, calls: int, retry: float = 1.0) -> None:
        ctx = mp.get_context("spawn")
        self.calls = calls
        self.results = ctx.Queue()
        self.requests = [ctx.Queue() for _ in range(2)]
        self.procs = [
            ctx.Process(target=_replica, args=(url, prefix, q, self.results, calls, retry), daemon=True)
            for q in self.requests
        ]
        for p in self.procs:
            p.start()

    def run(self, sessions: range, on_result: Any = None) -> tuple[dict[int, list[Any]], list[float], float]:
        """Every session's calls, alternating replicas, concurrently: (records by session,
        latencies in seconds, wall seconds)."""
        out: dict[int, list[Any]] = {sid: [] for sid in sessions}
        latencies: list[float] = []
        started = time.perf_counter()
        for sid in sessions:
            self.requests[sid % 2].put((sid, 0))
        pending = len(sessions) * self.calls
        while pending:
            sid, i, record, took = self.results.get(timeout=120)
            out[sid].append(record)
            latencies.append(took)
            pending -= 1
            if on_result is not None:
                on_result(len(latencies))
            if i + 1 < self.calls:
                self.requests[(sid + i + 1) % 2].put((sid, i + 1))
        return out, latencies, time.perf_counter() - started

    def stats(self) -> list[tuple[int, int, list[str]]]:
        """Per replica: (store errors, compare-and-set conflicts, warnings logged)."""
        out = []
        for q in self.requests:
            q.put("stats")
            while True:
                item = self.results.get(timeout=60)
                if item[0] == "stats":
                    out.append((item[1], item[2], item[3]))
                    break
        return out

    def close(self) -> None:
        for q in self.requests:
            for _ in range(THREADS):
                q.put(None)
        for p in self.procs:
            p.join(30)
            if p.is_alive():
                p.kill()


def in_memory(sessions: range, calls: int) -> tuple[dict[int, list[Any]], list[float], float]:
    """The reference: one in-memory guard fed every session's calls in order."""
    guard = ToolGuard()
    out: dict[int, list[Any]] = {}
    latencies: list[float] = []
    seqs = {sid: session_calls(sid, calls) for sid in sessions}
    started = time.perf_counter()
    for sid in sessions:
        rows = out[sid] = []
        for i, call in enumerate(seqs[sid]):
            t = time.perf_counter()
            rows.append(decide(guard, f"s{sid}", i, call))
            latencies.append(time.perf_counter() - t)
    return out, latencies, time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of ``values``."""
    return statistics.quantiles(values, n=1000, method="inclusive")[max(0, int(p * 10) - 1)]


def run_load(sessions: int, calls: int, directory: Path) -> dict[str, Any]:
    """The load test's numbers: records and latencies of both runs, decisions per second."""
    srv = RedisServer(directory).start()
    try:
        reps = Replicas(srv.url, "load:", calls)
        try:
            got, lat, wall = reps.run(range(sessions))
            stats = reps.stats()
        finally:
            reps.close()
    finally:
        srv.kill()
    want, mem_lat, mem_wall = in_memory(range(sessions), calls)
    n = sessions * calls
    return {
        "got": got,
        "want": want,
        "stats": stats,
        "redis": {"p50": percentile(lat, 50), "p99": percentile(lat, 99), "per_s": n / wall},
        "memory": {"p50": percentile(mem_lat, 50), "p99": percentile(mem_lat, 99), "per_s": n / mem_wall},
    }


def report(numbers: dict[str, Any]) -> str:
    """One line per store: p50 and p99 latency of one call (before_call + after_call), calls/s."""
    return "\n".join(
        f"{name:6} p50 {v['p50'] * 1e3:7.3f} ms  p99 {v['p99'] * 1e3:7.3f} ms  {v['per_s']:9.0f} calls/s"
        for name in ("redis", "memory")
        for v in [numbers[name]]
    )


def main() -> None:  # pragma: no cover - the command line
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        numbers = run_load(args.sessions, args.calls, Path(tmp))
    same = numbers["got"] == numbers["want"]
    print(report(numbers))
    print(
        f"decisions identical to the in-memory guard: {same}; replicas (errors, conflicts): "
        f"{[s[:2] for s in numbers['stats']]}"
    )


if __name__ == "__main__":  # pragma: no cover
    main()
