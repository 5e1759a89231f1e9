"""Codec and admission throughput: decode + admit the seed manifests as one large stream.

    python bench/codec.py [--copies 200]

Prints documents per second for decoding alone and for decode + admission (what
``caldera validate`` and the API server's create path pay per object).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from policies.codec import admit_all, decode_text

SEED = Path(__file__).resolve().parents[1] / "tests" / "data" / "seed"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--copies", type=int, default=200, help="how many times the seed set is repeated")
    args = parser.parse_args()
    docs = [p.read_text(encoding="utf-8") for p in sorted(SEED.glob("*.yaml"))]
    stream = "\n---\n".join(docs * args.copies)
    started = time.perf_counter()
    decoded = decode_text(stream, "bench")
    decode_s = time.perf_counter() - started
    started = time.perf_counter()
    admitted = admit_all(decoded)
    admit_s = time.perf_counter() - started
    n = len(decoded.objects)
    assert not decoded.errors and not admitted.errors, "seed manifests must be valid"
    print(f"documents: {n} ({len(stream) / 1e6:.1f} MB of YAML)")
    print(f"decode: {decode_s:.2f} s, {n / decode_s:,.0f} docs/s")
    print(f"admit: {admit_s:.2f} s, {n / admit_s:,.0f} docs/s")
    print(f"decode + admit: {n / (decode_s + admit_s):,.0f} docs/s")


if __name__ == "__main__":
    main()
