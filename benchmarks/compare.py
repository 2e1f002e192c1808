"""The compiled core's figures for two commits, measured in one run, as a Markdown table.

Run: ``python benchmarks/compare.py --base REV [--head REV | --worktree] [--rounds 5] [--long]
[--memory]``.  ``REV`` (and ``--head REV``) is checked out into a temporary ``git worktree add
--detach`` and its core built in place (``python setup.py -q build_ext --inplace``, with
``LOOPCORE_REQUIRE_EXTENSION=1``); ``--worktree`` (the default head) is this checkout as it is,
uncommitted changes included, built in place the same way.  The streams are generated once
(``corpus.py``: ``english``, ``chinese``, ``real_stream``) into the temporary directory; then
``benchmarks/measure.py`` -- this checkout's, for both trees -- runs in a fresh process per round
and tree, ``PYTHONPATH=<tree>/src``, alternately base, head, base, head ... for ``--rounds``
rounds.  Per figure: bulk throughput is the best round (the fastest repetition: noise only
slows), delta costs the minimum and the median of every repetition of every round, sizes the
median (they are exact).  ``head/base`` is the ratio of the unrounded values.  The temporary
worktrees are removed on exit, failures and Ctrl-C included.

``--long`` adds the 10M-code-point streams; ``--memory`` adds ``memory.py``'s resident set of
10,000 open channels (a fresh process per text, round and tree; slow); ``--instructions`` adds
the instructions executed per code point inside ``ChannelStream``'s feed of 1M code points of
each stream, counted by valgrind's callgrind (once per tree: the count does not depend on the
machine's load, so it shows a change the timings' noise hides); ``--json FILE`` keeps every
sample.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MEASURE = HERE / "measure.py"
sys.path.insert(0, str(HERE))

import corpus  # noqa: E402  (no loopguard import: safe in any interpreter)

SIZES = (10_000, 100_000, 1_000_000)
LONG_SIZE = 10_000_000
RSS_TEXTS = ("idle", "latin-1", "chinese", "emoji")
STREAM_LABELS = {"en": "English", "zh": "Chinese", "real": "real text"}
BYTES_LABELS = {"latin-1": "Latin-1", "chinese": "Chinese", "emoji": "emoji", "idle": "idle"}  # measure.BYTES_TEXTS
HEALTHY_LABELS = {"latin-1": "Latin-1 prose", "chinese": "Chinese prose", "emoji": "Latin-1 prose with one emoji"}


class CompareError(RuntimeError):
    pass


# ------------------------------------------------------------------ figures and the table


@dataclass(frozen=True)
class Row:
    label: str
    key: str  # the samples' key in measure.py's output
    reduce: Callable[[list[float]], float]
    fmt: Callable[[float], str]


def _kib(x: float) -> str:
    return f"{x / 1024:.1f} KiB"


def rows_for(keys: set[str], sizes: tuple[int, ...], channels: int = 10_000) -> list[Row]:
    """The table's rows for the sample keys present, in a fixed order."""
    rows: list[Row] = []
    for name, label in STREAM_LABELS.items():
        for n in sizes:
            key = f"bulk/{name}/{n}"
            if key in keys:
                rows.append(Row(f"bulk `feed`, {label}, {_count(n)} (M cp/s, best)", key, max, lambda x: f"{x:.1f}"))
    for kind in ("ChannelStream", "TextLoopDetector"):
        key = f"delta/{kind}"
        if key in keys:
            rows.append(Row(f"`{kind}.feed`, 4-cp deltas (ns/delta, min)", key, min, lambda x: f"{x:.0f}"))
            rows.append(
                Row(f"`{kind}.feed`, 4-cp deltas (ns/delta, median)", key, statistics.median, lambda x: f"{x:.0f}")
            )
    for name, label in STREAM_LABELS.items():
        key = f"instructions/{name}"
        if key in keys:
            rows.append(
                Row(
                    f"instructions per code point, one `feed` of 1M, {label} (callgrind)",
                    key,
                    min,
                    lambda x: f"{x:.1f}",
                )
            )
    for name in BYTES_LABELS:
        key = f"bytes/{name}"
        if key in keys:
            what = "idle" if name == "idle" else f"after 2,000 cp of {HEALTHY_LABELS[name]}"
            rows.append(Row(f"`memory_bytes` per channel, {what}", key, statistics.median, _kib))
    for name, label in BYTES_LABELS.items():
        key = f"bytes-repeated/{name}"
        if key in keys:
            what = f"after `memory.py`'s repeated {label} sentence (+ cycle scratch)"
            rows.append(Row(f"`memory_bytes` per channel, {what}", key, statistics.median, _kib))
    for name, label in BYTES_LABELS.items():
        key = f"rss/{name}"
        if key in keys:
            what = "idle" if name == "idle" else f"`memory.py`'s {label} text"
            rows.append(Row(f"RSS per channel, {channels:,} channels, {what}", key, statistics.median, _kib))
    return rows


def _count(n: int) -> str:
    return f"{n // 1_000_000}M" if n >= 1_000_000 else f"{n // 1000}k"


def merge(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    """Every round's samples per key, in order."""
    out: dict[str, list[float]] = {}
    for figures in rounds:
        for key, samples in figures.items():
            out.setdefault(key, []).extend(samples)
    return out


def table(
    base: dict[str, list[float]],
    head: dict[str, list[float]],
    sizes: tuple[int, ...],
    base_name: str = "base",
    head_name: str = "head",
    channels: int = 10_000,
) -> tuple[str, list[tuple[str, float, float, float]]]:
    """The Markdown table and its rows' values ``(label, base, head, head/base)``."""
    keys = set(base) & set(head)
    lines = [f"| figure | {base_name} | {head_name} | head/base |", "|---|---:|---:|---:|"]
    values = []
    for row in rows_for(keys, sizes, channels):
        b, h = row.reduce(base[row.key]), row.reduce(head[row.key])
        ratio = h / b if b else float("nan")
        values.append((row.label, b, h, ratio))
        lines.append(f"| {row.label} | {row.fmt(b)} | {row.fmt(h)} | {ratio:.2f} |")
    return "\n".join(lines), values


# ------------------------------------------------------------------------------ git, build


def git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise CompareError(f"git {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout.strip()


def describe(rev: str, cwd: Path = ROOT) -> str:
    return git("log", "-1", "--format=%h %ad %s", "--date=short", rev, cwd=cwd)


def resolve(rev: str) -> str:
    try:
        sha = git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    except CompareError:
        raise CompareError(f"{rev!r} is not a commit of {ROOT}") from None
    for path in ("setup.py", "src/loopcore/_core.pyx"):
        if subprocess.run(["git", "cat-file", "-e", f"{sha}:{path}"], cwd=ROOT, capture_output=True).returncode:
            raise CompareError(
                f"{rev} ({sha[:10]}) has no {path}: it predates the compiled core, "
                "compare.py measures trees that build loopcore's Cython extension"
            )
    return sha


def build(tree: Path) -> float:
    """Build the tree's core in place; seconds taken."""
    start = time.monotonic()
    env = {**os.environ, "LOOPCORE_REQUIRE_EXTENSION": "1"}
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=tree, env=env, capture_output=True, text=True
    )
    if done.returncode or not list((tree / "src" / "loopcore").glob("_core*.so")):
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise CompareError(f"building the compiled core in {tree} failed (exit {done.returncode}):\n{tail}")
    return time.monotonic() - start


class Worktrees:
    """Temporary detached worktrees, removed on exit whatever happens."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.paths: list[Path] = []

    def add(self, sha: str, name: str) -> Path:
        path = self.tmp / name
        git("worktree", "add", "--detach", "--quiet", str(path), sha)
        self.paths.append(path)
        return path

    def remove(self) -> None:
        for path in self.paths:
            subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT, capture_output=True)
        self.paths = []
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, capture_output=True)


# ------------------------------------------------------------------------------ measuring


def machine() -> str:
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"nproc {nproc}, {model}, {platform.system()} {platform.release()}, Python {platform.python_version()}"


def write_streams(tmp: Path, n: int) -> dict[str, Path]:
    """The three streams, ``n`` code points each, as UTF-8 files (every size is a prefix)."""
    if not corpus.real_available():
        raise CompareError(corpus.real_missing_reason())
    out = {}
    for name, make in (("en", corpus.english), ("zh", corpus.chinese), ("real", corpus.real_stream)):
        path = tmp / f"{name}-{n}.txt"
        path.write_text(make(n), encoding="utf-8")
        out[name] = path
    return out


def run_measure(tree: Path, args: list[str]) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LOOPCORE_IMPLEMENTATION")}
    env.update(PYTHONPATH=str(tree / "src"), LOOPCORE_IMPLEMENTATION="cython")
    done = subprocess.run(
        [sys.executable, str(MEASURE), "--expect-tree", str(tree), *args],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise CompareError(f"measuring {tree} failed (exit {done.returncode}):\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout)["figures"]


#: The function whose inclusive instruction count is taken: the compiled feed path of every
#: version of the core (``ChannelStream._feed_str``).
FEED_SYMBOL = "*_feed_str*"
INSTRUCTION_CHARS = 1_000_000


def callgrind_total(text: str) -> int:
    """The ``totals:`` (or ``summary:``) line of a callgrind output file: instructions counted."""
    for line in text.splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise CompareError("callgrind wrote no totals line")


def instructions_per_cp(tree: Path, stream: Path, tmp: Path, size: int = INSTRUCTION_CHARS) -> float:
    """Instructions executed inside ``ChannelStream``'s feed of the first ``size`` code points of
    ``stream``, per code point, under ``tree`` (valgrind's callgrind; about 10 s)."""
    if shutil.which("valgrind") is None:
        raise CompareError("--instructions needs valgrind (apt-get install valgrind)")
    out = tmp / f"callgrind-{tree.name}-{stream.stem}.out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LOOPCORE_IMPLEMENTATION")}
    env.update(PYTHONPATH=str(tree / "src"), LOOPCORE_IMPLEMENTATION="cython")
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            "--collect-atstart=no",
            f"--toggle-collect={FEED_SYMBOL}",
            sys.executable,
            str(MEASURE),
            "--expect-tree",
            str(tree),
            "--feed-once",
            str(stream),
            "--size",
            str(size),
        ],
        env=env,
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if done.returncode:
        raise CompareError(f"callgrind on {tree} failed (exit {done.returncode}):\n{done.stderr.strip()[-2000:]}")
    total = callgrind_total(out.read_text(encoding="utf-8"))
    if total == 0:
        raise CompareError(f"no instruction was counted in {FEED_SYMBOL} under {tree}: an older core?")
    n = min(size, len(stream.read_text(encoding="utf-8")))
    return total / n


def interleave(trees: dict[str, Path], rounds: int) -> Iterator[tuple[int, str, Path]]:
    """base, head, base, head ... ``rounds`` times."""
    for r in range(rounds):
        for side, tree in trees.items():
            yield r, side, tree


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the commit to compare against (e.g. HEAD~5, main)")
    head = ap.add_mutually_exclusive_group()
    head.add_argument("--head", help="a commit for the head column (default: --worktree)")
    head.add_argument("--worktree", action="store_true", help="this checkout as it is (the default)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--long", action="store_true", help="also the 10M-code-point streams")
    ap.add_argument("--memory", action="store_true", help="also the RSS of 10,000 channels (slow)")
    ap.add_argument(
        "--instructions",
        action="store_true",
        help="also the instructions per code point of one feed (valgrind's callgrind)",
    )
    ap.add_argument("--channels", type=int, default=10_000, help=argparse.SUPPRESS)
    ap.add_argument("--delta-reps", type=int, default=5, help="repetitions of the delta stream per round")
    ap.add_argument("--json", type=Path, help="write every sample here")
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")

    def _terminate(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # unwinds through the finally below: the worktrees go

    signal.signal(signal.SIGTERM, _terminate)
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="loopguard-compare-"))
    worktrees = Worktrees(tmp)
    try:
        base_sha = resolve(args.base)
        sides: dict[str, Path] = {"base": worktrees.add(base_sha, "base")}
        names = {"base": f"base `{base_sha[:10]}`"}
        commits = [f"- base: `{args.base}` = {describe(base_sha)}"]
        if args.head:
            head_sha = resolve(args.head)
            sides["head"] = worktrees.add(head_sha, "head")
            names["head"] = f"head `{head_sha[:10]}`"
            commits.append(f"- head: `{args.head}` = {describe(head_sha)}")
        else:
            sides["head"] = ROOT
            dirty = git("status", "--porcelain", "--untracked-files=no")
            names["head"] = f"head `{git('rev-parse', 'HEAD')[:10]}`" + ("+" if dirty else "")
            commits.append(
                f"- head: the worktree {ROOT} at {describe('HEAD')}"
                + (" plus uncommitted changes" if dirty else " (clean)")
            )
        for side, tree in sides.items():
            print(f"building the {side} core in {tree} ...", file=sys.stderr, flush=True)
            print(f"  {build(tree):.0f} s", file=sys.stderr, flush=True)

        sizes = SIZES + ((LONG_SIZE,) if args.long else ())
        print(f"writing the streams ({max(sizes):,} code points each) ...", file=sys.stderr, flush=True)
        streams = write_streams(tmp, max(sizes))
        measure_args = [a for name, path in streams.items() for a in ("--stream", f"{name}={path}")]
        measure_args += ["--sizes", ",".join(map(str, sizes)), "--delta-reps", str(args.delta_reps)]

        samples: dict[str, list[dict[str, list[float]]]] = {side: [] for side in sides}
        for r, side, tree in interleave(sides, args.rounds):
            print(f"round {r + 1}/{args.rounds}: {side}", file=sys.stderr, flush=True)
            samples[side].append(run_measure(tree, measure_args))
            if args.memory:
                for text in RSS_TEXTS:
                    samples[side].append(run_measure(tree, ["--rss", text, "--channels", str(args.channels)]))
        if args.instructions:
            for side, tree in sides.items():
                print(f"callgrind: {side}", file=sys.stderr, flush=True)
                samples[side].append(
                    {f"instructions/{name}": [instructions_per_cp(tree, path, tmp)] for name, path in streams.items()}
                )
        merged = {side: merge(rounds) for side, rounds in samples.items()}
        text, _ = table(merged["base"], merged["head"], sizes, names["base"], names["head"], args.channels)
        took = time.monotonic() - started
        if args.json:
            args.json.write_text(
                json.dumps({"commits": commits, "machine": machine(), "seconds": took, "samples": merged}, indent=1)
            )
        print("\n".join(commits))
        print(f"- machine: {machine()}")
        rounds = f"{args.rounds} round{'s' if args.rounds > 1 else ''}"
        print(
            f'- default profile, `stream_params("reasoning")`, compiled core, CPU time (`time.process_time`); '
            f"{rounds}, base and head alternately, a fresh process each; {took:.0f} s in all"
        )
        print()
        print(text)
        print()
        print(
            "head/base: above 1 is faster for M cp/s, slower for ns/delta, larger for sizes. "
            "bulk: one `feed` of the whole stream + `finish`; deltas: 1M cp of the English stream."
        )
        return 0
    except CompareError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return 2
    finally:
        worktrees.remove()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
