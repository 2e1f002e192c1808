"""Detection quality on generated texts: recall on injected loops, false positives on legitimate repetition.

Why
---
Issue 6 ("Detection quality beyond the seeds") asks for property tests: loops
injected into normal prose at random offsets (periods 1-4000 code points,
verbatim and with up to 5 % character noise, ASCII and CJK) are caught, and
generated prose, code, tables and CSV are not flagged.  The ``default``
profile does not meet that yet, so those properties cannot be assertions in
the test suite today.  This script is the measurement the tuning work uses
instead: it generates both populations from a seed, runs every text through
the detectors and reports recall, false-positive rate and latency, broken
down the way the issue states the requirement.

What it generates (all seeded, Unicode code points throughout)
--------------------------------------------------------------
* Legitimate texts (``verdict = not-loop``), 2,000-12,000 code points each,
  repetitive the way their formats are but never a verbatim loop (no
  600-code-point window occurs three times; ``tests/test_quality_probe.py``
  checks this): ``prose_en`` and ``prose_zh`` (slices of
  ``corpus.english`` / ``corpus.chinese``), ``code_python``, ``code_go``
  (error-check blocks, table-driven tests, switch arms), ``md_table``,
  ``csv``, ``log`` (timestamped lines, recurring messages), ``yaml``
  (scrape jobs sharing a verbatim relabel block), ``hexdump`` (``xxd``
  lines with zero and ``ff`` fill regions), ``numbered_list`` (steps with
  long shared prefixes) and ``jsonl``.
* Loop texts (``verdict = loop``), families ``loop_ascii`` and ``loop_cjk``:
  a prose prefix of 0-6,000 code points, then a unit (a slice of prose from a
  pool with a different seed; primitive, so its smallest period is the
  recorded ``period``) whose length is log-uniform over 1..4000, repeated
  until the loop covers ``max(3 * period, 600) + margin`` (margin 200-600),
  verbatim (half the texts) or with character noise at a rate uniform over
  1-5 % (exactly ``round(rate * n)`` random substitutions, insertions and
  deletions over every copy after the first), then, for half the texts, 200-
  2,000 code points of recovery prose.  ``loop_start`` is where the unit
  first appears (extended backwards while the prefix already matches),
  ``first_repeat = loop_start + period`` and ``loop_end`` the end of the
  loop when the text recovers, as ``../shared/data/cases/README.md``
  defines them.

How it judges
-------------
Each text goes through ``loopguard.scan_text(text, channel="reasoning",
config=loopguard.TextConfig(profile))``; the first detection is classified
by ``loopguard.evaluate.classify_text`` with the config's ``check_every``:
``caught`` / ``missed`` / ``early`` for loops, ``false_positive`` / ``clean``
for legitimate texts.  Latency is ``position - first_repeat`` of a catch.  ``cut`` counts the
texts with a strong detection (what a ``Session`` cuts; weak ones only give a notice), for
loops not before ``loop_start``; ``cut rec`` is their share of the loops.

Run
---
``python benchmarks/quality.py [--profile default|fuse|rescue] [--seed N]
[--n 200] [--json]``; ``--n`` is the number of texts per family (11 legit and
2 loop families).  ``--show FAMILY:INDEX`` prints one generated text with its
truth and detections.  Output is deterministic for a seed and profile; the
run takes a few seconds with the compiled core.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus
import loopguard
from loopguard.evaluate import classify_text

MIN_CHARS = 2000
MAX_CHARS = 12000
MAX_PERIOD = 4000
MAX_PREFIX = 6000
LOOP_MIN_CHARS = 600
MARGIN = (200, 600)
RECOVERY = (200, 2000)
NOISE = (0.01, 0.05)
PERIOD_BUCKETS: tuple[tuple[int, int], ...] = ((1, 4), (5, 15), (16, 99), (100, 999), (1000, 4000))
EN_POOL = 100_000
ZH_POOL = 60_000
UNIT_POOL = 30_000

ASCII_NOISE = "abcdefghijklmnopqrstuvwxyz      etaoinshr,.'-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
CJK_NOISE = "".join(chr(0x4E00 + i * 7) for i in range(400)) + "，。的了是"


@dataclass(frozen=True)
class Sample:
    """One generated text and its truth (offsets in code points)."""

    family: str
    index: int
    text: str
    verdict: str  # "loop" | "not-loop"
    script: str  # "ascii" | "cjk"
    loop_start: int | None = None
    first_repeat: int | None = None
    loop_end: int | None = None
    period: int | None = None
    noise: float = 0.0  # requested rate (0 = verbatim)
    edits: int = 0  # edits actually applied


@dataclass(frozen=True)
class Pools:
    en: str
    zh: str
    en_units: str
    zh_units: str


@lru_cache(maxsize=4)
def pools(seed: int) -> Pools:
    """Long prose streams to slice from (generating per text would be slow)."""
    base = 1000 + 17 * seed
    return Pools(
        en=corpus.english(EN_POOL, base + 1),
        zh=corpus.chinese(ZH_POOL, base + 2),
        en_units=corpus.english(UNIT_POOL, base + 3),
        zh_units=corpus.chinese(UNIT_POOL, base + 4),
    )


def _rng(seed: int, family: str, index: int) -> random.Random:
    return random.Random(f"quality:{seed}:{family}:{index}")


def _slice(pool: str, length: int, rng: random.Random, lo: int = 0, hi: int | None = None) -> str:
    hi = len(pool) if hi is None else hi
    start = rng.randint(lo, max(lo, hi - length))
    return pool[start : start + length]


# --------------------------------------------------------------------- noise


def add_noise(text: str, rate: float, rng: random.Random, alphabet: str) -> tuple[str, int]:
    """Apply exactly ``round(rate * len(text))`` character edits at distinct positions.

    Each edit is a substitution (by a different character), an insertion before
    the position or a deletion, with equal odds.  Returns ``(noisy, edits)``.
    """
    edits = round(rate * len(text))
    if edits <= 0:
        return text, 0
    where = set(rng.sample(range(len(text)), edits))
    out: list[str] = []
    for i, ch in enumerate(text):
        if i not in where:
            out.append(ch)
            continue
        op = rng.randrange(3)
        if op == 0:
            sub = rng.choice(alphabet)
            while sub == ch:
                sub = rng.choice(alphabet)
            out.append(sub)
        elif op == 1:
            out.append(rng.choice(alphabet))
            out.append(ch)
        # op == 2: deletion
    return "".join(out), edits


# ---------------------------------------------------------------- loop texts


def _is_primitive(unit: str) -> bool:
    return (unit + unit).find(unit, 1) == len(unit)


def _unit(pool: str, period: int, rng: random.Random) -> str:
    """A primitive, not all-blank slice of ``pool`` of exactly ``period`` code points."""
    for _ in range(200):
        start = rng.randint(0, len(pool) - period - 1)
        if period >= 8:  # start at a word or sentence boundary, like a model would
            space = pool.find(" ", start, start + 40)
            if space >= 0 and space + 1 + period <= len(pool):
                start = space + 1
        unit = pool[start : start + period]
        if len(unit) == period and unit.strip() and _is_primitive(unit):
            return unit
    raise RuntimeError(f"no primitive unit of period {period}")  # pragma: no cover


def log_uniform_period(rng: random.Random) -> int:
    return min(MAX_PERIOD, max(1, round(math.exp(rng.uniform(0.0, math.log(MAX_PERIOD))))))


def make_loop(family: str, index: int, seed: int, *, period: int | None = None, noise: float | None = None) -> Sample:
    """A loop injected into prose (``loop_ascii`` or ``loop_cjk``)."""
    rng = _rng(seed, family, index)
    p = pools(seed)
    cjk = family == "loop_cjk"
    prose, units, alphabet = (p.zh, p.zh_units, CJK_NOISE) if cjk else (p.en, p.en_units, ASCII_NOISE)
    half = len(prose) // 2
    period = log_uniform_period(rng) if period is None else period
    if noise is None:
        noise = 0.0 if rng.random() < 0.5 else rng.uniform(*NOISE)
    prefix = _slice(prose, rng.randint(0, MAX_PREFIX), rng, 0, half)
    unit = _unit(units, period, rng)
    length = max(3 * period, LOOP_MIN_CHARS) + rng.randint(*MARGIN)
    verbatim = (unit * (length // period + 1))[:length]
    rest, edits = add_noise(verbatim[period:], noise, rng, alphabet)
    loop = unit + rest
    recovery = _slice(prose, rng.randint(*RECOVERY), rng, half) if rng.random() < 0.5 else ""
    text = prefix + loop + recovery
    start = len(prefix)
    while start > 0 and text[start - 1] == text[start - 1 + period]:  # copy 1 is clean
        start -= 1
    return Sample(
        family=family,
        index=index,
        text=text,
        verdict="loop",
        script="cjk" if cjk else "ascii",
        loop_start=start,
        first_repeat=start + period,
        loop_end=len(prefix) + len(loop) if recovery else None,
        period=period,
        noise=noise,
        edits=edits,
    )


# --------------------------------------------------------- legitimate texts


def _ident(rng: random.Random, parts: int = 0) -> str:
    parts = parts or rng.randint(1, 3)
    words = []
    for _ in range(parts):
        if rng.random() < 0.5:
            words.append(rng.choice(corpus.FUNCTION_WORDS))
        else:
            words.append("".join(rng.choice(corpus.SYLLABLES) for _ in range(rng.randint(1, 3))))
    return "_".join(words)


def _camel(rng: random.Random) -> str:
    return "".join(w.capitalize() for w in _ident(rng, rng.randint(1, 3)).split("_"))


def _words(rng: random.Random, lo: int, hi: int) -> str:
    return " ".join(rng.choice(corpus.FUNCTION_WORDS) for _ in range(rng.randint(lo, hi)))


def _fill(rng: random.Random, target: int, head: str, piece: Callable[[random.Random], str]) -> str:
    out = [head]
    size = len(head)
    while size < target:
        s = piece(rng)
        out.append(s)
        size += len(s)
    return "".join(out)[:target]


def gen_prose_en(rng: random.Random, n: int, seed: int) -> str:
    return _slice(pools(seed).en, n, rng)


def gen_prose_zh(rng: random.Random, n: int, seed: int) -> str:
    return _slice(pools(seed).zh, n, rng)


def _py_statement(rng: random.Random, fn: str, args: list[str], var: str) -> str:
    a = rng.choice(args)
    k = rng.randint(0, 9999)
    templates = [
        f"    {var} = {a}.get({_ident(rng, 1)!r}, {k})\n",
        f'    if {a} is None:\n        raise ValueError("{fn}: {a} is required")\n',
        f"    for item in {a}:\n        {var} += item * {k}\n",
        f"    {var} = [x for x in {a} if x > {k}]\n",
        f'    logger.debug("{_words(rng, 2, 6)} %s", {var})\n',
        f"    # {_words(rng, 3, 12)}\n",
        f"    {var} = {var} + {a} if {var} else {k}\n",
        f"    self.{_ident(rng)} = {a}\n" if rng.random() < 0.3 else f"    {var} = {k} * len({a})\n",
    ]
    return rng.choice(templates)


def _py_piece(rng: random.Random) -> str:
    roll = rng.random()
    fn = _ident(rng)
    if roll < 0.2:  # tests: same shape, different names and numbers
        return "".join(
            f"def test_{fn}_{i}() -> None:\n    assert {fn}({rng.randint(0, 999)}) == {rng.randint(0, 99999)}\n\n\n"
            for i in range(rng.randint(2, 6))
        )
    if roll < 0.35:
        cls = _camel(rng)
        fields = "".join(
            f"    {_ident(rng)}: {rng.choice(['int', 'str', 'float', 'bool'])} = {rng.randint(0, 99)}\n"
            for _ in range(rng.randint(2, 6))
        )
        return f'@dataclass\nclass {cls}:\n    """{_words(rng, 4, 10).capitalize()}."""\n\n{fields}\n\n'
    args = [_ident(rng, 1) for _ in range(rng.randint(1, 3))]
    var = _ident(rng, 1)
    body = "".join(_py_statement(rng, fn, args, var) for _ in range(rng.randint(2, 8)))
    sig = ", ".join(f"{a}: {rng.choice(['int', 'str', 'list[int]', 'Any'])}" for a in args)
    return f'def {fn}({sig}) -> Any:\n    """{_words(rng, 4, 12).capitalize()}."""\n    {var} = 0\n{body}    return {var}\n\n\n'


def gen_code_python(rng: random.Random, n: int, seed: int) -> str:
    return _fill(
        rng,
        n,
        "from __future__ import annotations\n\nimport logging\nfrom typing import Any\n\n"
        "logger = logging.getLogger(__name__)\n\n\n",
        _py_piece,
    )


def _go_piece(rng: random.Random) -> str:
    roll = rng.random()
    fn = _camel(rng)
    if roll < 0.3:  # table-driven test
        rows = "".join(
            f'\t\t{{name: "{_ident(rng)}", in: {rng.randint(0, 9999)}, want: {rng.randint(0, 99999)}}},\n'
            for _ in range(rng.randint(3, 12))
        )
        return (
            f"func Test{fn}(t *testing.T) {{\n\ttests := []struct {{\n\t\tname string\n\t\tin   int\n\t\twant int\n"
            f"\t}}{{\n{rows}\t}}\n\tfor _, tt := range tests {{\n\t\tif got := {fn}(tt.in); got != tt.want {{\n"
            f'\t\t\tt.Errorf("{fn}(%d) = %d, want %d", tt.in, got, tt.want)\n\t\t}}\n\t}}\n}}\n\n'
        )
    if roll < 0.45:  # switch with near-identical arms
        arms = "".join(
            f'\tcase strings.HasPrefix(s, "{_ident(rng, 1)}"):\n\t\treturn {rng.randint(0, 999)}\n'
            for _ in range(rng.randint(3, 8))
        )
        return f"func {fn}(s string) int {{\n\tswitch {{\n{arms}\t}}\n\treturn -1\n}}\n\n"
    steps = []
    for _ in range(rng.randint(2, 5)):  # the err-check block recurs verbatim apart from the call
        v = _ident(rng, 1)
        steps.append(
            f"\t{v}, err := {_camel(rng)}(ctx, {rng.randint(0, 999)})\n"
            f'\tif err != nil {{\n\t\treturn nil, fmt.Errorf("{fn}: %w", err)\n\t}}\n'
            f"\tout.{_camel(rng)} = {v}\n"
        )
    return (
        f"// {fn} {_words(rng, 3, 10)}.\nfunc {fn}(ctx context.Context) (*{_camel(rng)}, error) {{\n"
        f"\tout := &{_camel(rng)}{{}}\n{''.join(steps)}\treturn out, nil\n}}\n\n"
    )


def gen_code_go(rng: random.Random, n: int, seed: int) -> str:
    return _fill(rng, n, 'package main\n\nimport (\n\t"context"\n\t"fmt"\n\t"strings"\n\t"testing"\n)\n\n', _go_piece)


REGIONS = ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1", "ap-south-1")
STATUS = ("✅ ok", "✅ ok", "✅ ok", "⚠️ degraded", "❌ down")


def gen_md_table(rng: random.Random, n: int, seed: int) -> str:
    prose = pools(seed).en

    def table(r: random.Random) -> str:
        rows = "".join(
            f"| {_ident(r)} | {r.choice(REGIONS)} | {r.choice(STATUS)} | {r.randint(1, 900)} | "
            f"{r.choice(corpus.FUNCTION_WORDS).capitalize()} | {r.randint(0, 100)}% |\n"
            for _ in range(r.randint(4, 30))
        )
        intro = _slice(prose, r.randint(80, 400), r).strip()
        return (
            f"## {_words(r, 2, 5).title()}\n\n{intro}\n\n| Service | Region | Status | Latency (ms) | Owner | Load |\n"
            f"|---|---|---|---:|---|---:|\n{rows}\n"
        )

    return _fill(rng, n, "", table)


def gen_csv(rng: random.Random, n: int, seed: int) -> str:
    state = {"id": rng.randint(1, 10000), "day": rng.randint(0, 300)}

    def row(r: random.Random) -> str:
        state["id"] += r.randint(1, 7)
        state["day"] += r.random() < 0.1
        return (
            f"{state['id']},2024-{1 + state['day'] // 28 % 12:02d}-{1 + state['day'] % 28:02d},{_ident(r, 1)},"
            f"{r.uniform(0, 5000):.2f},{r.choice(['EUR', 'USD', 'USD', 'GBP'])},"
            f"{r.choice(['paid', 'paid', 'paid', 'refunded', 'pending'])},{r.choice(['DE', 'US', 'FR', 'JP', 'BR'])}\n"
        )

    return _fill(rng, n, "id,date,customer,amount,currency,status,country\n", row)


def gen_log(rng: random.Random, n: int, seed: int) -> str:
    state = {"ms": rng.randint(0, 86_400_000)}

    def line(r: random.Random) -> str:
        state["ms"] += r.randint(1, 4000)
        t = state["ms"]
        ts = f"2024-06-11T{t // 3_600_000 % 24:02d}:{t // 60_000 % 60:02d}:{t // 1000 % 60:02d}.{t % 1000:03d}Z"
        msg = r.choice(
            [
                f"GET /api/v1/{_ident(r, 1)}/{r.randint(1, 99999)} {r.choice([200, 200, 200, 404, 500])} {r.randint(1, 900)}ms",
                "health check ok",
                "health check ok",
                f"cache hit ratio={r.random():.3f} size={r.randint(100, 99999)}",
                f"retrying connection to db-{r.randint(0, 3)} (attempt {r.randint(1, 5)}/5)",
                f"user {r.randint(1000, 99999)} logged in from 10.0.{r.randint(0, 255)}.{r.randint(0, 255)}",
                f"job {_ident(r)} finished in {r.uniform(0, 60):.2f}s",
            ]
        )
        level = "ERROR" if "500" in msg else r.choice(["INFO", "INFO", "INFO", "DEBUG", "WARN"])
        return f"{ts} {level:<5} [worker-{r.randint(0, 7)}] {msg}\n"

    return _fill(rng, n, "", line)


RELABEL = (
    "    relabel_configs:\n      - source_labels: [__address__]\n        target_label: instance\n"
    "        regex: '([^:]+):\\d+'\n        replacement: '${1}'\n"
)


def gen_yaml(rng: random.Random, n: int, seed: int) -> str:
    def job(r: random.Random) -> str:
        name = _ident(r)
        return (
            f"  - job_name: {name}\n    scrape_interval: {r.choice([15, 30, 60])}s\n    static_configs:\n"
            f"      - targets: ['{name.replace('_', '-')}:{r.randint(1024, 65535)}']\n        labels:\n"
            f"          team: {_ident(r, 1)}\n          tier: {r.choice(['frontend', 'backend', 'data'])}\n{RELABEL}"
        )

    return _fill(rng, n, "global:\n  scrape_interval: 30s\nscrape_configs:\n", job)


def gen_hexdump(rng: random.Random, n: int, seed: int) -> str:
    prose = pools(seed).en.encode("ascii", "replace")
    data = bytearray()
    need = (n // 60 + 2) * 16
    while len(data) < need:
        roll = rng.random()
        size = rng.randint(16, 1024)
        if roll < 0.35:
            data += bytes(size)
        elif roll < 0.45:
            data += b"\xff" * size
        elif roll < 0.7:
            start = rng.randint(0, len(prose) - size)
            data += prose[start : start + size]
        else:
            data += bytes(rng.randrange(256) for _ in range(size))
    base = rng.randrange(0, 1 << 20) * 16
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        groups = " ".join(chunk[i : i + 2].hex() for i in range(0, 16, 2))
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{base + off:08x}: {groups}  {text}\n")
    return "".join(lines)[:n]


def gen_numbered_list(rng: random.Random, n: int, seed: int) -> str:
    state = {"i": 0, "phase": 0}

    def item(r: random.Random) -> str:
        head = ""
        if state["i"] == 0 or r.random() < 0.05:
            state["phase"] += 1
            state["i"] = 0
            head = f"\n### Phase {state['phase']}: {_words(r, 2, 4)}\n\n"
        state["i"] += 1
        host = f"{_ident(r, 1)}-{r.randint(1, 99):02d}"
        body = r.choice(
            [
                f"Run `kubectl rollout status deployment/{_ident(r)} -n {_ident(r, 1)}` and wait until it reports success.",
                f"Log in to `{host}` and confirm that the service responds on port {r.randint(1024, 65535)}.",
                f"Copy the backup of `{_ident(r)}.db` to `/srv/backup/{host}/` and verify its checksum.",
                f"Open the dashboard for `{host}` and check that the error rate stays below {r.randint(1, 5)}%.",
                f"Update `{_ident(r)}` to version {r.randint(1, 9)}.{r.randint(0, 30)}.{r.randint(0, 99)} on `{host}`.",
                f"{_words(r, 4, 14).capitalize()} (`{host}`).",
            ]
        )
        return f"{head}{state['i']}. {body}\n"

    return _fill(rng, n, "", item)


def gen_jsonl(rng: random.Random, n: int, seed: int) -> str:
    state = {"id": rng.randint(0, 10**6)}

    def record(r: random.Random) -> str:
        state["id"] += r.randint(1, 9)
        obj = {
            "id": state["id"],
            "event": r.choice(["click", "view", "view", "purchase"]),
            "user": _ident(r, 1),
            "ok": r.random() < 0.9,
            "ms": r.randint(1, 2000),
        }
        return json.dumps(obj) + "\n"

    return _fill(rng, n, "", record)


LEGIT: dict[str, tuple[str, Callable[[random.Random, int, int], str]]] = {
    "prose_en": ("ascii", gen_prose_en),
    "prose_zh": ("cjk", gen_prose_zh),
    "code_python": ("ascii", gen_code_python),
    "code_go": ("ascii", gen_code_go),
    "md_table": ("ascii", gen_md_table),
    "csv": ("ascii", gen_csv),
    "log": ("ascii", gen_log),
    "yaml": ("ascii", gen_yaml),
    "hexdump": ("ascii", gen_hexdump),
    "numbered_list": ("ascii", gen_numbered_list),
    "jsonl": ("ascii", gen_jsonl),
}
LOOPS = ("loop_ascii", "loop_cjk")
FAMILIES = (*LEGIT, *LOOPS)


def make_legit(family: str, index: int, seed: int) -> Sample:
    rng = _rng(seed, family, index)
    script, gen = LEGIT[family]
    text = gen(rng, rng.randint(MIN_CHARS, MAX_CHARS), seed)
    return Sample(family=family, index=index, text=text, verdict="not-loop", script=script)


def make(family: str, index: int, seed: int) -> Sample:
    return make_loop(family, index, seed) if family in LOOPS else make_legit(family, index, seed)


def samples(seed: int, n: int) -> list[Sample]:
    return [make(family, i, seed) for family in FAMILIES for i in range(n)]


# ------------------------------------------------------------------ judging


@dataclass(frozen=True)
class Result:
    family: str
    index: int
    outcome: str
    position: int | None
    detector: str | None
    latency: int | None
    script: str
    period: int | None
    noise: float
    chars: int
    cut: bool = False  # a strong detection (what a Session cuts), not before the loop starts


def judge(sample: Sample, config: loopguard.TextConfig) -> Result:
    found = loopguard.scan_text(sample.text, channel="reasoning", config=config)
    first = min(found, key=lambda d: d.position) if found else None
    position = None if first is None else first.position
    outcome = classify_text(
        sample.verdict,
        position,
        loop_start=sample.loop_start,
        first_repeat=sample.first_repeat,
        loop_end=sample.loop_end,
        check_every=config.check_every,
    )
    latency = None
    if outcome == "caught" and position is not None and sample.first_repeat is not None:
        latency = position - sample.first_repeat
    strong = [d.position for d in found if d.strength == "strong"]
    cut = bool(strong) and (sample.loop_start is None or min(strong) >= sample.loop_start)
    return Result(
        sample.family,
        sample.index,
        outcome,
        position,
        None if first is None else first.kind,
        latency,
        sample.script,
        sample.period,
        sample.noise,
        len(sample.text),
        cut,
    )


def period_bucket(period: int) -> str:
    for lo, hi in PERIOD_BUCKETS:
        if lo <= period <= hi:
            return f"{lo}-{hi}"
    raise ValueError(period)


def noise_bucket(noise: float) -> str:
    return "0%" if noise == 0 else "1-5%"


def _ratio(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 4)


def stats(results: list[Result]) -> dict[str, Any]:
    counts = Counter(r.outcome for r in results)
    loops = [r for r in results if r.outcome in ("caught", "missed", "early")]
    legit = [r for r in results if r.outcome in ("clean", "false_positive")]
    latencies = [r.latency for r in results if r.latency is not None]
    out: dict[str, Any] = {"n": len(results), **{k: counts[k] for k in sorted(counts)}}
    out["cut"] = sum(1 for r in results if r.cut)
    if loops:
        out["recall"] = _ratio(counts["caught"], len(loops))
        out["cut_recall"] = _ratio(sum(1 for r in loops if r.cut), len(loops))
        out["median_latency"] = statistics.median(latencies) if latencies else None
    if legit:
        out["fp_rate"] = _ratio(counts["false_positive"], len(legit))
    out["first_detector"] = dict(
        sorted(
            Counter(
                r.detector for r in results if r.detector and r.outcome in ("caught", "false_positive", "early")
            ).items()
        )
    )
    return out


def group(results: list[Result], key: Callable[[Result], str]) -> dict[str, dict[str, Any]]:
    keys: dict[str, list[Result]] = {}
    for r in results:
        keys.setdefault(key(r), []).append(r)
    return {k: stats(v) for k, v in keys.items()}


def report(profile: str, seed: int, n: int) -> dict[str, Any]:
    config = loopguard.TextConfig(profile)
    started = time.perf_counter()
    results = [judge(s, config) for s in samples(seed, n)]
    loops = [r for r in results if r.family in LOOPS]
    legit = [r for r in results if r.family not in LOOPS]

    def pbucket(r: Result) -> str:
        assert r.period is not None
        return period_bucket(r.period)

    order = [f"{lo}-{hi}" for lo, hi in PERIOD_BUCKETS]
    cells = group(loops, lambda r: f"{pbucket(r)}|{noise_bucket(r.noise)}|{r.script}")
    return {
        "profile": profile,
        "seed": seed,
        "n_per_family": n,
        "check_every": config.check_every,
        "families": {f: stats([r for r in results if r.family == f]) for f in FAMILIES},
        "legit": stats(legit),
        "loops": stats(loops),
        "loops_by_period": {k: v for k, v in sorted(group(loops, pbucket).items(), key=lambda kv: order.index(kv[0]))},
        "loops_by_noise": dict(sorted(group(loops, lambda r: noise_bucket(r.noise)).items())),
        "loops_by_script": dict(sorted(group(loops, lambda r: r.script).items())),
        "loops_by_period_noise_script": {
            k: cells[k] for k in sorted(cells, key=lambda c: (order.index(c.split("|")[0]), c))
        },
        "failures": [asdict(r) for r in results if r.outcome in ("missed", "early", "false_positive")],
        "seconds": round(time.perf_counter() - started, 2),
    }


# ------------------------------------------------------------------- output


def _pct(value: Any) -> str:
    return "-" if value is None else f"{100 * value:5.1f}%"


def _lat(value: Any) -> str:
    return "-" if value is None else f"{value:g}"


def _detectors(row: dict[str, Any]) -> str:
    return " ".join(f"{k}:{v}" for k, v in row["first_detector"].items())


def format_report(rep: dict[str, Any]) -> list[str]:
    lines = [
        f"quality: profile={rep['profile']} seed={rep['seed']} n={rep['n_per_family']} per family "
        f"check_every={rep['check_every']} ({rep['seconds']} s)",
        "",
    ]
    lines.append(
        f"{'family':<16}{'n':>5}{'caught':>8}{'missed':>8}{'early':>7}{'FP':>6}{'recall':>9}{'FP rate':>9}"
        f"{'med lat':>9}{'cut':>6}{'cut rec':>9}  first detector"
    )
    rows = [*rep["families"].items(), ("LEGIT", rep["legit"]), ("LOOPS", rep["loops"])]
    for name, row in rows:
        lines.append(
            f"{name:<16}{row['n']:>5}{row.get('caught', 0):>8}{row.get('missed', 0):>8}{row.get('early', 0):>7}"
            f"{row.get('false_positive', 0):>6}{_pct(row.get('recall')):>9}{_pct(row.get('fp_rate')):>9}"
            f"{_lat(row.get('median_latency')):>9}{row['cut']:>6}{_pct(row.get('cut_recall')):>9}  {_detectors(row)}"
        )
    for title, key in (
        ("period", "loops_by_period"),
        ("noise", "loops_by_noise"),
        ("script", "loops_by_script"),
        ("period|noise|script", "loops_by_period_noise_script"),
    ):
        lines += [
            "",
            f"{'loops by ' + title:<24}{'n':>5}{'caught':>8}{'missed':>8}{'early':>7}{'recall':>9}{'med lat':>9}"
            f"{'cut':>6}{'cut rec':>9}",
        ]
        for name, row in rep[key].items():
            lines.append(
                f"{name:<24}{row['n']:>5}{row.get('caught', 0):>8}{row.get('missed', 0):>8}{row.get('early', 0):>7}"
                f"{_pct(row.get('recall')):>9}{_lat(row.get('median_latency')):>9}{row['cut']:>6}"
                f"{_pct(row.get('cut_recall')):>9}"
            )
    return lines


def show(spec: str, seed: int, profile: str) -> None:
    family, _, index = spec.partition(":")
    if family not in FAMILIES or not index.isdigit():
        raise SystemExit(f"--show wants FAMILY:INDEX with FAMILY one of {', '.join(FAMILIES)}")
    sample = make(family, int(index), seed)
    config = loopguard.TextConfig(profile)
    truth = {k: v for k, v in asdict(sample).items() if k != "text"}
    print(
        json.dumps(
            {
                "truth": truth,
                "result": asdict(judge(sample, config)),
                "detections": [repr(d) for d in loopguard.scan_text(sample.text, channel="reasoning", config=config)],
            },
            indent=2,
            ensure_ascii=False,
        )
    )
    print("-" * 72)
    print(sample.text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--profile", default="default", choices=sorted(loopguard.PROFILES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--n", type=int, default=200, help="texts per family (default 200)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--show", metavar="FAMILY:INDEX", help="print one generated text, its truth and detections")
    args = parser.parse_args(argv)
    if args.show:
        show(args.show, args.seed, args.profile)
        return 0
    rep = report(args.profile, args.seed, args.n)
    if args.json:
        print(json.dumps(rep, ensure_ascii=False))
    else:
        print("\n".join(format_report(rep)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
