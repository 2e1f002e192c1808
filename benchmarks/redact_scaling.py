"""How long :func:`loopguard.redact.redact_secrets` takes on adversarial inputs (issue 21).

Each shape is repeated to 100 KB, 1 MB and 10 MB (code points) and redacted once; the table
gives the CPU time of each and the 10 MB / 100 KB ratio (linear: ~100; the quadratic redactor
before issue 21 took 14.6 s for 10 KB of ``"_a"``)::

    python benchmarks/redact_scaling.py [--sizes 100000,1000000,10000000] [--shapes _a,-a]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from loopguard.redact import redact_secrets

SHAPES = {
    "_a": "_a",
    "-a": "-a",
    "a:": "a:",
    "=": "=",
    "quotes": '"',
    "escaped quotes": '\\"',
    "https://a:": "https://a:",
    "https:// + a:": None,  # one scheme, then "a:" to the end
    "BEGIN no END": "-----BEGIN PRIVATE KEY-----\n",
    "password": "password",
    "--password ": "--password ",
    'password="': 'password="',
    "password=[": "password=[",
    "eyJ": "eyJ",
    "sk-": "sk-",
    "token ": "token ",
    "Authorization: ": "Authorization: ",
    "a@": "a@",
    " -pa": " -pa",
    "hex": "0",
    # the red-team review's shapes (an unclosed bracket after -p; eyJ after -)
    " -p[ab": " -p[ab",
    " -p(ab": " -p(ab",
    "eyJ-": "eyJ-",
    "curl -u a:": "curl -u a:",
    "Cookie: a=": "Cookie: a=",
    "'password' => '": "'password' => '",
    "<password>": "<password>",
}


def make(shape: str, size: int) -> str:
    """``size`` code points of the shape."""
    unit = SHAPES[shape]
    if unit is None:
        return ("https://" + "a:" * size)[:size]
    return (unit * (size // len(unit) + 1))[:size]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000,10000000", help="comma-separated sizes (code points)")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated shape names")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    header = f"{'shape':<18}" + "".join(f"{size:>12,}" for size in sizes) + f"{'ratio':>8}"
    print(header)
    print("-" * len(header))
    for shape in args.shapes.split(","):
        times = []
        for size in sizes:
            text = make(shape, size)
            started = time.process_time()
            redact_secrets(text)
            times.append(time.process_time() - started)
        ratio = times[-1] / times[0] if times[0] > 0 else float("inf")
        print(f"{shape:<18}" + "".join(f"{t:>11.3f}s" for t in times) + f"{ratio:>8.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
