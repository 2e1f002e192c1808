"""``loopguard scan`` at scale: throughput and peak resident set on a big generated JSON Lines file.

Run: ``python benchmarks/scan_scale.py [--size-mb 2048] [--dir DIR] [--keep] [--gzip]``.

Generates a dataset JSON Lines file of about ``--size-mb`` MiB (seeded, so the same size gives
the same file): records of ~2 KiB of text, one in ``--loop-every`` (default 10) a looping text
(a sentence repeated, as a model stuck in a loop writes it) and the others clean text (random
words from a fixed vocabulary, which do not repeat).  Then it runs ``python -m loopguard scan
--summary FILE`` once in a fresh process and prints the file size, the wall time, the
throughput (MiB of file per second) and the child's peak resident set
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``), with the scan's own summary.  ``--gzip``
scans a gzip-compressed copy instead (throughput still per MiB of uncompressed JSON Lines).

The file is written under ``--dir`` (default: a temporary directory) and removed afterwards
unless ``--keep``.

The summary's "text loops" should equal the looping records: each looping record loops once, in
one channel, and no clean record is reported (checked on the first 250 MiB: 13,702 looping records,
13,702 with findings, no clean one).  The 2 GiB run before this was fixed counted 73 more: a
double count, not a second loop.  When a record's random lead ends in ". " as the sentence does,
near_cycle's first (weak) report starts a few characters before the loop, while cycle and
near_cycle's confirming report start at the loop; the listing took the episode's start and cut
from the weak report, so the loop appeared twice (8 records in the first 250 MiB, e.g. id 24669:
cycle at 350-403 and near_cycle at 347-400).  A confirmed episode is now listed at the confirming
report's start and cut when another detector reports the loop there, and the two merge into one
entry (``cycle + near_cycle``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = (
    "the model checks each value against the constraint and then writes the result to a new list "
    "because every element must be compared with its neighbour before the final sum is returned "
    "so we consider the boundary case where the input is empty or holds a single negative number "
    "which means the loop ends early and the answer depends only on the first two terms of series"
).split()
LOOP_SENTENCES = (
    "Wait, let me recheck the sum of the first two terms. ",
    "Hmm, I should verify this again before answering. ",
    "So the answer is 12, but let me double-check the arithmetic. ",
)
RECORD_CHARS = 2048


def generate(path: Path, size: int, *, loop_every: int = 10, seed: int = 20) -> tuple[int, int]:
    """Write the file; return (records, looping records)."""
    rng = random.Random(seed)
    records = loops = written = 0
    with open(path, "w", encoding="utf-8") as fh:
        while written < size:
            if records % loop_every == loop_every - 1:
                sentence = LOOP_SENTENCES[records % len(LOOP_SENTENCES)]
                lead = " ".join(rng.choices(WORDS, k=60)) + ". "
                text = lead + sentence * ((RECORD_CHARS - len(lead)) // len(sentence))
                loops += 1
            else:
                text = " ".join(rng.choices(WORDS, k=RECORD_CHARS // 6))
            line = json.dumps({"id": records, "text": text}) + "\n"
            fh.write(line)
            written += len(line)
            records += 1
    return records, loops


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=2048, help="file size in MiB (default: %(default)s)")
    parser.add_argument("--loop-every", type=int, default=10, help="one looping record in N (default: %(default)s)")
    parser.add_argument("--dir", type=Path, default=None, help="where to write the file (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated file")
    parser.add_argument("--gzip", action="store_true", help="scan a gzip-compressed copy")
    args = parser.parse_args(argv)
    directory = Path(tempfile.mkdtemp(prefix="scan-scale-", dir=args.dir))
    path = directory / f"scan-scale-{args.size_mb}mb.jsonl"
    try:
        started = time.perf_counter()
        records, loops = generate(path, args.size_mb << 20, loop_every=args.loop_every)
        size = path.stat().st_size
        print(
            f"generated {path}: {size / 2**20:.0f} MiB, {records} records ({loops} looping) "
            f"in {time.perf_counter() - started:.0f} s",
            flush=True,
        )
        target = path
        if args.gzip:
            target = path.with_suffix(".jsonl.gz")
            with open(path, "rb") as src, gzip.open(target, "wb", compresslevel=1) as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            print(f"compressed: {target.stat().st_size / 2**20:.0f} MiB", flush=True)
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "loopguard", "scan", "--summary", "--no-progress", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        elapsed = time.perf_counter() - started
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        print(done.stdout, end="")
        if done.stderr:
            print(done.stderr[-2000:], end="", file=sys.stderr)
        print(f"exit status {done.returncode} (1 = loops found)")
        print(f"wall time: {elapsed:.1f} s")
        print(f"throughput: {size / 2**20 / elapsed:.1f} MiB/s (of uncompressed JSON Lines)")
        print(f"peak RSS of the scan: {peak_kib / 1024:.0f} MiB (file: {size / 2**20:.0f} MiB)")
        return 0 if done.returncode in (0, 1) else 1
    finally:
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
        elif os.path.exists(path):
            print(f"kept {directory}")


if __name__ == "__main__":
    raise SystemExit(main())
