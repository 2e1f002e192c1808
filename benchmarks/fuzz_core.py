"""Fuzz the compiled stream core against the pure-Python reference (issue 21).

Each input is a text (ASCII, CJK, astral code points, lone surrogates, NULs, fences, data and
art runs, injected verbatim loops and phrase pools), a channel, a config (a small one whose every
window and ring boundary is crossed by short texts, or a profile) and two chunkings.  The text is
fed to ``TextLoopDetector(implementation="cython")`` under one chunking and to the reference
(``implementation="python"``) under the other; the detections must be identical, and nothing may
raise.

Engines: ``atheris`` (coverage-guided, libFuzzer; the reference's Python is instrumented, so the
fuzzer learns the detectors' branches) when it is installed, else ``random`` (a seeded generator
of the same shapes).  Either runs for ``--seconds``; ``random`` can also run exactly ``--inputs``.

    python benchmarks/fuzz_core.py --seconds 120            # atheris if installed, else random
    python benchmarks/fuzz_core.py --engine random --seed 7 --seconds 60

A mismatch raises ``AssertionError`` naming the input (atheris also writes ``crash-*``; the
random engine prints the seed and the input's number, which replay it).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

try:  # the coverage-guided engine: optional
    import atheris
except ImportError:  # pragma: no cover - depends on the environment
    atheris = None

import loopcore
from loopguard import TextConfig, TextLoopDetector


def _tests_helpers() -> Any:
    """``tests/helpers.py`` (shipped in the sdist beside this script), loaded by path."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tests" / "helpers.py"
    spec = importlib.util.spec_from_file_location("loopguard_tests_helpers", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The parity tests' small config (``tests/helpers.py``): every window, ring and buffer
#: boundary is crossed by short texts.
TINY: TextConfig = _tests_helpers().TINY
CONFIGS: tuple[TextConfig | str, ...] = (TINY, TINY, TINY, "fuse", "rescue", "default")
PIECES = (
    list("abcde fghij.!?,\n:")
    + ["```", "~~~", "- ", "1. ", "| ", "> ", " " * 97, "\t" * 200, "key: ", "\nx1: ", "0000 ", "ff7e "]
    + ["####", "██", "+-", "9a: "]
    + list("的一是不了人我在有他这。！？，")
    + ["😀", "🎉", "𝔘", "𠀋", "\ud800", "\x00", "\u202e", "\x1b["]
)
POOL = ("Now.", "OK.", "Wait.", "继续。", "好的。", "Hmm?", "Emit!")
MAX_LEN = 3000  # code points: the reference is quadratic in places
TINY_MAX_LEN = 800  # ... and TINY checks every 7 code points


@dataclass(frozen=True)
class Case:
    """One fuzz input."""

    text: str
    config: TextConfig | str
    channel: str
    cuts_a: tuple[int, ...]
    cuts_b: tuple[int, ...]


def detect(case: Case, impl: str, cuts: Sequence[int]) -> list[dict[str, Any]]:
    """The detections of ``case.text`` fed to ``impl`` in pieces split at ``cuts``, as dicts."""
    det = TextLoopDetector(case.config, implementation=impl)
    found = []
    last = 0
    for cut in cuts:
        found += det.feed(case.text[last:cut], case.channel)
        last = cut
    found += det.feed(case.text[last:], case.channel)
    found += det.finish()
    return [d.to_dict() for d in found]


def check(case: Case, run: Callable[[Case, str, Sequence[int]], list[dict[str, Any]]] = detect) -> int:
    """Assert that both implementations find the same on ``case``; the number of detections."""
    reference = run(case, "python", case.cuts_a)
    compiled = run(case, "cython", case.cuts_b)
    if compiled != reference:
        config = case.config if isinstance(case.config, str) else "TINY"
        raise AssertionError(
            f"parity: {len(case.text)} code points, config {config}, channel {case.channel}, "
            f"cuts {list(case.cuts_a)} / {list(case.cuts_b)}: python {reference} != cython {compiled}"
        )
    return len(reference)


def _cuts(rng: random.Random, n: int) -> tuple[int, ...]:
    if n < 2:
        return ()
    return tuple(sorted(rng.sample(range(1, n), min(n - 1, rng.randrange(41)))))


def random_case(rng: random.Random) -> Case:
    """A random input of the shapes of ``tests/test_parity.py``'s ``streams``."""
    pieces = rng.sample(PIECES, rng.randint(1, 12))
    text = "".join(rng.choice(pieces) for _ in range(rng.randrange(150)))
    if rng.random() < 0.6:  # a verbatim loop
        unit = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 40)))[:300]
        at = rng.randint(0, len(text))
        text = text[:at] + unit * rng.randint(2, 12) + text[at:]
    if rng.random() < 0.4:  # a phrase pool
        pool = rng.sample(POOL, rng.randint(1, 4))
        sep = rng.choice([" ", "\n", "", "  "])
        at = rng.randint(0, len(text))
        text = text[:at] + sep.join(rng.choice(pool) for _ in range(rng.randint(5, 60))) + " " + text[at:]
    config = rng.choice(CONFIGS)
    if not isinstance(config, TextConfig):  # the profiles' gates need longer texts
        text *= rng.randint(1, 6)
    text = text[: TINY_MAX_LEN if config is TINY else MAX_LEN]
    channel = rng.choice(("text", "reasoning"))
    return Case(text, config, channel, _cuts(rng, len(text)), _cuts(rng, len(text)))


def atheris_case(data: bytes) -> Case:
    """An input from atheris's bytes: a config, a channel, the text, then two chunkings."""
    fdp = atheris.FuzzedDataProvider(data)
    config = CONFIGS[fdp.ConsumeIntInRange(0, len(CONFIGS) - 1)]
    channel = ("text", "reasoning")[fdp.ConsumeIntInRange(0, 1)]
    repeat = fdp.ConsumeIntInRange(1, 8)
    text = (fdp.ConsumeUnicode(fdp.ConsumeIntInRange(0, 600)) * repeat)[: TINY_MAX_LEN if config is TINY else MAX_LEN]
    n = len(text)
    cuts = [
        sorted({fdp.ConsumeIntInRange(1, max(1, n - 1)) for _ in range(fdp.ConsumeIntInRange(0, 40))}) for _ in "ab"
    ]
    return Case(text, config, channel, tuple(c for c in cuts[0] if c < n), tuple(c for c in cuts[1] if c < n))


@dataclass
class Stats:
    inputs: int = 0
    detections: int = 0
    with_detections: int = 0
    seconds: float = 0.0


def run_random(seconds: float, seed: int, inputs: int | None = None) -> Stats:
    """Check random inputs for ``seconds`` (or exactly ``inputs`` of them)."""
    rng = random.Random(seed)
    stats = Stats()
    start = time.monotonic()
    while (stats.inputs < inputs) if inputs is not None else (time.monotonic() - start < seconds):
        case = random_case(rng)
        try:
            found = check(case)
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, input {stats.inputs}: {exc}") from None
        stats.inputs += 1
        stats.detections += found
        stats.with_detections += found > 0
    stats.seconds = time.monotonic() - start
    return stats


def run_atheris(seconds: float, extra: list[str]) -> None:  # pragma: no cover - exits the process
    """Run libFuzzer for ``seconds`` (it exits the process at the end)."""

    def one_input(data: bytes) -> None:
        check(atheris_case(data))

    atheris.instrument_all()  # the reference's Python: the detectors' branches guide the fuzzer
    atheris.Setup([sys.argv[0], f"-max_total_time={int(seconds)}", "-rss_limit_mb=4096", *extra], one_input)
    atheris.Fuzz()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=120.0, help="how long to fuzz (default 120)")
    parser.add_argument("--engine", choices=("auto", "atheris", "random"), default="auto")
    parser.add_argument("--seed", type=int, default=0, help="the random engine's seed")
    parser.add_argument("--inputs", type=int, default=None, help="random engine: exactly this many inputs")
    args, extra = parser.parse_known_args(argv)
    if "cython" not in loopcore.implementations():
        print("fuzz_core: the compiled core is not built", file=sys.stderr)
        return 2
    engine = args.engine
    if engine == "auto":
        engine = "atheris" if atheris is not None else "random"
    if engine == "atheris":
        if atheris is None:
            print("fuzz_core: atheris is not installed (pip install atheris)", file=sys.stderr)
            return 2
        run_atheris(args.seconds, extra)
        return 0
    stats = run_random(args.seconds, args.seed, args.inputs)
    print(
        f"fuzz_core (random, seed {args.seed}): {stats.inputs} inputs in {stats.seconds:.1f} s, "
        f"{stats.with_detections} with detections ({stats.detections} in all), no mismatch"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
