#!/usr/bin/env python3
"""Checks issue 17's claim about `auto` on `vdnn plan --sweep --json` plans (bench/auto_sweep.sh) and
prints a markdown table, one row per plan.

At every budget of a plan's sweep: (a) where `all` fits (either prefetch rule) `auto` fits; (b) where
auto fits, its predicted step is at most (1 + 1e-9) x the fastest vDNN column that fits (none, conv,
all, dyn and their /ahead columns). A plan whose sweep lacks a column, or does not reach from none's
smallest budget down to the least any column trains in, is a violation too (the check would be empty).
Ratios: auto's step over the fastest vDNN column's, at the budgets where both fit; a budget counts as
faster below 1 - 1e-9, as equal within 1e-9 (auto chose a vDNN configuration, or one as fast).

Usage: summarize_auto_sweep.py (MODEL BATCH DEVICE/LINK PLAN_JSON)...   exit 1 on any violation
"""
import sys

from benchlib import median, read_json

GIB = 2 ** 30
TOLERANCE = 1e-9
VDNN_COLUMNS = ("none", "conv", "all", "dyn", "conv/ahead", "all/ahead", "dyn/ahead")
ALL_COLUMNS = ("all", "all/ahead")


def gib(b) -> str:
    return f"{b / GIB:.2f}"


def check(where, sweep):
    """(violations, summary) for one plan's sweep."""
    bad = []
    columns = {c["name"]: c for c in sweep.get("columns", [])}
    missing = [n for n in VDNN_COLUMNS + ("auto",) if n not in columns]
    if missing or not sweep.get("rows"):
        return [f"{where}: the sweep lacks {', '.join(missing) or 'rows'}"], None
    smallest = {n: c["smallest_budget"] for n, c in columns.items()}
    if sweep["top"] < smallest["none"] or sweep["floor"] != min(smallest.values()):
        bad.append(f"{where}: swept {sweep['top']} B down to {sweep['floor']} B, not none's smallest "
                   f"{smallest['none']} B down to the least any column trains in {min(smallest.values())} B")
    ratios, auto_only = [], 0  # auto / the fastest vDNN column, per budget where both fit
    for row in sweep["rows"]:
        budget, steps = row["budget"], row["step_seconds"]
        auto = steps["auto"]
        fits = {n: steps[n] for n in VDNN_COLUMNS if steps[n] is not None}
        at = f"{where}, budget {budget} B ({gib(budget)} GiB)"
        if auto is None:
            if any(n in fits for n in ALL_COLUMNS):
                bad.append(f"{at}: all fits ({', '.join(f'{n} {fits[n] * 1e3:.3f} ms' for n in ALL_COLUMNS if n in fits)}),"
                           f" auto does not (auto's smallest {smallest['auto']} B)")
            continue
        if not fits:
            auto_only += 1
            continue
        best = min(fits, key=fits.get)
        ratios.append(auto / fits[best])
        if auto > fits[best] * (1 + TOLERANCE):
            bad.append(f"{at}: auto {auto * 1e3:.6f} ms ({row['configurations'].get('auto')}) > {best} "
                       f"{fits[best] * 1e3:.6f} ms ({row['configurations'].get(best)}), {auto / fits[best] - 1:+.3e} relative")
    return bad, {"budgets": len(sweep["rows"]), "top": sweep["top"], "floor": sweep["floor"],
                 "smallest": smallest, "median": median(ratios), "best": min(ratios, default=None),
                 "worst": max(ratios, default=None), "faster": sum(v < 1 - TOLERANCE for v in ratios),
                 "equal": sum(abs(v - 1) <= TOLERANCE for v in ratios), "auto_only": auto_only}


def main(argv) -> int:
    if len(argv) < 5 or (len(argv) - 1) % 4:
        print(__doc__, file=sys.stderr)
        return 2
    print("| network | batch | device/link | budgets | top → floor GiB | smallest all / dyn / auto GiB "
          "| auto ÷ best vDNN: median | best | worst | budgets auto faster / equal / alone | violations |")
    print("| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    violations = []
    for i in range(1, len(argv), 4):
        model, batch, pair, path = argv[i:i + 4]
        where = f"{model} b{batch} {pair}"
        bad, s = check(where, read_json(path).get("sweep", {}))
        violations += bad
        if s is None:
            print(f"| {model} | {batch} | {pair} | — | — | — | — | — | — | — | {len(bad)} |")
            continue
        sm = s["smallest"]
        ratio = lambda x: "—" if x is None else f"{x:.3f}"  # noqa: E731
        print(f"| {model} | {batch} | {pair} | {s['budgets']} | {gib(s['top'])} → {gib(s['floor'])} "
              f"| {gib(sm['all'])} / {gib(sm['dyn'])} / {gib(sm['auto'])} | {ratio(s['median'])} "
              f"| {ratio(s['best'])} | {ratio(s['worst'])} | {s['faster']} / {s['equal']} / {s['auto_only']} | {len(bad)} |")
    print()
    for v in violations:
        print(f"VIOLATION {v}")
    print(f"{len(violations)} violation(s) in {(len(argv) - 1) // 4} plan(s); tolerance {TOLERANCE:g} relative")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
