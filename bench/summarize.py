#!/usr/bin/env python3
"""Turns bench/run.sh's runs.tsv (and the raw reports it points at) into a markdown report.

Usage: summarize.py RUNS_TSV OUT_MD     (machine facts come from BENCH_* environment variables)

Standard library only.
"""
import csv
import json
import os
import statistics
import sys
from collections import OrderedDict

STEADY = "vdnn steady"
REPORT = "vdnn report"


def env(name: str, default: str = "?") -> str:
    return os.environ.get(name, default) or default


def vdnn_numbers(path: str, batch: int, iters: int, warmup: int):
    """(steady-state images/s over the epochs after the warm-up one, report images/s, note)."""
    with open(path) as f:
        r = json.load(f)
    report_ips = float(r["images_per_second"])
    epochs = r.get("epochs", [])
    note = ""
    if int(r.get("iterations", -1)) != warmup + iters:
        note = f"ran {r.get('iterations')} iterations, expected {warmup + iters}"
    if warmup == 0 or len(epochs) < 2:
        return report_ips, report_ips, note or "no warm-up epoch to drop"
    prev = int(epochs[0]["steps"])
    if prev != warmup:
        note = f"first epoch has {prev} steps, expected {warmup}"
    seen = seconds = 0.0
    for e in epochs[1:]:
        seen += (int(e["steps"]) - prev) * batch
        seconds += float(e["train_seconds"])
        prev = int(e["steps"])
    steady = seen / seconds if seconds > 0 else float("nan")
    return steady, report_ips, note


def fmt(x: float) -> str:
    return "—" if x is None or x != x else f"{x:,.0f}"


def ratio(x: float) -> str:
    return "—" if x is None or x != x else f"{x:.2f}×"


def summarize(rows):
    """cases: model -> {meta, rounds: {round: {column: ips}}, columns, commands, failures}"""
    cases = OrderedDict()
    for row in rows:
        model, batch = row["model"], int(row["batch"])
        iters, warmup, rnd = int(row["iterations"]), int(row["warmup"]), int(row["round"])
        c = cases.setdefault(model, {"batch": batch, "iters": iters, "warmup": warmup,
                                     "rounds": OrderedDict(), "columns": [], "commands":
                                     OrderedDict(), "failures": [], "notes": [], "load": {}})
        per_round = c["rounds"].setdefault(rnd, {})
        c["load"].setdefault(rnd, row["loadavg"])
        variant, kind = row["variant"], row["kind"]
        cols = [STEADY, REPORT] if kind == "vdnn" else [variant]
        for col in cols:
            if col not in c["columns"]:
                c["columns"].append(col)
        c["commands"].setdefault(variant, row["command"])
        if row["rc"] != "0":
            c["failures"].append(f"round {rnd}, {variant}: exit status {row['rc']}")
            continue
        try:
            if kind == "vdnn":
                steady, rep, note = vdnn_numbers(row["file"], batch, iters, warmup)
                per_round[STEADY], per_round[REPORT] = steady, rep
                if note:
                    c["notes"].append(f"round {rnd}: {note}")
            else:
                with open(row["file"]) as f:
                    lines = [l for l in f.read().splitlines() if l.strip()]
                per_round[variant] = float(json.loads(lines[-1])["images_per_second"])
        except (OSError, ValueError, KeyError, IndexError) as e:
            c["failures"].append(f"round {rnd}, {variant}: unreadable result ({e})")
    return cases


def render(cases) -> str:
    out = []
    w = out.append
    w("# Training throughput: vdnn vs PyTorch (CPU)")
    w("")
    w(f"- Date: {env('BENCH_DATE')}")
    w(f"- Machine: {env('BENCH_CPU_MODEL')}, {env('BENCH_CPUS')} logical CPUs "
      f"({env('BENCH_SOCKETS')} socket(s) × {env('BENCH_CORES_PER_SOCKET')} core(s) × "
      f"{env('BENCH_THREADS_PER_CORE')} thread(s))")
    w(f"- vdnn: commit {env('BENCH_VDNN_COMMIT')} (working tree differs outside bench/ and docs/: "
      f"{env('BENCH_VDNN_DIRTY')}), build/vdnn")
    w(f"- PyTorch: {env('BENCH_PIP_TORCH')} (pip, bench/.venv); Debian python3-torch: "
      f"{env('BENCH_DEBIAN_TORCH')}")
    w(f"- Threads: OMP_NUM_THREADS={env('BENCH_THREADS')} for every run, "
      f"torch.set_num_threads({env('BENCH_THREADS')}), vdnn --threads {env('BENCH_THREADS')}; "
      f"OPENBLAS_CORETYPE={env('BENCH_OPENBLAS_CORETYPE')} (as found in the environment)")
    w(f"- {env('BENCH_ROUNDS')} round(s) per case, variants interleaved within each round, every "
      f"run a fresh process; load average at the end: {env('BENCH_LOADAVG_END')}")
    w("")
    w("Throughput is training images/s (forward, loss, backward, SGD step with momentum and weight "
      "decay) on random/synthetic data, no evaluation. PyTorch times N iterations after W "
      "untimed warm-up iterations. vdnn runs W + N iterations in epochs of W batches "
      "(`--synthetic-samples` = batch × W) and times each epoch: **vdnn steady** is the epochs "
      "after the first (the same N iterations after W warm-up), **vdnn report** is the "
      "`images_per_second` of vdnn's own report, which covers all W + N iterations, the "
      "warm-up included (evaluation and the per-epoch shuffle are outside vdnn's timer; its "
      "background batch copy is inside). Ratios are the median of the per-round ratios; "
      "above 1 means vdnn is faster.")
    for model, c in cases.items():
        cols = c["columns"]
        torch_cols = [k for k in cols if k not in (STEADY, REPORT)]
        w("")
        w(f"## {model}, batch {c['batch']} ({c['iters']} timed iterations after "
          f"{c['warmup']} warm-up)")
        w("")
        w("| run | images/s, median | min – max | runs |")
        w("| --- | ---: | ---: | ---: |")
        for col in cols:
            vals = [r[col] for r in c["rounds"].values() if col in r]
            label = {STEADY: f"vdnn steady (iterations {c['warmup'] + 1}–"
                             f"{c['warmup'] + c['iters']})",
                     REPORT: f"vdnn report (all {c['warmup'] + c['iters']} iterations, "
                             f"warm-up included)"}.get(col, col)
            if vals:
                w(f"| {label} | {fmt(statistics.median(vals))} | {fmt(min(vals))} – "
                  f"{fmt(max(vals))} | {len(vals)} |")
            else:
                w(f"| {label} | — | — | 0 |")
        if torch_cols:
            w("")
            w("| vdnn / PyTorch (median of per-round ratios) | vdnn steady | vdnn report |")
            w("| --- | ---: | ---: |")
            for t in torch_cols:
                cells = []
                for v in (STEADY, REPORT):
                    rs = [r[v] / r[t] for r in c["rounds"].values()
                          if v in r and t in r and r[t] > 0]
                    cells.append(f"{ratio(statistics.median(rs))} (n={len(rs)})"
                                 if rs else "—")
                w(f"| vs {t} | {cells[0]} | {cells[1]} |")
        w("")
        w("Per round (images/s; load average when the round started):")
        w("")
        w("| round | " + " | ".join(cols) + " | load avg |")
        w("| ---: | " + " | ".join("---:" for _ in cols) + " | --- |")
        for rnd, r in c["rounds"].items():
            w(f"| {rnd} | " + " | ".join(fmt(r.get(k)) for k in cols) + f" | {c['load'][rnd]} |")
        if c["failures"] or c["notes"]:
            w("")
            for f in c["failures"]:
                w(f"- FAILED: {f}")
            for n in c["notes"]:
                w(f"- note: {n}")
        w("")
        w("Commands (round 1; from the repository root):")
        w("")
        w("```")
        for cmd in c["commands"].values():
            w(cmd)
        w("```")
    w("")
    return "\n".join(out)


def main(argv) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1], newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    text = render(summarize(rows))
    with open(argv[2], "w") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
