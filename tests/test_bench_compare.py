"""``benchmarks/measure.py`` and ``benchmarks/compare.py`` compute their figures correctly.

On tiny inputs against this tree (no other commit is built): the real-text corpus keeps clean
records in file and record order; a timed run does the work it claims (the same detections
as one bulk feed); a rate is code points over the best CPU time and a delta cost the CPU time
over the delta count (checked with a fake clock); ``bytes*/*`` is ``memory_bytes``; the table
reduces samples as documented and its ratio is head/base; and one real round through a
subprocess (what ``compare.py`` runs per round and tree) gives sane values.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

import pytest

import loopcore
from conftest import shared_data
from loopguard import TextConfig

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def _load(name: str) -> ModuleType:
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))  # they import their siblings (corpus, memory)
    spec = importlib.util.spec_from_file_location(f"loopguard_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


corpus = _load("corpus")
compare = _load("compare")
COMPILED = "cython" in loopcore.implementations()
needs_core = pytest.mark.skipif(not COMPILED, reason="the compiled core is not built")
measure = _load("measure")  # imports without the compiled core too (its figures then raise TreeError)

EN = corpus.english(2000)
ZH = corpus.chinese(2000)
LOOP = corpus.english(1200, seed=7) + ("The cache key was stale, so I refreshed it and checked again. " * 40)


def _params() -> dict:
    return TextConfig("default").stream_params("reasoning")


# ----------------------------------------------------------------------------- the corpus


def _jsonl(path: Path, records: list[tuple[str, bool | None]]) -> None:
    path.write_text(
        "".join(json.dumps({"id": i, "text": t, "looping": lp}) + "\n" for i, (t, lp) in enumerate(records)),
        encoding="utf-8",
    )


def test_real_stream_keeps_clean_records_in_file_then_record_order(tmp_path: Path) -> None:
    _jsonl(tmp_path / "b.jsonl", [("B1", False), ("loop loop", True), ("B2", False)])
    _jsonl(tmp_path / "a.jsonl", [("A1", False), ("neither", None)])
    assert corpus.real_texts(tmp_path) == ("A1", "B1", "B2")
    whole = "A1\n\nB1\n\nB2"
    assert corpus.real_stream(len(whole), tmp_path) == whole
    assert corpus.real_stream(5, tmp_path) == "A1\n\nB"
    # longer than the corpus: the corpus again, after the same separator
    assert corpus.real_stream(20, tmp_path) == (whole + "\n\n" + whole)[:20]
    assert len(corpus.real_stream(1000, tmp_path)) == 1000


def test_real_stream_says_where_the_data_comes_from(tmp_path: Path) -> None:
    with pytest.raises(corpus.RealDataMissing, match="shared"):
        corpus.real_texts(tmp_path / "missing")
    assert not corpus.real_available(tmp_path / "missing")


@shared_data
def test_real_stream_is_the_bench_records() -> None:
    texts = corpus.real_texts()
    assert len(texts) == 6007  # the clean records of the three bench files
    head = corpus.real_stream(len(texts[0]) + 2 + 100)
    assert head == texts[0] + "\n\n" + texts[1][:100]


def test_generated_sizes_are_prefixes() -> None:
    """compare.py writes each stream once at the largest size and measures its prefixes."""
    assert corpus.english(5000)[:2000] == EN
    assert corpus.chinese(5000)[:2000] == ZH


# ------------------------------------------------------------------- measure.py's figures


@needs_core
def test_timed_runs_do_the_work() -> None:
    """The delta runs feed every delta: they report what one bulk feed of the text reports."""
    s = loopcore.implementation("cython").ChannelStream(**_params())
    bulk = len(s.feed(LOOP)) + len(s.finish())
    assert bulk > 0
    parts = [LOOP[i : i + 4] for i in range(0, len(LOOP), 4)]
    assert measure._stream_run(parts)() == bulk
    assert measure._api_run(parts)() > 0
    assert measure._stream_run([EN[i : i + 4] for i in range(0, len(EN), 4)])() == 0  # healthy English


@needs_core
def test_rates_and_delta_costs_from_a_fake_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    step = 0.004  # every timed call takes 4 ms of "CPU time"
    clock = itertools.count()
    monkeypatch.setattr(measure.time, "process_time", lambda: next(clock) * step)
    seconds = measure.bulk_seconds(EN, min_time=0.01)
    assert seconds == pytest.approx([step] * 3)  # repeated until 10 ms were spent
    assert measure.bulk_rate(EN, min_time=0) == pytest.approx(2000 / step / 1e6)  # 0.5 M cp/s
    parts = [EN[i : i + 4] for i in range(0, 2000, 4)]
    assert measure.delta_ns("ChannelStream", parts, reps=2) == pytest.approx([step / 500 * 1e9] * 2)  # 8,000 ns
    assert measure.delta_ns("TextLoopDetector", parts, reps=1) == pytest.approx([8000.0])


@needs_core
def test_one_round_on_tiny_streams() -> None:
    figures = measure.one_round({"en": EN, "zh": ZH}, sizes=(1000, 2000), delta_chars=2000, delta_reps=2, min_time=0)
    assert set(figures) == {
        "bulk/en/1000",
        "bulk/en/2000",
        "bulk/zh/1000",
        "bulk/zh/2000",
        "delta/ChannelStream",
        "delta/TextLoopDetector",
        "bytes/latin-1",
        "bytes/chinese",
        "bytes/emoji",
        "bytes/idle",
        "bytes-repeated/latin-1",
        "bytes-repeated/chinese",
        "bytes-repeated/emoji",
    }
    for key, samples in figures.items():
        if key.startswith("bulk/"):
            assert len(samples) == 1 and 0.5 < samples[0] < 5000, (key, samples)  # M cp/s
        elif key.startswith("delta/"):
            assert len(samples) == 2 and all(10 < x < 200_000 for x in samples), (key, samples)  # ns/delta
    cls = loopcore.implementation("cython").ChannelStream
    texts = {"latin-1": EN, "chinese": ZH, "emoji": EN[:1000] + "\U0001f680" + EN[1000:1999], "idle": ""}
    for name, text in texts.items():
        assert measure.bytes_text(name) == text and len(text) in (0, 2000)
        s = cls(**_params())
        s.feed(text)
        assert figures[f"bytes/{name}"] == [s.memory_bytes]
        if name != "idle":
            r = cls(**_params())
            r.feed(measure.memory.TEXTS[name])
            assert figures[f"bytes-repeated/{name}"] == [r.memory_bytes] >= [s.memory_bytes]  # + cycle scratch
    sizes = [figures[f"bytes/{name}"][0] for name in ("idle", "latin-1", "chinese", "emoji")]
    assert sizes == sorted(sizes) and len(set(sizes)) == 4  # nothing, then 1, 2 and 4 bytes per code point


# ------------------------------------------------------------------------- compare.py


def test_table_reduces_samples_and_divides_head_by_base() -> None:
    base = {
        "bulk/en/2000": [10.0, 20.0],
        "delta/ChannelStream": [300.0, 100.0, 200.0],
        "bytes/latin-1": [131072.0],
        "rss/idle": [4096.0, 6144.0, 5120.0],
    }
    head = {
        "bulk/en/2000": [30.0, 25.0],
        "delta/ChannelStream": [90.0, 110.0, 400.0],
        "bytes/latin-1": [65536.0],
        "rss/idle": [5120.0],
    }
    text, values = compare.table(base, head, (2000,), "base `a`", "head `b`", channels=100)
    assert values == [
        ("bulk `feed`, English, 2k (M cp/s, best)", 20.0, 30.0, 1.5),
        ("`ChannelStream.feed`, 4-cp deltas (ns/delta, min)", 100.0, 90.0, 0.9),
        ("`ChannelStream.feed`, 4-cp deltas (ns/delta, median)", 200.0, 110.0, 0.55),
        ("`memory_bytes` per channel, after 2,000 cp of Latin-1 prose", 131072.0, 65536.0, 0.5),
        ("RSS per channel, 100 channels, idle", 5120.0, 5120.0, 1.0),
    ]
    lines = text.splitlines()
    assert lines[0] == "| figure | base `a` | head `b` | head/base |"
    assert lines[2] == "| bulk `feed`, English, 2k (M cp/s, best) | 20.0 | 30.0 | 1.50 |"
    assert lines[4] == "| `ChannelStream.feed`, 4-cp deltas (ns/delta, median) | 200 | 110 | 0.55 |"
    assert lines[5] == "| `memory_bytes` per channel, after 2,000 cp of Latin-1 prose | 128.0 KiB | 64.0 KiB | 0.50 |"
    assert compare.merge([{"a": [1.0]}, {"a": [2.0], "b": [3.0]}]) == {"a": [1.0, 2.0], "b": [3.0]}
    assert [side for _, side, _ in compare.interleave({"base": Path("b"), "head": Path("h")}, 2)] == [
        "base",
        "head",
        "base",
        "head",
    ]


def test_unknown_revisions_are_refused() -> None:
    with pytest.raises(compare.CompareError, match="not a commit"):
        compare.resolve("no-such-revision-anywhere")


@needs_core
def test_one_round_through_a_subprocess(tmp_path: Path) -> None:
    """What compare.py runs per round and tree, here twice against this tree: the ratios of
    the exact figures are 1 and ``bytes/*`` is ``memory_bytes``; the RSS run is memory.py's."""
    if not (ROOT / "src" / "loopcore" / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))).exists():
        pytest.skip("the compiled core is not built in place in src/ for this Python (compare.py builds it there)")
    paths = {}
    for name, text in (("en", EN), ("zh", ZH)):
        paths[name] = tmp_path / f"{name}.txt"
        paths[name].write_text(text, encoding="utf-8")
    args = [a for name, p in paths.items() for a in ("--stream", f"{name}={p}")]
    args += ["--sizes", "2000", "--delta-chars", "2000", "--delta-reps", "1", "--min-time", "0"]
    first, second = compare.run_measure(ROOT, args), compare.run_measure(ROOT, args)
    rss = compare.run_measure(ROOT, ["--rss", "latin-1", "--channels", "300"])
    text, values = compare.table(compare.merge([first, rss]), compare.merge([second, rss]), (2000,), channels=300)
    by_label = {label: (b, h, r) for label, b, h, r in values}
    assert len(values) == 2 + 4 + 4 + 3 + 1
    s = loopcore.implementation("cython").ChannelStream(**_params())
    s.feed(measure.memory.TEXTS["latin-1"])
    label = "`memory_bytes` per channel, after `memory.py`'s repeated Latin-1 sentence (+ cycle scratch)"
    assert by_label[label] == (s.memory_bytes, s.memory_bytes, 1.0)
    e = loopcore.implementation("cython").ChannelStream(**_params())
    e.feed(EN)
    healthy = by_label["`memory_bytes` per channel, after 2,000 cp of Latin-1 prose"]
    assert healthy == (e.memory_bytes, e.memory_bytes, 1.0)
    b, h, r = by_label["bulk `feed`, English, 2k (M cp/s, best)"]
    assert 0.5 < b < 5000 and 0.5 < h < 5000 and r == pytest.approx(h / b)
    b, h, r = by_label["RSS per channel, 300 channels, `memory.py`'s Latin-1 text"]
    assert 0 < b <= 1.5 * s.memory_bytes and r == 1.0  # the untouched tail of the buffer is not resident
    assert all(math.isfinite(v[3]) for v in values)
    assert "| RSS per channel, 300 channels, `memory.py`'s Latin-1 text |" in text


def test_callgrind_totals_are_read() -> None:
    out = "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nfl=(1) x.c\nfn=(1) f\n3 12\nsummary: 4500\ntotals: 4500\n"
    assert compare.callgrind_total(out) == 4500
    assert compare.callgrind_total("events: Ir\nsummary: 77\n") == 77
    with pytest.raises(compare.CompareError, match="no totals"):
        compare.callgrind_total("events: Ir\n")


@pytest.mark.slow
@needs_core
def test_instructions_per_code_point_are_counted_inside_the_feed_and_repeat_exactly(tmp_path: Path) -> None:
    """``compare.py --instructions`` on this tree: the count is deterministic (two runs agree to
    the instruction) and covers the feed's work (an English code point costs tens to hundreds
    of instructions, not the interpreter's millions); the table shows it with its ratio."""
    if not (ROOT / "src" / "loopcore" / ("_core" + sysconfig.get_config_var("EXT_SUFFIX"))).exists():
        pytest.skip("the compiled core is not built in place in src/ for this Python (compare.py builds it there)")
    stream = tmp_path / "en.txt"
    stream.write_text(corpus.english(6000), encoding="utf-8")
    first = compare.instructions_per_cp(ROOT, stream, tmp_path, size=5000)
    second = compare.instructions_per_cp(ROOT, stream, tmp_path, size=5000)
    assert first == second
    assert 20 < first < 2000
    text, values = compare.table({"instructions/en": [first]}, {"instructions/en": [first / 2]}, ())
    assert values == [("instructions per code point, one `feed` of 1M, English (callgrind)", first, first / 2, 0.5)]
