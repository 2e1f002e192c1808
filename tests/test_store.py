"""The state store (issue 18, items 1 and 2): ``ToolGuard(store=RedisStore(url))`` against a real
``redis-server`` decides exactly as the in-memory guard, keeps no argument, result or session
id in Redis, stays within 32 KiB per session, loses no update when two replicas write one
session at once, and fails open (or closed) without Redis, then recovers."""

from __future__ import annotations

import hashlib
import logging
import random
import string
import threading
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_SOCKET_TIMEOUT, shared_data
from loopguard import MemoryStore, RedisStore, ToolGuard
from loopguard.guard import codec
from loopguard.guard.state import HEAD_NOT_KEPT, SessionState, stable_hash
from loopguard.store import StoreUnavailable
from redis_server import RedisServer, killable_store, require_redis
from store_workload import CANARY, decide, session_calls

require_redis()


def test_stable_hash_is_blake2b_of_the_utf8_text() -> None:
    want = int.from_bytes(hashlib.blake2b(b"src/a.py:3: x", digest_size=8).digest(), "little", signed=True)
    assert stable_hash("src/a.py:3: x") == want
    assert stable_hash("\ud800") == int.from_bytes(
        hashlib.blake2b("\ud800".encode("utf-8", "surrogatepass"), digest_size=8).digest(), "little", signed=True
    )


def test_decisions_equal_the_in_memory_guard_across_two_replicas(make_store: Any) -> None:
    mem = ToolGuard()
    replicas = [ToolGuard(store=make_store()) for _ in range(2)]
    kinds: set[str] = set()
    for sid in range(40):
        for i, call in enumerate(session_calls(sid)):
            want = decide(mem, f"s{sid}", i, call)
            assert decide(replicas[i % 2], f"s{sid}", i, call) == want, (sid, i)
            kinds.update([want[3]] + [x[1] for x in want[5]])
    # the workload exercises the rules whose state crosses replicas
    assert {"repeat", "locked", "drift", "error_avoidance", "cycle", "circuit_breaker", "repeat_streak"} <= kinds


def test_the_default_store_is_in_memory() -> None:
    args = {"pattern": "x", "path": "src"}
    for guard in (ToolGuard(), ToolGuard(store=MemoryStore())):
        assert guard._remote is None
        actions = []
        for _ in range(3):
            actions.append(guard.before_call("s", "grep", args).action)
            if actions[-1] == "allow":
                guard.after_call("s", "grep", args, "a.py:3: x")
        assert actions == ["allow", "allow", "deny"]
        assert len(guard) == 1


def test_redis_holds_no_argument_result_or_session_id(prefix: str, make_store: Any) -> None:
    store = make_store(ttl=600)
    guard = ToolGuard(store=store)
    session = f"user-{CANARY}"
    for i, call in enumerate(session_calls(7)):
        decide(guard, session, i, call)
    guard.before_call(session, "shell", {"command": f"curl -H 'Authorization: {CANARY}' x"}, call_id=f"c-{1}")
    keys = store.client.keys(f"{prefix}*")
    assert keys == [store.key(session).encode()]
    assert keys[0].startswith(prefix.encode() + b"tg:") and len(keys[0]) == len(prefix) + 3 + 32
    fields = store.client.hgetall(keys[0])
    assert set(fields) == {b"n", b"f", b"s"} and fields[b"f"] == str(codec.FORMAT).encode()
    plain = zlib.decompress(fields[b"s"])
    for needle in (CANARY.encode(), b"curl", b"Authorization", b"permission denied", b"user-"):
        assert needle not in plain and needle not in fields[b"s"]
    assert 0 < store.client.pttl(keys[0]) <= 600_000


def _worst_session() -> SessionState:
    """A session filled past every bound the shared store keeps."""
    guard = ToolGuard(store=None)
    s = SessionState(0.0, 1024, stable_hash)
    guard._sessions.remember("w", s)
    long = "\n".join(f"line {i} " + "x" * 40 for i in range(600))
    for i in range(1200):
        args = {"query": " ".join(f"w{i}_{j}" for j in range(300)), "n": i}
        if guard.before_call("w", f"tool{i % 70}", args, call_id=f"id-{i}").allowed:
            guard.after_call(
                "w", f"tool{i % 70}", args, long.replace("line", f"l{i}"), error=i % 3 == 0, call_id=f"id-{i}"
            )
    return s


def _incompressible_sessions(store: Any) -> Iterator[tuple[str, ToolGuard]]:
    """Sessions of random text a fresh user's trial filled (issue 18): 100 distinct calls with
    random arguments and 10 KB random results; 20 random 2,000-character call ids."""
    rng = random.Random(18)

    def noise(n: int) -> str:
        return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(n))

    guard = ToolGuard(store=store)
    for i in range(100):
        args = {"q": noise(40), "n": i}
        guard.before_call("calls", "search", args)
        guard.after_call("calls", "search", args, "\n".join(noise(100) for _ in range(100)))
    yield "calls", guard
    for i in range(20):
        call_id = noise(2000)
        guard.before_call("ids", "read", {"path": f"f{i}"}, call_id=call_id)
        guard.after_call("ids", "read", {"path": f"f{i}"}, noise(50), call_id=call_id)
    yield "ids", guard


def test_random_sessions_stay_within_32_kib_of_redis_memory(make_store: Any) -> None:
    store = make_store()
    for session, _guard in _incompressible_sessions(store):
        used = store.client.memory_usage(store.key(session))
        assert used <= 32 * 1024, (session, used)


def test_a_huge_call_id_is_kept_as_a_digest_and_decides_as_in_memory(make_store: Any) -> None:
    store = make_store()
    shared, local = ToolGuard(store=store), ToolGuard()
    huge = "x" * 50_000 + "".join(random.Random(1).choice(string.ascii_letters) for _ in range(50_000))
    for guard in (shared, local):
        first = guard.before_call("s", "read_file", {"path": "a"}, call_id=huge)
        again = guard.before_call("s", "read_file", {"path": "a"}, call_id=huge)  # the same call, seen again
        assert (first.action, again.call_index) == ("allow", first.call_index)
        guard.after_call("s", "read_file", {"path": "a"}, "text", call_id=huge)
        assert guard.before_call("s", "read_file", {"path": "a"}, call_id=1 << 200).allowed
    assert store.errors == 0


def test_worst_case_state_is_at_most_32_kib_in_redis(make_store: Any) -> None:
    store = make_store()
    s = _worst_session()
    assert len(s.keys) > 128 and len(s.seen) > 1024 and len(s.call_ids) == 256
    blob = codec.dump(s, store.limits)
    raw = zlib.decompress(blob)
    assert len(raw) > 32 * 1024  # before shrinking it would not fit
    assert store.put("w", blob, 0)
    used = store.client.memory_usage(store.key("w"))
    print(f"worst-case session: blob {len(blob)} B, Redis MEMORY USAGE {used} B")
    assert used <= 32 * 1024
    back = codec.load(blob, 1024)
    assert 0 < len(back.keys) <= 128 and list(back.keys)[-1] == list(s.keys)[-1]
    assert back.calls == s.calls and back.executions == s.executions


def test_codec_round_trip_keeps_every_rule_state() -> None:
    s = SessionState(5.0, 128, stable_hash)
    guard = ToolGuard()
    guard._sessions.remember("r", s)
    for i, call in enumerate(session_calls(3)):
        decide(guard, "r", i, call)
    guard.strike("r", "text_loop")
    back = codec.load(codec.dump(s), 128)
    for name in ("epoch", "no_new", "breaker", "breaker_index", "calls", "executions", "changes", "new_changes"):
        assert getattr(back, name) == getattr(s, name), name
    assert list(back.keys) == list(s.keys) and list(back.seen) == list(s.seen)
    assert back.history == s.history and back.cycle_noticed == s.cycle_noticed and back.watch == s.watch
    assert back.recent == s.recent and back.frame == s.frame and back.frame_hist == s.frame_hist
    assert back.strikes == s.strikes and back.blocked == s.blocked and back.reworded == s.reworded
    assert (back.streak.last, back.streak.count, back.streak.result) == (s.streak.last, s.streak.count, s.streak.result)
    for key, k in s.keys.items():
        assert [getattr(back.keys[key], f) for f in codec._KEY_FIELDS] == [getattr(k, f) for f in codec._KEY_FIELDS]
        assert back.keys[key].head == HEAD_NOT_KEPT  # result text is never stored


def test_codec_refuses_another_format() -> None:
    with pytest.raises(ValueError, match="format 2 is not 1"):
        codec.load(zlib.compress(b"[2]"), 8)
    with pytest.raises(ValueError, match="not a loopguard session state"):
        codec.load(b"junk", 8)
    with pytest.raises(ValueError, match="malformed"):
        codec.load(zlib.compress(b"[1, 5]"), 8)


def test_two_replicas_at_once_lose_no_update(make_store: Any) -> None:
    stores = [make_store() for _ in range(4)]
    guards = [ToolGuard(store=st) for st in stores]
    start = threading.Barrier(4)

    def work(g: ToolGuard, t: int) -> None:
        start.wait()
        for i in range(60):
            g.before_call("shared", "read_file", {"path": f"f{t}_{i}.py"})

    threads = [threading.Thread(target=work, args=(g, t)) for t, g in enumerate(guards)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # 240 requests counted exactly once each: the next one is call 240
    assert guards[0].before_call("shared", "ls", {"path": "."}).call_index == 240
    assert sum(st.conflicts for st in stores) > 0  # they did collide, and were retried
    assert sum(st.errors for st in stores) == 0


def test_redis_down_fails_open_logs_once_and_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    srv, store = killable_store(tmp_path)
    guard = ToolGuard(store=store)
    args = {"pattern": "x", "path": "src"}
    assert guard.before_call("s", "grep", args).action == "allow"
    srv.kill()
    caplog.set_level(logging.WARNING, logger="loopguard.store")
    during = []
    for _ in range(5):  # the same call again and again: the store is down, every one is allowed
        during.append(guard.before_call("s", "grep", args).action)
        assert guard.after_call("s", "grep", args, "a.py:3: x") == []
        time.sleep(0.06)
    assert during == ["allow"] * 5
    assert store.errors >= 5
    warnings = [r for r in caplog.records if r.name == "loopguard.store"]
    assert len(warnings) == 1 and "ConnectionError" in warnings[0].getMessage()
    srv.start()  # back on the same port, empty
    time.sleep(0.06)
    actions = []
    for _ in range(3):
        actions.append(guard.before_call("s2", "grep", args).action)
        if actions[-1] == "allow":
            guard.after_call("s2", "grep", args, "a.py:3: x")
    assert actions == ["allow", "allow", "deny"]  # decisions resumed against the restarted server
    srv.kill()


def test_redis_down_fails_closed_when_asked(tmp_path: Path) -> None:
    srv = RedisServer(tmp_path)  # never started: nothing listens on the port
    guard = ToolGuard(store=RedisStore(srv.url), on_store_error="closed")
    d = guard.before_call("s", "grep", {"pattern": "x", "path": "src"})
    assert (d.action, d.kind, d.rule) == ("deny", "store_unavailable", "store_unavailable")
    assert "src" not in d.reason and d.evidence == {"store": "unavailable"}
    assert guard.after_call("s", "grep", {"pattern": "x"}, "r") == []
    assert guard.strikes("s") == 0 and guard.pending_tools("s") == 0 and guard.check_stall("s") is None


def test_a_slow_redis_counts_as_down(make_store: Any) -> None:
    store = make_store(socket_timeout=0.05)
    guard = ToolGuard(store=store)
    blocker = make_store().client
    t = threading.Thread(target=lambda: blocker.execute_command("DEBUG", "SLEEP", "0.5"))
    t.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert guard.before_call("slow", "ls", {}).action == "allow"
    assert time.monotonic() - started < 0.4  # the timeout, not the server's sleep
    assert store.errors == 1
    t.join()


def test_bad_store_arguments() -> None:
    with pytest.raises(ValueError, match="on_store_error must be 'open' or 'closed', not 'maybe'"):
        ToolGuard(on_store_error="maybe")
    with pytest.raises(TypeError, match="store must be a MemoryStore or a RedisStore, not dict"):
        ToolGuard(store={})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl must be a finite positive number of seconds, got 0"):
        RedisStore("redis://127.0.0.1:1/0", ttl=0)
    for name in ("ttl", "socket_timeout", "retry_interval", "warn_interval"):
        with pytest.raises(ValueError, match=f"{name} must be a finite positive number of seconds, got inf"):
            RedisStore("redis://127.0.0.1:1/0", **{name: float("inf")})
    # PEXPIRE takes milliseconds: 0.1 ms would expire at once, 1e300 s is more than Redis takes
    for ttl in (1e-4, 1e300):
        with pytest.raises(ValueError, match=r"ttl must be from 0.001 to 2147483648.0 seconds, got "):
            RedisStore("redis://127.0.0.1:1/0", ttl=ttl)
    with pytest.raises(TypeError, match="client must be a Redis client .*, not str"):
        RedisStore(client="x")
    with pytest.raises(TypeError, match="async_client must be a Redis client .*, not int"):
        RedisStore(async_client=5)
    with pytest.raises(ValueError, match="prefix must be a non-empty str"):
        RedisStore("redis://127.0.0.1:1/0", prefix="")
    with pytest.raises(ValueError, match="keys must be an int >= 1, got 0"):
        codec.Limits(keys=0)
    with pytest.raises(TypeError, match="url must be a str, not int"):
        RedisStore(123)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"url must start with redis://, rediss:// or unix:// \(a Redis URL\)$"):
        RedisStore("http://user:CnyUrlPw@host")  # the URL (a password) is not repeated


def test_redis_store_without_the_redis_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_redis(name: str, *args: object, **kwargs: object) -> object:
        if name == "redis" or name.startswith("redis."):
            raise ImportError("No module named 'redis'")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_redis)
    with pytest.raises(ImportError, match=r'^RedisStore needs the redis package: pip install "loopguard\[redis\]"$'):
        RedisStore("redis://127.0.0.1:1/0")


def test_loop_brake_shares_its_streak_through_redis(make_store: Any) -> None:
    from loopguard import LoopBrake, LoopBrakeError

    store = make_store()
    a, b = LoopBrake(3, store=store), LoopBrake(3, store=make_store())
    args = {"q": CANARY}
    assert a.check("search", args, session_id="s", call_id="c1") == 1
    assert b.check("search", args, session_id="s", call_id="c2") == 2
    assert a.check("search", args, session_id="s", call_id="c2") == 2  # the same call id: not counted again
    with pytest.raises(LoopBrakeError) as err:
        a.check("search", args, session_id="s", call_id="c3")
    assert (err.value.count, err.value.max_repeats) == (3, 3)
    with pytest.raises(LoopBrakeError):  # denied again on the other replica, by its call id
        b.check("search", args, session_id="s", call_id="c3")
    assert b.streak("s") == 3 and a.check("search", {"q": "other"}, session_id="s") == 1
    assert a.streak("other") == 0
    raw = store.client.hgetall(store.key("s", "lb"))
    assert CANARY.encode() not in b"".join(raw.values()) and b'"c3"' in raw[b"s"]
    b.reset("s")
    assert a.streak("s") == 0 and store.client.exists(store.key("s", "lb")) == 0


def test_loop_brake_fails_open_without_redis(tmp_path: Path) -> None:
    from loopguard import LoopBrake

    store = RedisStore(RedisServer(tmp_path).url)  # nothing listens there
    brake = LoopBrake(2, store=store)
    assert [brake.check("t", {"x": 1}, session_id="s") for _ in range(3)] == [1, 1, 1]
    assert store.errors == 3 and brake.streak("s") == 0
    with pytest.raises(TypeError, match="store must be a MemoryStore or a RedisStore, not str"):
        LoopBrake(store="redis://x")  # type: ignore[arg-type]


def test_session_passes_its_store_to_its_guard(make_store: Any) -> None:
    from loopguard import Session

    replicas = [Session("conv", store=make_store()) for _ in range(2)]
    args = {"pattern": "x", "path": "src"}
    actions = []
    for i in range(3):
        s = replicas[i % 2]
        actions.append(s.tool_call("grep", args).action)
        if actions[-1] == "allow":
            s.tool_result("grep", args, "a.py:3: x")
    assert actions == ["allow", "allow", "deny"]
    with pytest.raises(ValueError, match="pass either guard or guard_config/clock/store, not both"):
        Session("x", guard=ToolGuard(), store=make_store())


def test_dispose_leaves_the_shared_sessions_to_the_other_replicas(prefix: str, make_store: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    guard.before_call("a", "ls", {})
    guard.before_call("b", "ls", {})
    guard.dispose()
    assert len(store.client.keys(f"{prefix}*")) == 2 and len(guard) == 0
    guard.reset("a")
    assert store.client.keys(f"{prefix}*") == [store.key("b").encode()]
    guard.reset()
    assert store.client.keys(f"{prefix}*") == []


def test_the_readme_replicas_example_runs(redis_server: RedisServer, prefix: str) -> None:
    """The README's two-replica block, run against the test server: two guards built the same way
    (two replicas) deny the third identical call whichever one gets it."""
    import re

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Run it across gateway replicas", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, flags=re.S)
    assert block is not None
    code = (
        block.group(1).replace("redis://redis.internal:6379/0", redis_server.url).replace('"loopguard:"', repr(prefix))
    )
    code = code.replace("ttl=86_400)", f"ttl=86_400, socket_timeout={TEST_SOCKET_TIMEOUT})")  # not a test of timeouts
    assert str(TEST_SOCKET_TIMEOUT) in code
    replicas = [dict[str, object]() for _ in range(2)]
    for scope in replicas:
        exec(code, scope)  # each replica runs the block: its first call is this conversation's
    first, second = (scope["decision"] for scope in replicas)
    assert (first.action, second.action) == ("allow", "allow")  # type: ignore[attr-defined]
    guard = replicas[0]["guard"]  # each replica also reported the same result (the block's after_call)
    third = guard.before_call("conversation-42", "grep", {"pattern": "TODO", "path": "src"})  # type: ignore[attr-defined]
    assert (third.action, third.rule) == ("deny", "repeat")


def test_loop_brake_fails_closed_when_asked(tmp_path: Path, make_store: Any) -> None:
    import pickle

    from loopguard import LoopBrake, LoopBrakeError, LoopBrakeStoreError

    store = RedisStore(RedisServer(tmp_path).url)  # nothing listens there
    brake = LoopBrake(3, store=store, on_store_error="closed")
    with pytest.raises(LoopBrakeStoreError) as err:
        brake.check("search", {"q": CANARY}, session_id="s")
    e = err.value
    assert isinstance(e, LoopBrakeError) and store.errors == 1 and brake.streak("s") == 0
    assert (e.code, e.rule, e.tool_name, e.count, e.max_repeats, e.session_id) == (
        "LOOP_BRAKE_STORE_UNAVAILABLE",
        "store_unavailable",
        "search",
        0,
        3,
        "s",
    )
    assert str(e) == (
        'loop brake: the shared state store (Redis) is unavailable, so tool "search" was denied before it ran '
        f'(call {e.hash_prefix}…, on_store_error="closed"). Try the call again shortly.'
    )
    assert CANARY not in str(e) + repr(e) + repr(e.args) and len(e.hash_prefix) == 12
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is LoopBrakeStoreError and str(back) == str(e)
    # closed only matters without the store: with Redis up the brake counts as before
    up = LoopBrake(2, store=make_store(), on_store_error="closed")
    assert up.check("t", {"x": 1}, session_id="s") == 1
    with pytest.raises(LoopBrakeError) as denied:
        up.check("t", {"x": 1}, session_id="s")
    assert type(denied.value) is LoopBrakeError and denied.value.count == 2
    # and the in-memory brake accepts (and ignores) it
    assert LoopBrake(2, on_store_error="closed").check("t", {}) == 1
    with pytest.raises(ValueError, match="on_store_error must be 'open' or 'closed', not 'shut'"):
        LoopBrake(store=store, on_store_error="shut")


def test_two_sessions_on_two_stores_count_rescues_together(prefix: str, make_store: Any) -> None:
    from loopguard import Session

    stores = [make_store(ttl=600) for _ in range(2)]
    a, b = (Session(f"conv-{CANARY}", store=st) for st in stores)
    assert (a.consecutive_rescues, b.consecutive_rescues) == (0, 0)
    a.record_rescue(2)
    b.record_rescue(2)  # the same conversation resumed on the other replica
    assert (a.consecutive_rescues, b.consecutive_rescues) == (2, 2)
    a.record_rescue(2)
    assert b.consecutive_rescues == 3 and b.retry_requests_left == 2
    key = stores[0].key(f"conv-{CANARY}", "ss")
    assert stores[0].client.hgetall(key) == {b"r": b"3"}  # one small field; the session id only hashed
    assert key.startswith(prefix + "ss:") and CANARY not in key and 0 < stores[0].client.pttl(key) <= 600_000
    b.record_completion()  # a normal completion on one replica resets the count for both
    assert (a.consecutive_rescues, b.consecutive_rescues) == (0, 0)
    a.record_rescue(1)
    b.start_turn()  # a new user message starts the budget again everywhere
    assert a.consecutive_rescues == 0
    a.record_rescue(1)
    a.reset()
    assert b.consecutive_rescues == 0

    def work(s: Session) -> None:
        for _ in range(50):
            s.record_rescue(1)

    threads = [threading.Thread(target=work, args=(s,)) for s in (a, b)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert (a.consecutive_rescues, b.consecutive_rescues) == (100, 100)  # HINCRBY: none lost
    assert sum(st.errors for st in stores) == 0
    with pytest.raises(ValueError, match="op must be 'get', 'incr' or 'zero', not 'add'"):
        stores[0].counter("x", "r", "add")


def test_rescues_stay_local_without_redis(tmp_path: Path) -> None:
    from loopguard import Session

    store = RedisStore(RedisServer(tmp_path).url, retry_interval=60)  # nothing listens there
    s = Session("conv", store=store)
    s.record_rescue(1)
    s.record_rescue(1)
    assert s.consecutive_rescues == 2  # this object's own count, no exception
    s.record_completion()
    assert s.consecutive_rescues == 0 and store.errors == 5  # incr, incr, get, zero, get
    assert Session("mem").consecutive_rescues == 0


@shared_data
def test_two_replicas_streaming_one_conversation_share_the_rescue_cap(make_store: Any) -> None:
    """The stream rescue cap (``max_consecutive_rescues``, 3) counts the rescues of both replicas:
    the fourth looping stream in a row is cut without resume, though each replica saw two."""
    from loopguard import Session
    from test_stream import loop_chunks, normal_chunks, run

    replicas = [Session("conv", store=make_store()) for _ in range(2)]
    results = []
    for i in range(4):
        _, outcome = run(loop_chunks(), session=replicas[i % 2])
        results.append((outcome.stopped, outcome.should_resume, outcome.cancelled, outcome.rescues))
    assert results == [(True, True, False, 1), (True, True, False, 2), (True, True, False, 3), (True, False, True, 3)]
    _, outcome = run(normal_chunks(), session=replicas[0])  # a normal completion on one replica
    assert not outcome.stopped and replicas[1].consecutive_rescues == 0


def test_the_default_clock_is_the_wall_clock_with_a_shared_store(make_store: Any) -> None:
    """Timestamps in Redis (strikes, stall) are read by every replica: with a shared store the
    default clock is ``time.time`` (monotonic clocks of two machines do not agree); in memory it
    stays ``time.monotonic``; a given clock is kept."""
    from loopguard import Session

    store = make_store()
    assert ToolGuard(store=store).clock is time.time
    assert Session("c", store=store)._guard.clock is time.time
    assert ToolGuard().clock is time.monotonic and ToolGuard(store=MemoryStore()).clock is time.monotonic
    assert Session("c")._guard.clock is time.monotonic
    fake = lambda: 5.0  # noqa: E731
    assert ToolGuard(store=store, clock=fake).clock is fake


def test_close_drops_the_connections_and_the_next_call_reconnects(make_store: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    args = {"pattern": "x", "path": "src"}
    assert guard.before_call("s", "grep", args).action == "allow"
    watcher = make_store().client
    before = len(watcher.client_list())  # the watcher and the store's one connection
    store.close()
    deadline = time.monotonic() + 5
    while len(watcher.client_list()) != before - 1 and time.monotonic() < deadline:
        time.sleep(0.01)  # the server notices the closed socket on its next event loop turn
    assert len(watcher.client_list()) == before - 1
    guard.after_call("s", "grep", args, "a.py:3: x")  # connects again
    assert guard.before_call("s", "grep", args).action == "allow" and store.errors == 0
    assert [n.kind for n in guard.after_call("s", "grep", args, "a.py:3: x")] == ["repeat"]
    assert guard.before_call("s", "grep", args).action == "deny"  # the state survived the close


def test_reset_of_a_prefix_with_glob_characters_deletes_its_own_sessions_only(make_store: Any) -> None:
    """``reset()`` matches the prefix literally: ``?``, ``*``, ``[`` and ``]`` are not wildcards."""
    other = ToolGuard(store=make_store(prefix="tenantB:"))
    mine = ToolGuard(store=make_store(prefix="tenant?:"))
    brackets = ToolGuard(store=make_store(prefix="app[1]*:"))
    for guard in (other, mine, brackets):
        guard.before_call("a", "read_file", {"path": "a"})
    watcher = make_store().client
    mine.reset()
    brackets.reset()
    left = sorted(k.decode().split(":tg:")[0] for k in watcher.keys("*:tg:*"))
    assert "tenantB" in left and "tenant?" not in left and "app[1]*" not in left


def test_ping_names_a_misconfiguration_at_start_up(redis_server: Any, make_store: Any) -> None:
    make_store().ping()  # a healthy server: no exception
    bad_db = make_store(url=redis_server.url.rsplit("/", 1)[0] + "/99")
    with pytest.raises(StoreUnavailable, match="ResponseError: .*DB index is out of range"):
        bad_db.ping()
    assert bad_db.errors == 0  # a health check is not a decision


def test_a_sync_client_without_url_or_async_client_fails_open_and_says_why(
    redis_server: Any, prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """``RedisStore(client=...)`` alone: the async methods cannot reach Redis; each async
    decision fails open, the first warning says why, and the sync methods keep working."""
    import asyncio

    import redis

    store = RedisStore(client=redis.Redis.from_url(redis_server.url), prefix=prefix)
    guard = ToolGuard(store=store)
    caplog.set_level(logging.WARNING, logger="loopguard.store")
    args = {"pattern": "x", "path": "src"}
    assert asyncio.run(guard.abefore_call("s", "grep", args)).evidence == {"store": "unavailable"}
    assert "has no url= or async_client= for its async methods" in caplog.records[0].getMessage()
    assert guard.before_call("s", "grep", args).call_index == 0  # the sync path is not held back
    store.close()


def test_an_async_client_given_is_used_and_left_open(redis_server: Any, prefix: str) -> None:
    import asyncio

    import redis.asyncio

    async def main() -> tuple[list[str], bool]:
        client = redis.asyncio.Redis.from_url(redis_server.url)
        store = RedisStore(redis_server.url, prefix=prefix, async_client=client)
        guard = ToolGuard(store=store)
        args = {"pattern": "x", "path": "src"}
        actions = []
        for _ in range(3):
            d = await guard.abefore_call("s", "grep", args)
            actions.append(d.action)
            if d.allowed:
                await guard.aafter_call("s", "grep", args, "a.py:3: x")
        await store.aclose()
        alive = await client.ping()
        await client.aclose()
        store.close()
        return actions, alive and store.errors == 0

    assert asyncio.run(main()) == (["allow", "allow", "deny"], True)


def test_a_denial_from_stored_state_points_at_the_conversation(make_store: Any) -> None:
    """Redis keeps no result text: the deny says where the result is instead of quoting it (it
    said "(empty result)" before, which was false); in memory the result is still quoted."""
    args, result = {"pattern": "TODO", "path": "src"}, "a.py:3: TODO fix the parser"
    texts = []
    for guard in (ToolGuard(), ToolGuard(store=make_store())):
        for _ in range(2):
            guard.before_call("s", "grep", args)
            guard.after_call("s", "grep", args, result)
        d = guard.before_call("s", "grep", args)
        assert (d.action, d.rule) == ("deny", "repeat")
        texts.append(d.reason)
    memory, shared = texts
    assert "Previous result (preserved in the conversation above): a.py:3: TODO fix the parser" in memory
    assert "Previous result (preserved in the conversation above): (not repeated here)\n" in shared
    assert "(empty result)" not in shared and "a.py:3" not in shared


def test_a_replica_deciding_again_for_its_session_takes_one_round_trip(make_store: Any) -> None:
    """The store keeps the state it last wrote: a replica's next decision for the same session
    is the compare-and-set write alone (no load); after another replica wrote, the write fails,
    brings the current state, and the decision is taken again on it (still exact)."""
    a, b = make_store(cache_sessions=1024), make_store(cache_sessions=1024)
    ga, gb, mem = ToolGuard(store=a), ToolGuard(store=b), ToolGuard()
    watcher = make_store().client

    def commands() -> dict[str, int]:
        stats = watcher.info("commandstats")
        return {c: stats.get(f"cmdstat_{c}", {}).get("calls", 0) for c in ("hmget", "evalsha")}

    ga.before_call("s", "read_file", {"path": "x.py"})
    mem.before_call("s", "read_file", {"path": "x.py"})
    before = commands()
    for i in range(10):
        assert ga.before_call("s", "read_file", {"path": f"{i}.py"}).call_index == i + 1
        mem.before_call("s", "read_file", {"path": f"{i}.py"})
    after = commands()
    assert (after["hmget"] - before["hmget"], after["evalsha"] - before["evalsha"]) == (0, 10)
    conflicts = a.conflicts
    assert gb.before_call("s", "ls", {}).call_index == 11  # the other replica: load and write
    d = ga.before_call("s", "ls", {})  # a's cached state is stale: its write fails, then succeeds
    assert (d.call_index, a.conflicts) == (12, conflicts + 1)
    assert d.action == mem.before_call("s", "ls", {}).action == "allow"
    assert ToolGuard(store=make_store()).before_call("s", "ls", {}).call_index == 13  # no cache: a load
    with pytest.raises(ValueError, match="cache_sessions must be an int >= 0, got -1"):
        RedisStore("redis://127.0.0.1:1/0", cache_sessions=-1)


def test_a_write_that_keeps_conflicting_is_counted_and_decided_without_the_store(
    make_store: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    real_swap = store.swap
    monkeypatch.setattr(store, "swap", lambda session, blob, version, kind="tg": (False, *store.get(session)))
    monkeypatch.setattr("loopguard.guard.shared._pause", lambda attempt: 0.0)
    caplog.set_level(logging.WARNING, logger="loopguard.store")
    for _ in range(2):
        assert guard.before_call("busy", "ls", {}).action == "allow"  # on_store_error="open"
    assert store.errors == 2 and store.conflicts == 0  # the stub does not count conflicts itself
    (warning,) = [r for r in caplog.records if r.name == "loopguard.store"]  # once per warn_interval
    assert "32 conflicting writes in a row" in warning.getMessage()
    monkeypatch.setattr(store, "swap", real_swap)
    assert guard.before_call("busy", "ls", {}).call_index == 0  # nothing was stored meanwhile
