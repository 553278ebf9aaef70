#!/usr/bin/env python3
"""Joins the per-case markdown files of one bench/run.sh invocation under a header with this
machine's facts (BENCH_* from bench/lib.sh's export_machine_facts) into one document.

Usage: compose_results.py OUT_MD CASE_MD...
  e.g. compose_results.py bench/results/benchmarks.md bench/results/case1.md bench/results/case5.md
"""
import sys

from benchlib import machine_header


def main(argv) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    parts = ["# vdnn benchmarks (issue 8): vdnn against PyTorch on this CPU", "",
             machine_header(), ""]
    for path in argv[2:]:
        with open(path) as f:
            parts += [f.read().rstrip(), ""]
    with open(argv[1], "w") as f:
        f.write("\n".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
