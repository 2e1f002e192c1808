"""The exact loop brake (spec §5.1, seed 000): counting, denial, secrecy, threads, memory, wrappers."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import doctest
import functools
import gc
import logging
import pickle
import threading
import traceback
import tracemalloc
from typing import Any, NamedTuple

import pytest

import loopguard.brake as brake_module
from loopguard.brake import (
    CALL_ID_MEMORY,
    ENV_MAX_REPEATS,
    InvalidMaxRepeatsError,
    LoopBrake,
    LoopBrakeError,
    decorate_tool,
    normalize_max_repeats,
    resolve_max_repeats,
    wrap_execute,
)
from loopguard.errors import ConfigError
from loopguard.guard.state import BoundedTable
from loopguard.identity import call_hash

CANARY = "sk-CANARY-7f3a9c2e1b5d4f60a8e7c6b5a4d3e2f1"


def deny(brake: LoopBrake, tool: str, args: Any, **kw: Any) -> LoopBrakeError:
    with pytest.raises(LoopBrakeError) as info:
        brake.check(tool, args, **kw)
    return info.value


# --------------------------------------------------------------------------- seed counting


def test_seed_streak_a_a_b_a() -> None:
    b = LoopBrake(5)
    a, other = {"q": "weather"}, {"q": "news"}
    assert b.check("search", a) == 1
    assert b.check("search", a) == 2
    assert b.streak() == 2
    assert b.check("search", other) == 1  # B: A's streak is gone
    assert b.check("search", a) == 1  # back to 1, not 3
    assert b.streak() == 1


def test_alternation_never_trips() -> None:
    b = LoopBrake(2)
    for _ in range(50):
        assert b.check("search", {"q": 1}) == 1
        assert b.check("search", {"q": 2}) == 1


def test_same_args_other_tool_is_another_call() -> None:
    b = LoopBrake(3)
    assert b.check("search", {"q": 1}) == 1
    assert b.check("grep", {"q": 1}) == 1
    assert b.check("grep", {"q": 1}) == 2


def test_third_identical_call_is_denied_with_seed_fields_and_message() -> None:
    b = LoopBrake()
    assert b.max_repeats == 3
    assert b.check("search", {"q": "weather"}, session_id="s1") == 1
    assert b.check("search", {"q": "weather"}, session_id="s1") == 2
    err = deny(b, "search", {"q": "weather"}, session_id="s1")
    prefix = call_hash("search", {"q": "weather"})[:12]
    assert err.code == "LOOP_BRAKE"
    assert err.tool_name == "search"
    assert err.count == 3
    assert err.max_repeats == 3
    assert err.hash_prefix == prefix
    assert len(err.hash_prefix) == 12
    assert err.session_id == "s1"
    assert err.plugin == "loopguard"
    assert str(err) == (
        f'loop brake: tool "search" called 3 times in a row with identical arguments '
        f"(call {prefix}…, limit 3); the call was denied before it ran. "
        "Change the arguments, call a different tool, or stop."
    )
    # the denied call counts: further identical calls stay denied until the arguments change
    assert deny(b, "search", {"q": "weather"}, session_id="s1").count == 4
    assert b.check("search", {"q": "weather "}, session_id="s1") == 1


def test_default_session_name_in_error() -> None:
    b = LoopBrake(1)
    err = deny(b, "t", {})
    assert err.session_id == "default"
    assert str(err).startswith('loop brake: tool "t" called 1 time in a row ')


def test_max_repeats_one_denies_every_call() -> None:
    b = LoopBrake(1)
    for i in range(5):
        err = deny(b, "read", {"path": f"f{i}"})
        assert err.count == 1
        assert err.max_repeats == 1
    assert deny(b, "read", {"path": "f4"}).count == 2


def test_sessions_never_share_counts() -> None:
    b = LoopBrake(3)
    for _ in range(2):
        assert b.check("search", {"q": "x"}, session_id="agent-1") == 1
        assert b.check("search", {"q": "x"}, session_id="agent-2") == 1
        b.check("search", {"q": "other"}, session_id="agent-1")
        b.check("search", {"q": "other"}, session_id="agent-2")
    b.reset()
    assert b.check("search", {"q": "x"}, session_id="agent-1") == 1
    assert b.check("search", {"q": "x"}, session_id="agent-2") == 1
    assert b.check("search", {"q": "x"}, session_id="agent-1") == 2
    assert b.check("search", {"q": "x"}, session_id="agent-2") == 2
    assert b.check("search", {"q": "x"}) == 1
    assert len(b) == 3


def test_key_order_is_one_call_trailing_space_is_two() -> None:
    b = LoopBrake(10)
    assert b.check("search", {"a": 1, "b": 2}) == 1
    assert b.check("search", {"b": 2, "a": 1}) == 2
    assert b.check("search", '{"b":2,"a":1}') == 3  # a JSON string is parsed first
    assert b.check("search", {"q": "weather"}) == 1
    assert b.check("search", {"q": "weather "}) == 1
    assert b.check("search", "weather") == 1
    assert b.check("search", "weather ") == 1
    assert b.check("search", "weather ") == 2


def test_unhashable_args_are_not_counted() -> None:
    b = LoopBrake(2)
    assert b.check("t", {"x": 1}) == 1
    with pytest.raises((TypeError, ValueError)):
        b.check("t", {"x": float("nan")})
    assert b.streak() == 1
    with pytest.raises(LoopBrakeError):
        b.check("t", {"x": 1})


# --------------------------------------------------------------------------- call ids


def test_call_id_counts_once() -> None:
    b = LoopBrake(3)
    assert b.check("search", {"q": 1}, call_id="c1") == 1
    assert b.check("search", {"q": 1}, call_id="c1") == 1
    assert b.check("search", {"q": 1}, call_id="c2") == 2
    assert b.check("search", {"q": 1}, call_id="c2") == 2
    err = deny(b, "search", {"q": 1}, call_id="c3")
    assert err.count == 3
    assert deny(b, "search", {"q": 1}, call_id="c3").count == 3  # a denied call stays denied
    assert b.streak() == 3
    # call ids are per session
    assert b.check("search", {"q": 1}, session_id="other", call_id="c1") == 1


def test_call_id_memory_is_bounded() -> None:
    b = LoopBrake(10**9)
    for i in range(CALL_ID_MEMORY + 10):
        b.check("t", {}, call_id=i)
    assert b.streak() == CALL_ID_MEMORY + 10
    assert b.check("t", {}, call_id=CALL_ID_MEMORY + 9) == CALL_ID_MEMORY + 10  # recent: remembered
    assert b.check("t", {}, call_id=0) == CALL_ID_MEMORY + 11  # forgotten: counted again


def test_one_call_id_through_both_wrappers_counts_once() -> None:
    runs: list[Any] = []
    b = LoopBrake(3)

    def body(args: dict[str, Any]) -> str:
        runs.append(args)
        return "ok"

    inner = wrap_execute(body, b, tool="search")  # the registered definition's execute

    def registry_execute(args: dict[str, Any], *, call_id: str, session_id: str) -> str:
        return inner(args, call_id=call_id, session_id=session_id)

    outer = wrap_execute(registry_execute, b, tool="search")  # the patched tools.execute
    assert outer({"q": 1}, call_id="c1", session_id="s") == "ok"
    assert b.streak("s") == 1
    assert outer({"q": 1}, call_id="c2", session_id="s") == "ok"
    assert b.streak("s") == 2
    with pytest.raises(LoopBrakeError) as info:
        outer({"q": 1}, call_id="c3", session_id="s")
    assert info.value.count == 3
    assert len(runs) == 2


# --------------------------------------------------------------------------- wrap_execute


def test_wrapped_sync_tool_body_does_not_run_on_denial() -> None:
    runs = 0

    def search(args: dict[str, Any]) -> str:
        """Search the web."""
        nonlocal runs
        runs += 1
        return f"result {runs}"

    b = LoopBrake(3)
    guarded = wrap_execute(search, b, tool="search", session_id="s1")
    assert guarded.__name__ == "search"
    assert guarded.__doc__ == "Search the web."
    assert guarded.__wrapped__ is search  # type: ignore[attr-defined]
    assert guarded({"q": "weather"}) == "result 1"
    assert guarded({"q": "weather"}) == "result 2"
    with pytest.raises(LoopBrakeError) as info:
        guarded({"q": "weather"})
    assert runs == 2
    assert info.value.session_id == "s1"
    assert info.value.count == 3
    assert guarded({"q": "other"}) == "result 3"
    assert runs == 3


def test_wrapped_async_tool_body_does_not_run_on_denial() -> None:
    runs = 0

    async def search(args: dict[str, Any]) -> str:
        nonlocal runs
        runs += 1
        await asyncio.sleep(0)
        return f"result {runs}"

    b = LoopBrake(3)
    guarded = wrap_execute(search, b, tool="search")
    import inspect

    assert inspect.iscoroutinefunction(guarded)
    assert guarded.__name__ == "search"

    async def main() -> None:
        assert await guarded({"q": "weather"}) == "result 1"
        assert await guarded({"q": "weather"}) == "result 2"
        with pytest.raises(LoopBrakeError) as info:
            await guarded({"q": "weather"})
        assert info.value.count == 3

    asyncio.run(main())
    assert runs == 2
    assert b.streak() == 3


def test_wrapped_async_callable_object() -> None:
    class Tool:
        runs = 0

        async def __call__(self, args: Any) -> int:
            self.runs += 1
            return self.runs

    tool = Tool()
    b = LoopBrake(2)
    guarded = wrap_execute(tool, b, tool="t")

    async def main() -> None:
        assert await guarded({"x": 1}) == 1
        with pytest.raises(LoopBrakeError):
            await guarded({"x": 1})

    asyncio.run(main())
    assert tool.runs == 1


def test_wrap_execute_keyword_args_and_session_passthrough() -> None:
    seen: list[tuple[Any, ...]] = []

    def plain(*, q: str) -> str:
        seen.append((q,))
        return q

    def with_session(*, q: str, session_id: str) -> str:
        seen.append((q, session_id))
        return q

    b = LoopBrake(3)
    g1 = wrap_execute(plain, b, tool="search", session_id="base")
    assert g1(q="x") == "x"  # session_id absent: "base"
    assert g1(q="x", session_id="s2") == "x"  # not passed to plain (it does not accept it)
    assert b.streak("base") == 1
    assert b.streak("s2") == 1
    # keyword arguments hash as the arguments object
    assert b.check("search", {"q": "x"}, session_id="base") == 2
    g2 = wrap_execute(with_session, b, tool="search")
    assert g2(q="y", session_id="s3") == "y"
    with pytest.raises(TypeError):
        g2(q="y")  # the wrapper adds no session_id the caller did not pass (same error as unwrapped)
    assert b.streak() == 1  # ... but the call was counted, in the default session, before fn ran
    assert seen == [("x",), ("x",), ("y", "s3")]
    assert b.streak("s3") == 1
    assert b.streak() == 1


def test_extra_positional_context_is_not_hashed() -> None:
    b = LoopBrake(3)
    calls: list[Any] = []

    def execute(args: Any, ctx: Any) -> None:
        calls.append(ctx)

    g = wrap_execute(execute, b, tool="t")
    g({"a": 1}, {"step": 1})
    g({"a": 1}, {"step": 2})
    with pytest.raises(LoopBrakeError):
        g({"a": 1}, {"step": 3})
    assert calls == [{"step": 1}, {"step": 2}]


# --------------------------------------------------------------------------- reset / dispose


def test_reset_and_dispose_let_the_first_call_run() -> None:
    runs = 0

    def body(args: Any) -> None:
        nonlocal runs
        runs += 1

    b = LoopBrake(2)
    g = wrap_execute(body, b, tool="t", session_id="s")
    g({})
    with pytest.raises(LoopBrakeError):
        g({})
    b.dispose()
    assert len(b) == 0
    g({})
    assert runs == 2
    with pytest.raises(LoopBrakeError):
        g({})
    b.reset("s")
    g({})
    assert runs == 3
    with pytest.raises(LoopBrakeError):
        g({})
    b.reset()
    g({})
    assert runs == 4
    # reset of one session leaves the others
    b.check("t", {}, session_id="keep")
    b.reset("s")
    assert b.streak("keep") == 1
    assert b.streak("s") == 0


# --------------------------------------------------------------------------- secrecy


def test_arguments_never_leak(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    b = LoopBrake(2)
    args = {"api_key": CANARY, "q": f"find {CANARY}"}

    def body(a: Any) -> None:
        pass

    g = wrap_execute(body, b, tool="search", session_id="s")
    g(args)
    try:
        g(args)
    except LoopBrakeError as exc:
        err = exc
    else:  # pragma: no cover
        pytest.fail("not denied")
    for text in (
        str(err),
        repr(err),
        repr(err.args),
        "".join(traceback.format_exception(err)),
        repr(vars(err)),
        repr(pickle.loads(pickle.dumps(err)).args),
    ):
        assert CANARY not in text
        assert "sk-" not in text
    # JSON-string arguments and call ids through check too
    b.check("search", '{"token": "' + CANARY + '"}', session_id="s", call_id="c")
    with pytest.raises(LoopBrakeError) as info:
        b.check("search", '{"token": "' + CANARY + '"}', session_id="s")
    assert CANARY not in "".join(traceback.format_exception(info.value))
    assert caplog.records, "the brake logs its decisions"
    assert {r.name for r in caplog.records} == {"loopguard.brake", "loopguard.decisions"}
    for record in caplog.records:
        assert CANARY not in record.getMessage()
        assert CANARY not in repr(record.args)
        assert CANARY not in repr(record.__dict__)
    denials = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(denials) == 2  # each denial once at WARNING: its decision record (issue 18)
    assert {r.name for r in denials} == {"loopguard.decisions"}
    assert "search" in denials[0].getMessage()
    assert err.hash_prefix in denials[0].getMessage()


def test_error_pickles() -> None:
    err = LoopBrakeError(tool_name="t", count=3, max_repeats=3, hash_prefix="0123456789abcdef", session_id="s")
    assert err.hash_prefix == "0123456789ab"
    back = pickle.loads(pickle.dumps(err))
    assert (back.tool_name, back.count, back.max_repeats, back.hash_prefix, back.session_id) == (
        "t",
        3,
        3,
        "0123456789ab",
        "s",
    )
    assert str(back) == str(err)


# --------------------------------------------------------------------------- threads


def test_threads_give_exact_counts() -> None:
    n_threads, per_thread = 8, 2_000
    b = LoopBrake(10**9)
    barrier = threading.Barrier(n_threads)
    private_results: dict[int, list[int]] = {}
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            mine: list[int] = []
            barrier.wait()
            for _ in range(per_thread):
                b.check("shared", {"k": "same"}, session_id="shared")
                mine.append(b.check("private", {"k": i}, session_id=f"p{i}"))
            private_results[i] = mine
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert b.streak("shared") == n_threads * per_thread
    for i in range(n_threads):
        assert b.streak(f"p{i}") == per_thread
        assert private_results[i] == list(range(1, per_thread + 1))
    assert len(b) == n_threads + 1


def test_threads_deny_exactly_once_per_streak_crossing() -> None:
    b = LoopBrake(1_000)
    allowed = [0] * 8
    denied = [0] * 8

    def work(i: int) -> None:
        for _ in range(500):
            try:
                b.check("t", {"same": True}, session_id="shared")
                allowed[i] += 1
            except LoopBrakeError:
                denied[i] += 1

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(allowed) == 999
    assert sum(denied) == 4_000 - 999


# --------------------------------------------------------------------------- memory


def test_lru_eviction() -> None:
    b = LoopBrake(5, max_sessions=3)
    for s in ("a", "b", "c"):
        b.check("t", {}, session_id=s)
    b.check("t", {}, session_id="a")  # a is now the most recent
    b.check("t", {}, session_id="d")  # evicts b
    assert len(b) == 3
    assert b.streak("b") == 0
    assert b.streak("a") == 2
    assert b.check("t", {}, session_id="b") == 1  # evicts c
    assert b.streak("c") == 0


@pytest.mark.slow
def test_million_sessions_memory_is_bounded() -> None:
    max_sessions = 10_000
    b = LoopBrake(3, max_sessions=max_sessions)
    evictions = [0]

    class CountingTable(BoundedTable[str, Any]):
        def popitem(self, last: bool = True) -> tuple[str, Any]:
            evictions[0] += 1
            return super().popitem(last)

    b._sessions = CountingTable(max_sessions)  # counts the work: one eviction per new session past the cap
    check = b.check
    args = None  # the cheapest arguments to hash ("null"): the test is about session slots
    gc.collect()
    tracemalloc.start()
    try:
        base, _ = tracemalloc.get_traced_memory()
        for i in range(10_000):  # fill to the cap
            check("t", args, session_id=i)
        filled, _ = tracemalloc.get_traced_memory()
        assert evictions[0] == 0
        tracemalloc.reset_peak()
        for i in range(10_000, 1_000_000):
            check("t", args, session_id=i)
        current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(b) == max_sessions
    # constant work per call: each new session past the cap dropped exactly the oldest one
    assert evictions[0] == 1_000_000 - max_sessions
    assert list(b._sessions) == [str(i) for i in range(1_000_000 - max_sessions, 1_000_000)]
    per_session = (filled - base) / max_sessions
    # one slot per session: key str (~50 B) + _Slot (~56 B) + 64-hex digest str (~113 B)
    # + OrderedDict entry and link (~150 B); ~400 B.  Bound it at 1 KB a session.
    assert per_session < 1_000, per_session
    bound = max_sessions * 1_000  # 10 MB
    assert current - base < bound, (current - base, bound)
    assert peak - base < bound, (peak - base, bound)
    # memory after 1M sessions is what it was after 10k: no growth with session count
    assert current - filled < 0.25 * (filled - base), (current, filled, base)
    assert b.streak(999_999) == 1
    assert b.streak(0) == 0


# --------------------------------------------------------------------------- max_repeats


@pytest.mark.parametrize("bad", [0, -1, 1.5, 3.0, True, False, "3x", "", " ", "1.5", "-2", "0", [3], "三"])
def test_invalid_max_repeats_at_construction(bad: Any) -> None:
    with pytest.raises(InvalidMaxRepeatsError) as info:
        LoopBrake(bad)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ConfigError)
    assert info.value.key == "max_repeats"
    assert info.value.source == "max_repeats"
    assert info.value.rule == "an integer >= 1"
    assert "max_repeats" in str(info.value)


def test_invalid_max_repeats_message() -> None:
    with pytest.raises(InvalidMaxRepeatsError) as info:
        normalize_max_repeats("3x")
    assert str(info.value) == "LoopBrake: max_repeats='3x' is invalid: must be an integer >= 1"


@pytest.mark.parametrize(
    ("good", "want"), [(1, 1), (3, 3), (10**6, 10**6), ("4", 4), (" 7 ", 7), ("+2", 2), ("007", 7)]
)
def test_valid_max_repeats(good: Any, want: int) -> None:
    assert normalize_max_repeats(good) == want
    assert LoopBrake(good).max_repeats == want


def test_invalid_max_sessions() -> None:
    for bad in (0, -1, 1.5, True, "10"):
        with pytest.raises(ConfigError, match="max_sessions"):
            LoopBrake(3, max_sessions=bad)  # type: ignore[arg-type]


def test_resolve_max_repeats() -> None:
    assert resolve_max_repeats(None, {}) == 3
    assert resolve_max_repeats(env={}) == 3
    assert resolve_max_repeats(None, {ENV_MAX_REPEATS: "5"}) == 5
    assert resolve_max_repeats(None, {ENV_MAX_REPEATS: ""}) == 3  # empty = unset
    assert resolve_max_repeats(2, {ENV_MAX_REPEATS: "5"}) == 2  # the key wins
    assert resolve_max_repeats("6", {ENV_MAX_REPEATS: "5"}) == 6
    assert resolve_max_repeats(2, {ENV_MAX_REPEATS: "garbage"}) == 2  # env not read when the key is set
    with pytest.raises(InvalidMaxRepeatsError) as info:
        resolve_max_repeats(None, {ENV_MAX_REPEATS: "3x"})
    assert info.value.key == ENV_MAX_REPEATS == "LOOPGUARD_MAX_REPEATS"
    assert str(info.value) == ("environment: LOOPGUARD_MAX_REPEATS='3x' is invalid: must be an integer >= 1")
    for bad in ("0", "-1", "1.5", "true"):
        with pytest.raises(InvalidMaxRepeatsError, match="LOOPGUARD_MAX_REPEATS"):
            resolve_max_repeats(None, {ENV_MAX_REPEATS: bad})
    with pytest.raises(InvalidMaxRepeatsError) as info2:
        resolve_max_repeats(0, {ENV_MAX_REPEATS: "4"})
    assert info2.value.key == "max_repeats"


def test_resolve_max_repeats_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MAX_REPEATS, "7")
    assert resolve_max_repeats() == 7
    assert resolve_max_repeats(4) == 4
    monkeypatch.setenv(ENV_MAX_REPEATS, "nope")
    with pytest.raises(InvalidMaxRepeatsError, match=ENV_MAX_REPEATS):
        resolve_max_repeats()
    monkeypatch.delenv(ENV_MAX_REPEATS)
    assert resolve_max_repeats() == 3


# --------------------------------------------------------------------------- decorate_tool


def _counting_execute() -> tuple[Any, list[Any]]:
    runs: list[Any] = []

    def execute(args: Any) -> int:
        runs.append(args)
        return len(runs)

    return execute, runs


def test_decorate_tool_mapping_is_a_copy() -> None:
    execute, runs = _counting_execute()
    definition = {"name": "search", "description": "web", "execute": execute}
    snapshot = dict(definition)
    b = LoopBrake(2)
    braked = decorate_tool(definition, b)
    assert braked is not definition
    assert definition == snapshot and definition["execute"] is execute
    assert braked["name"] == "search" and braked["description"] == "web"
    assert braked["execute"] is not execute
    assert braked["execute"]({"q": 1}) == 1
    with pytest.raises(LoopBrakeError) as info:
        braked["execute"]({"q": 1})
    assert info.value.tool_name == "search"
    assert len(runs) == 1
    assert definition["execute"]({"q": 1}) == 2  # the original is not braked


def test_decorate_tool_object_is_a_copy() -> None:
    class Tool:
        def __init__(self) -> None:
            self.name = "grep"
            self.runs = 0

        def execute(self, args: Any) -> int:
            self.runs += 1
            return self.runs

    tool = Tool()
    b = LoopBrake(2)
    braked = decorate_tool(tool, b)
    assert braked is not tool and type(braked) is Tool
    assert "execute" not in vars(tool)
    assert braked.execute({"p": "x"}) == 1
    with pytest.raises(LoopBrakeError):
        braked.execute({"p": "x"})
    assert braked.runs == 1  # the body ran on the copy, once
    assert tool.runs == 0
    assert tool.execute({"p": "x"}) == 1  # original untouched, not braked
    assert tool.execute({"p": "x"}) == 2


def test_decorate_tool_frozen_dataclass_and_namedtuple() -> None:
    execute, runs = _counting_execute()

    @dataclasses.dataclass(frozen=True)
    class Def:
        name: str
        execute: Any

    class NT(NamedTuple):
        name: str
        execute: Any

    b = LoopBrake(2)
    for original in (Def("a", execute), NT("b", execute)):
        braked = decorate_tool(original, b)
        assert type(braked) is type(original)
        assert original.execute is execute
        braked.execute({})
        with pytest.raises(LoopBrakeError):
            braked.execute({})
    assert len(runs) == 2


def test_decorate_tool_async_mapping() -> None:
    runs = 0

    async def execute(args: Any) -> str:
        nonlocal runs
        runs += 1
        return "ok"

    braked = decorate_tool({"name": "fetch", "execute": execute}, LoopBrake(2))

    async def main() -> None:
        assert await braked["execute"]({"u": 1}, session_id="s") == "ok"
        with pytest.raises(LoopBrakeError) as info:
            await braked["execute"]({"u": 1}, session_id="s")
        assert info.value.session_id == "s"

    asyncio.run(main())
    assert runs == 1


def test_decorate_tool_callable_object_without_execute() -> None:
    class Tool:
        name = "calc"

        def __init__(self) -> None:
            self.runs = 0

        def __call__(self, args: Any) -> int:
            self.runs += 1
            return self.runs

    tool = Tool()
    b = LoopBrake(2)
    braked = decorate_tool(tool, b)
    assert braked is not tool and isinstance(braked, Tool)
    assert braked({"x": 1}) == 1
    with pytest.raises(LoopBrakeError):
        braked({"x": 1})
    assert braked.runs == 1
    assert tool({"x": 1}) == 1 and tool({"x": 1}) == 2  # original not braked
    assert type(tool) is Tool


def test_decorate_tool_function() -> None:
    execute, runs = _counting_execute()
    braked = decorate_tool(execute, LoopBrake(1))
    assert braked is not execute
    with pytest.raises(LoopBrakeError) as info:
        braked({})
    assert info.value.tool_name == "execute"
    assert runs == []


def test_decorate_tool_rejects_bad_definitions() -> None:
    b = LoopBrake()
    with pytest.raises(TypeError):
        decorate_tool({"name": "x"}, b)
    with pytest.raises(TypeError):
        decorate_tool({"execute": print}, b)
    with pytest.raises(TypeError):
        decorate_tool(object(), b)


def test_wrapper_metadata_with_partial() -> None:
    def base(args: Any, scale: int) -> int:
        return scale

    g = wrap_execute(functools.partial(base, scale=2), LoopBrake(), tool="p")
    assert g({}) == 2
    assert copy.copy(g) is g


def test_doctests() -> None:
    result = doctest.testmod(brake_module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


# --- found by an independent review -------------------------------------------------------
def test_nested_wrappers_pass_call_and_session_ids_through() -> None:
    brake = LoopBrake(3)
    ran = []

    def body(args: Any) -> str:
        ran.append(args)
        return "ok"

    inner = wrap_execute(body, brake, tool="search")
    outer = wrap_execute(inner, brake, tool="search")
    outer({"q": 1}, call_id="c1")
    assert brake.streak() == 1  # one host call seen by two wrappers counts once
    outer({"q": 1}, session_id="S", call_id="c2")
    assert (brake.streak("S"), brake.streak()) == (1, 1)
    assert len(ran) == 2


def test_a_reused_call_id_with_other_arguments_is_a_new_call() -> None:
    brake = LoopBrake(3)
    assert brake.check("t", {"a": 1}, call_id="c1") == 1
    assert brake.check("t", {"a": 1}, call_id="c1") == 1  # the same call seen again
    assert brake.check("t", {"a": 2}, call_id="c1") == 1  # a new call that reused the id
    assert brake.check("t", {"a": 2}, call_id="c2") == 2


def test_the_environment_applies_when_the_key_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_MAX_REPEATS, "7")
    assert LoopBrake().max_repeats == 7
    assert LoopBrake(4).max_repeats == 4  # explicit config wins
    monkeypatch.delenv(ENV_MAX_REPEATS)
    assert LoopBrake().max_repeats == 3
