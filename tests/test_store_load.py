"""The load and fault tests of issue 18 (``-m slow``): two replica processes on one real
``redis-server`` (see ``tests/store_load.py``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from redis_server import RedisServer, require_redis
from store_load import Replicas, in_memory, report, run_load

pytestmark = pytest.mark.slow

require_redis()


def test_two_replicas_decide_exactly_as_one_in_memory_guard(tmp_path: Path) -> None:
    numbers = run_load(1000, 50, tmp_path)
    print("\n" + report(numbers))
    got, want = numbers["got"], numbers["want"]
    assert len(got) == 1000 and all(len(rows) == 50 for rows in got.values())
    for sid in want:  # every session: the same action, kind and rule at every call index
        assert got[sid] == want[sid], sid
    denies = sum(row[1] == "deny" for rows in want.values() for row in rows)
    cancels = sum(row[1] == "cancel" for rows in want.values() for row in rows)
    assert denies > 5000 and cancels > 500  # the workload does make the guard act
    assert [s[0] for s in numbers["stats"]] == [0, 0]  # no store error on either replica


def test_redis_killed_mid_run_and_restarted(tmp_path: Path) -> None:
    srv = RedisServer(tmp_path).start()
    reps = Replicas(srv.url, "fault:", 50, retry=0.2)
    events: dict[str, float] = {}

    def restart() -> None:
        time.sleep(1.5)
        srv.start()
        events["restarted"] = time.monotonic()

    def on_result(done: int) -> None:
        if done == 2000:  # kill it mid-run; a thread brings it back 1.5 s later
            srv.kill()
            events["killed"] = time.monotonic()
            threading.Thread(target=restart).start()

    try:
        got, _, _ = reps.run(range(200), on_result)
        while "restarted" not in events:
            time.sleep(0.05)
        time.sleep(0.3)  # past retry_interval: the replicas ask the store again
        after, _, _ = reps.run(range(-4, 0))  # fresh sessions, the same call again and again
        stats = reps.stats()
    finally:
        reps.close()
        srv.kill()
    rows = [row for rows in got.values() for row in rows]
    assert len(rows) == 200 * 50
    assert not [row for row in rows if row[0] == "exception"]  # no exception reached the caller
    assert sum(s[0] for s in stats) > 0  # the fail-open window is counted
    for errors, _, warnings in stats:  # logged once per interval (60 s: once) by each replica that saw it
        assert len(warnings) == (1 if errors else 0)
        assert all("deciding without it" in w for w in warnings)
    want, _, _ = in_memory(range(-4, 0), 50)
    assert [r[1] for r in want[-1][:4]] == ["allow", "allow", "deny", "allow"]
    assert after == want  # decisions resumed against the restarted server
