"""Turn a pytest-benchmark JSON file into a Markdown table.

Usage: ``python benchmarks/report.py bench.json``.  Prints an environment block,
then per benchmark: median time, throughput (M chars/s), ns per character or
per delta, and the ratio to the fastest entry of the same group and stream.
"""

from __future__ import annotations

import json
import platform
import sys
from collections import defaultdict


def main(path: str) -> None:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    info = data.get("machine_info", {})
    commit = data.get("commit_info", {}).get("id", "?")
    print(f"- CPU: {info.get('cpu', {}).get('brand_raw', platform.processor())}")
    print(f"- Python: {info.get('python_version', platform.python_version())}; loopguard commit {commit[:10]}")
    print()
    print("| group | benchmark | median | M chars/s | ns/char | ns/delta or µs/call | vs fastest |")
    print("|---|---|---|---|---|---|---|")
    best: dict[tuple, float] = defaultdict(lambda: float("inf"))
    rows = []
    for bench in data["benchmarks"]:
        extra = bench.get("extra_info", {})
        key = (bench["group"], extra.get("stream"), extra.get("chars"))
        median = bench["stats"]["median"]
        best[key] = min(best[key], median)
        rows.append((bench, extra, key, median))
    for bench, extra, key, median in rows:
        chars = extra.get("chars", 0)
        deltas = extra.get("deltas")
        calls = extra.get("calls_per_round")
        per = f"{median / deltas * 1e9:.0f} ns" if deltas else (f"{median / calls * 1e6:.2f} µs" if calls else "")
        rate = f"{chars / median / 1e6:.2f}" if chars else ""
        per_char = f"{median / chars * 1e9:.1f}" if chars else ""
        print(
            f"| {bench['group']} | {bench['name']} | {median * 1e3:.3f} ms | {rate} | "
            f"{per_char} | {per} | {median / best[key]:.1f}x |"
        )


if __name__ == "__main__":
    main(sys.argv[1])
