"""The state store's async twins (issue 18, "Sync and async"): ``ToolGuard.abefore_call`` /
``aafter_call`` and ``LoopBrake.acheck`` with a :class:`RedisStore` use ``redis.asyncio`` against
a real ``redis-server``: the same decisions as the sync and in-memory guards, no lost update
between two tasks, fail open (or closed) without Redis, and the event loop is not blocked."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import shared_data
from loopguard import LoopBrake, LoopBrakeError, LoopBrakeStoreError, RedisStore, ToolGuard, wrap_execute, wrap_tool
from redis_server import RedisServer, killable_store, require_redis
from store_workload import CANARY, Call, decide, session_calls

require_redis()


async def adecide(guard: ToolGuard, session: str, index: int, call: Call) -> tuple[Any, ...]:
    """:func:`store_workload.decide` through the async twins."""
    tool, args, result, error = call
    d = await guard.abefore_call(session, tool, args)
    out: list[tuple[str, str, str]] = []
    if d.allowed:
        notes = await guard.aafter_call(session, tool, args, result, error=error)
        out = [(x.action, x.kind, x.rule) for x in notes]
    return (index, d.action, d.kind, d.rule, d.call_index, tuple(out))


def test_async_decisions_equal_the_in_memory_and_sync_guards(make_store: Any, arun: Any) -> None:
    mem = ToolGuard()
    stores = [make_store() for _ in range(2)]
    replicas = [ToolGuard(store=st) for st in stores]
    sync_replica = ToolGuard(store=make_store())
    kinds: set[str] = set()

    async def main() -> int:
        compared = 0
        for sid in range(30):
            for i, call in enumerate(session_calls(sid)):
                want = decide(mem, f"s{sid}", i, call)
                if i % 3 == 2:  # every third call through a sync replica of the same sessions
                    got = decide(sync_replica, f"s{sid}", i, call)
                else:
                    got = await adecide(replicas[i % 2], f"s{sid}", i, call)
                assert got == want, (sid, i)
                kinds.update([want[3]] + [x[1] for x in want[5]])
                compared += 1
        return compared

    assert arun(main()) == 30 * 50
    assert {"repeat", "locked", "drift", "error_avoidance", "cycle", "circuit_breaker", "repeat_streak"} <= kinds
    assert sum(st.errors for st in stores) == 0


def test_in_memory_async_twins_are_the_sync_methods() -> None:
    guard = ToolGuard()
    args = {"pattern": "x", "path": "src"}

    async def main() -> list[str]:
        actions = []
        for _ in range(3):
            d = await guard.abefore_call("s", "grep", args)
            actions.append(d.action)
            if d.allowed:
                kinds = [n.kind for n in await guard.aafter_call("s", "grep", args, "a.py:3: x")]
                actions.append(",".join(kinds))
        return actions

    assert asyncio.run(main()) == ["allow", "", "allow", "repeat", "deny"]
    assert len(guard) == 1 and guard._remote is None


def test_two_async_tasks_on_one_session_lose_no_update(make_store: Any, arun: Any) -> None:
    stores = [make_store() for _ in range(2)]
    guards = [ToolGuard(store=st) for st in stores]

    async def work(g: ToolGuard, t: int) -> None:
        for i in range(60):
            await g.abefore_call("shared", "read_file", {"path": f"f{t}_{i}.py"})

    async def main() -> int:
        await asyncio.gather(work(guards[0], 0), work(guards[1], 1))
        index = (await guards[0].abefore_call("shared", "ls", {"path": "."})).call_index
        return index

    assert arun(main()) == 120  # 120 requests counted exactly once each
    assert sum(st.conflicts for st in stores) > 0  # the tasks did interleave, and were retried
    assert sum(st.errors for st in stores) == 0


def test_async_redis_killed_fails_open_counted_and_recovers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    srv, store = killable_store(tmp_path)
    guard = ToolGuard(store=store)
    args = {"pattern": "x", "path": "src"}
    caplog.set_level(logging.WARNING, logger="loopguard.store")

    async def main() -> tuple[str, list[str], list[str]]:
        first = (await guard.abefore_call("s", "grep", args)).action
        srv.kill()
        during = []
        for _ in range(5):  # the same call again and again: Redis is down, every one is allowed
            during.append((await guard.abefore_call("s", "grep", args)).action)
            assert await guard.aafter_call("s", "grep", args, "a.py:3: x") == []
            await asyncio.sleep(0.06)
        srv.start()  # back on the same port, empty
        await asyncio.sleep(0.06)
        after = []
        for _ in range(3):
            after.append((await guard.abefore_call("s2", "grep", args)).action)
            if after[-1] == "allow":
                await guard.aafter_call("s2", "grep", args, "a.py:3: x")
        await store.aclose()
        return first, during, after

    try:
        first, during, after = asyncio.run(main())
    finally:
        srv.kill()
    assert first == "allow" and during == ["allow"] * 5
    assert store.errors >= 5
    warnings = [r for r in caplog.records if r.name == "loopguard.store"]
    assert len(warnings) == 1 and "ConnectionError" in warnings[0].getMessage()
    assert after == ["allow", "allow", "deny"]  # decisions resumed against the restarted server


def test_async_without_redis_fails_closed_when_asked(tmp_path: Path) -> None:
    store = RedisStore(RedisServer(tmp_path).url)  # nothing listens there
    guard = ToolGuard(store=store, on_store_error="closed")

    async def main() -> Any:
        d = await guard.abefore_call("s", "grep", {"pattern": "x", "path": "src"})
        notes = await guard.aafter_call("s", "grep", {"pattern": "x"}, "r")
        await store.aclose()
        return d, notes

    d, notes = asyncio.run(main())
    assert (d.action, d.kind, d.rule) == ("deny", "store_unavailable", "store_unavailable")
    assert d.evidence == {"store": "unavailable"} and notes == []
    assert store.errors == 2


def test_a_slow_redis_does_not_block_the_event_loop(make_store: Any, arun: Any) -> None:
    store = make_store(socket_timeout=0.3)
    guard = ToolGuard(store=store)
    blocker = make_store().client
    t = threading.Thread(target=lambda: blocker.execute_command("DEBUG", "SLEEP", "0.6"))

    async def main() -> tuple[str, int, float]:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        tick = asyncio.create_task(ticker())
        t.start()
        await asyncio.sleep(0.05)
        started = time.monotonic()
        action = (await guard.abefore_call("slow", "ls", {})).action
        took = time.monotonic() - started
        tick.cancel()
        return action, ticks, took

    action, ticks, took = arun(main())
    t.join()
    assert action == "allow" and store.errors == 1
    assert took < 0.55  # the timeout, not the server's sleep
    assert ticks >= 10  # the loop kept running while the guard waited for Redis


def test_the_async_client_is_made_per_event_loop(make_store: Any, arun: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    args = {"pattern": "x", "path": "src"}
    clients = []

    async def once() -> str:
        d = await guard.abefore_call("s", "grep", args)
        if d.allowed:
            await guard.aafter_call("s", "grep", args, "a.py:3: x")
        clients.append(store._async[asyncio.get_running_loop()][0])
        await store.aclose()
        return d.action

    assert [asyncio.run(once()) for _ in range(3)] == ["allow", "allow", "deny"]  # three loops, one session
    assert len({id(c) for c in clients}) == 3 and store.errors == 0


def test_event_loops_in_two_threads_share_one_store(make_store: Any, arun: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    start = threading.Barrier(2)

    async def work(t: int) -> None:
        for i in range(40):
            await guard.abefore_call("threads", "read_file", {"path": f"f{t}_{i}.py"})
        await store.aclose()

    def run(t: int) -> None:
        start.wait()
        asyncio.run(work(t))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert guard.before_call("threads", "ls", {}).call_index == 80  # every request counted once
    assert store.errors == 0 and len(store._async) == 0


def test_async_loop_brake_shares_its_streak(make_store: Any, arun: Any) -> None:
    stores = [make_store() for _ in range(2)]
    a, b = LoopBrake(3, store=stores[0]), LoopBrake(3, store=stores[1])
    args = {"q": CANARY}

    async def main() -> tuple[list[int], int, int]:
        counts = [
            await a.acheck("search", args, session_id="s", call_id="c1"),
            b.check("search", args, session_id="s", call_id="c2"),  # a sync replica in between
            await a.acheck("search", args, session_id="s", call_id="c2"),  # the same call id: not counted again
        ]
        with pytest.raises(LoopBrakeError) as err:
            await b.acheck("search", args, session_id="s", call_id="c3")
        assert (err.value.count, err.value.max_repeats, type(err.value)) == (3, 3, LoopBrakeError)
        with pytest.raises(LoopBrakeError):  # denied again by its call id on the other replica
            await a.acheck("search", args, session_id="s", call_id="c3")
        other = await a.acheck("search", {"q": "other"}, session_id="s")
        return counts, other, b.streak("s")

    assert arun(main()) == ([1, 2, 2], 1, 1)
    raw = stores[0].client.hgetall(stores[0].key("s", "lb"))
    assert CANARY.encode() not in b"".join(raw.values())


def test_async_loop_brake_without_redis_fails_open_or_closed(tmp_path: Path) -> None:
    url = RedisServer(tmp_path).url  # nothing listens there
    open_store, closed_store = RedisStore(url), RedisStore(url)
    opened, closed = LoopBrake(2, store=open_store), LoopBrake(2, store=closed_store, on_store_error="closed")

    async def main() -> tuple[list[int], LoopBrakeStoreError]:
        counts = [await opened.acheck("t", {"x": 1}, session_id="s") for _ in range(3)]
        with pytest.raises(LoopBrakeStoreError) as err:
            await closed.acheck("t", {"x": CANARY}, session_id="s")
        await open_store.aclose()
        await closed_store.aclose()
        return counts, err.value

    counts, err = asyncio.run(main())
    assert counts == [1, 1, 1] and open_store.errors == 3
    assert closed_store.errors == 1 and err.count == 0 and err.rule == "store_unavailable"
    assert CANARY not in str(err) and "shared state store (Redis) is unavailable" in str(err)


def test_async_wrappers_use_the_async_store(make_store: Any, arun: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)
    brake = LoopBrake(3, store=store)
    ran: list[str] = []

    async def grep(args: dict[str, str]) -> str:
        ran.append("grep")
        return "a.py:3: needle"

    async def search(args: dict[str, str]) -> str:
        ran.append("search")
        return "1 hit"

    guarded = wrap_tool(grep, guard, tool="grep", session_id="w")
    braked = wrap_execute(search, brake, tool="search", session_id="w")
    sync_calls = {"n": 0}
    for name in ("get", "put", "swap"):
        real = getattr(store, name)

        def counting(*a: Any, _real: Any = real, **k: Any) -> Any:
            sync_calls["n"] += 1
            return _real(*a, **k)

        setattr(store, name, counting)

    async def main() -> tuple[list[str], list[int]]:
        out = [await guarded({"pattern": "needle", "path": "."}) for _ in range(3)]
        counts = []
        for _ in range(3):
            try:
                counts.append(len(await braked({"q": "x"})))
            except LoopBrakeError as exc:
                counts.append(-exc.count)
        return out, counts

    out, counts = arun(main())
    assert out[0] == "a.py:3: needle" and out[2].startswith("[loopguard] Duplicate tool call blocked")
    assert counts == [5, 5, -3]
    assert ran == ["grep", "grep", "search", "search"]
    assert sync_calls["n"] == 0  # the async bodies never used the blocking client


def _spy_sync_calls(store: Any, passed: list[int]) -> list[tuple[int, bool]]:
    """Record each use of the store's blocking client: (chunks passed so far, on the loop's thread)."""
    calls: list[tuple[int, bool]] = []
    loop_thread = threading.get_ident()  # the test runs the loop in this thread
    for name in ("get", "put", "swap", "counter"):
        real = getattr(store, name)

        def spy(*a: Any, _real: Any = real, **k: Any) -> Any:
            calls.append((len(passed), threading.get_ident() == loop_thread))
            return _real(*a, **k)

        setattr(store, name, spy)
    return calls


def test_an_async_stream_never_blocks_the_loop_on_redis_without_a_stop(make_store: Any, arun: Any) -> None:
    """A :class:`~loopguard.Session` with a shared store fed by an async adapter: its progress
    notes (one per second of stream, :meth:`ToolGuard.note_progress`) are written by tasks of the
    loop, and the end of the attempt (replay check, rescue count) runs in a worker thread: the
    blocking client is never used on the loop's thread; the stored progress is the last note's."""
    from loopguard import Session
    from loopguard.integrations.openai import aguard_stream
    from test_stream import chat_chunk

    now = [1000.0]
    store = make_store()
    session = Session("conv", store=store, clock=lambda: now[0])
    passed: list[int] = []
    sync_calls = _spy_sync_calls(store, passed)
    words = [f"word{i} " for i in range(40)]
    chunks = [chat_chunk({"role": "assistant", "content": ""})] + [chat_chunk({"content": w}) for w in words]

    async def upstream() -> Any:
        for chunk in chunks:
            now[0] += 1.5  # a second and a half between chunks: every chunk is due a progress note
            await asyncio.sleep(0)
            yield chunk
        yield chat_chunk({}, "stop")

    async def main() -> int:
        stream = aguard_stream(upstream(), session=session)
        async for _ in stream:
            passed.append(1)
        await store.aclose()  # waits for the notes still being written
        assert not stream.outcome.stopped
        return len(passed)

    count = arun(main())
    assert count == len(chunks) + 1
    assert sync_calls and all(at == count and not on_loop for at, on_loop in sync_calls)
    last_progress = session._guard._with("conv", lambda s: s.last_progress, -1.0, write=False)
    assert last_progress == now[0]  # the last note (the end of the attempt) is in Redis
    assert store.errors == 0


@shared_data
def test_an_async_stream_asks_redis_on_the_loop_only_for_the_stop(make_store: Any, arun: Any) -> None:
    """A looping stream on a shared store: the one use of the blocking client on the loop's thread
    is the stop's strike (one load, one compare-and-set write)."""
    from loopguard import Session
    from loopguard.integrations.openai import aguard_stream
    from test_stream import _agen, loop_chunks

    store = make_store()
    session = Session("conv", store=store)
    passed: list[int] = []
    sync_calls = _spy_sync_calls(store, passed)

    async def main() -> Any:
        stream = aguard_stream(_agen(loop_chunks()), session=session)
        async for _ in stream:
            passed.append(1)
        return stream.outcome

    outcome = arun(main())
    assert outcome.stopped and outcome.should_resume
    on_loop = [at for at, loop in sync_calls if loop]
    assert len(on_loop) == 2 and on_loop[0] == on_loop[1] < len(loop_chunks())  # at the stop, mid-stream
    assert session.guard.strikes("conv") == 1 and store.errors == 0


def test_the_stall_strike_and_replay_twins_equal_the_sync_methods(make_store: Any, arun: Any) -> None:
    """``acheck_stall``, ``astrike``, ``aobserve_attempt`` and ``anote_progress`` on a shared store
    give what the sync methods give in memory (same fake clock), without the blocking client."""
    now = [0.0]
    mem = ToolGuard(clock=lambda: now[0])
    store = make_store()
    shared = ToolGuard(store=store, clock=lambda: now[0])
    blocking: list[str] = []
    for name in ("get", "put", "swap"):
        real = getattr(store, name)
        setattr(store, name, lambda *a, _n=name, _r=real, **k: blocking.append(_n) or _r(*a, **k))
    answer = "The fix is in parser.py: the loop bound was off by one. " * 3  # >= min_replay_chars

    def sync_steps() -> list[Any]:
        out: list[Any] = [mem.check_stall("s")]
        now[0] = 11 * 60.0  # past stall_minutes (10) with no progress
        out.append(mem.check_stall("s"))
        out.append(mem.check_stall("s"))  # once per stall
        mem.note_progress("s")
        out += [mem.observe_attempt("s", text=answer), mem.observe_attempt("s", text=answer)]
        out.append(mem.strike("s", "text_loop"))  # the stall was strike 1: this one cancels
        return out

    async def async_steps() -> list[Any]:
        out: list[Any] = [await shared.acheck_stall("s")]
        now[0] = 11 * 60.0
        out.append(await shared.acheck_stall("s"))
        out.append(await shared.acheck_stall("s"))
        await shared.anote_progress("s")
        out += [await shared.aobserve_attempt("s", text=answer), await shared.aobserve_attempt("s", text=answer)]
        out.append(await shared.astrike("s", "text_loop"))
        return out

    want = sync_steps()
    now[0] = 0.0
    got = arun(async_steps())

    def shape(x: Any) -> Any:
        return x if x is None or isinstance(x, bool) else (x.action, x.kind, x.rule, x.evidence)

    assert [shape(x) for x in got] == [shape(x) for x in want]
    assert [shape(x) for x in want][:2] == [None, ("notice", "stalled", "stall", want[1].evidence)]
    assert want[3:5] == [False, True] and want[5].action == "cancel"  # replay on the second attempt
    assert blocking == [] and store.errors == 0
    with pytest.raises(TypeError, match="kind must be a non-empty str"):
        arun(shared.astrike("s", ""))
    with pytest.raises(TypeError, match="reasoning and text must be str"):
        arun(shared.aobserve_attempt("s", text=b"x"))  # type: ignore[arg-type]


def test_aclose_waits_for_the_progress_notes_of_many_streams(make_store: Any, arun: Any) -> None:
    """Fifty async streams of one store end with progress notes still being written; ``aclose``
    waits for them before closing the client: no note fails (no store error, no warning)."""
    from loopguard import Session
    from loopguard.integrations.openai import aguard_stream
    from test_stream import chat_chunk

    store = make_store()
    sessions = [Session(f"conv-{i}", store=store) for i in range(50)]
    real_aswap = store.aswap

    async def slow_aswap(*a: Any, **k: Any) -> Any:
        await asyncio.sleep(0.05)  # the writes outlive the streams
        return await real_aswap(*a, **k)

    store.aswap = slow_aswap  # type: ignore[method-assign]

    async def upstream() -> Any:
        yield chat_chunk({"role": "assistant", "content": ""})
        for i in range(20):
            await asyncio.sleep(0)
            yield chat_chunk({"content": f"word{i} "})
        yield chat_chunk({}, "stop")

    async def one(session: Session) -> int:
        return len([c async for c in aguard_stream(upstream(), session=session)])

    async def main() -> tuple[list[int], int]:
        counts = list(await asyncio.gather(*(one(s) for s in sessions)))
        pending = len(store._tasks)
        await store.aclose()
        return counts, pending

    counts, pending = arun(main())
    assert counts == [22] * 50 and pending > 0  # notes were still in flight when the streams ended
    assert store.errors == 0 and not store._tasks


def test_session_async_tool_twins_equal_the_sync_methods(make_store: Any, arun: Any) -> None:
    """``Session.atool_call`` / ``atool_result`` / ``acheck_stall`` on a shared store give the
    verdicts the sync methods give in memory, without the blocking client."""
    from loopguard import Session

    now = [0.0]
    mem = Session("conv", clock=lambda: now[0])
    store = make_store()
    shared = Session("conv", store=store, clock=lambda: now[0])
    blocking: list[str] = []
    for name in ("get", "put", "swap"):
        real = getattr(store, name)
        setattr(store, name, lambda *a, _n=name, _r=real, **k: blocking.append(_n) or _r(*a, **k))
    args, result = {"pattern": "TODO", "path": "src"}, "a.py:3: TODO"

    def shape(v: Any) -> tuple[str, str | None, str]:
        return (v.action, v.kind, v.reason.split("\n")[0][:60])

    want = []
    for _ in range(3):
        want.append(shape(mem.tool_call("grep", args)))
        want.append(shape(mem.tool_result("grep", args, result)))
    now[0] = 11 * 60.0
    want.append(shape(mem.check_stall()))

    async def main() -> list[Any]:
        got = []
        now[0] = 0.0
        for _ in range(3):
            got.append(shape(await shared.atool_call("grep", args)))
            got.append(shape(await shared.atool_result("grep", args, result)))
        now[0] = 11 * 60.0
        got.append(shape(await shared.acheck_stall()))
        return got

    assert arun(main()) == want
    assert [w[0] for w in want] == ["allow", "allow", "allow", "notice", "deny", "allow", "notice"]
    assert want[-1][1] == "stalled" and blocking == [] and store.errors == 0


def test_async_with_closes_both_clients(make_store: Any) -> None:
    store = make_store()
    guard = ToolGuard(store=store)

    async def main() -> tuple[str, int]:
        async with store:
            action = (await guard.abefore_call("s", "ls", {})).action
            guard.before_call("s", "ls", {})  # the sync client too
            made = len(store._async)
        return action, made

    action, made = asyncio.run(main())
    assert (action, made) == ("allow", 1) and len(store._async) == 0
    pool = store.client.connection_pool
    assert all(c._sock is None for c in pool._available_connections)  # disconnected
    with store as same:
        assert same is store and guard.before_call("s", "ls", {}).call_index == 2


def test_concurrent_async_calls_behind_a_slow_redis_each_wait_one_timeout(make_store: Any, arun: Any) -> None:
    """A fresh user's trial (issue 18): 20 concurrent calls during a Redis stall queued behind
    redis-py's connection pool (253, 504, 756, ... 2,767 ms); each is now bounded by the timeout."""
    store = make_store(socket_timeout=0.3)
    guard = ToolGuard(store=store)
    blocker = make_store().client
    t = threading.Thread(target=lambda: blocker.execute_command("DEBUG", "SLEEP", "2"))

    async def main() -> list[tuple[str, float]]:
        t.start()
        await asyncio.sleep(0.1)

        async def one(i: int) -> tuple[str, float]:
            started = time.monotonic()
            action = (await guard.abefore_call(f"s{i}", "ls", {})).action
            return action, time.monotonic() - started

        return await asyncio.gather(*(one(i) for i in range(20)))

    results = arun(main())
    t.join()
    assert [a for a, _ in results] == ["allow"] * 20
    assert max(took for _, took in results) < 0.9  # one timeout each (0.3 s), not a queue of them
