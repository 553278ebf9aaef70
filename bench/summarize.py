#!/usr/bin/env python3
"""Turns one throughput case of bench/throughput.sh (its runs.tsv and the raw results it points at)
into a markdown section: medians, min – max, per-round ratios vdnn / PyTorch, commands.

Usage: summarize.py RUNS_TSV OUT_MD "TITLE"
  e.g. summarize.py bench/results/raw/case3/runs.tsv bench/results/case3.md "Case 3: ResNet-18 ..."

Standard library only.
"""
import sys
from collections import OrderedDict

from benchlib import (code_block, fmt, ratio_cell, read_last_json_line, read_manifest, spread,
                      vdnn_steady)


def steady_col(variant):  # "vdnn steady", "vdnn bf16 steady"
    return f"{variant} steady"


def report_col(variant):
    return f"{variant} report"


def collect(rows):
    """{meta, rounds: {round: {column: ips}}, columns, commands, failures, notes, load}"""
    c = {"rounds": OrderedDict(), "columns": [], "vdnn": [], "commands": OrderedDict(), "failures": [],
         "notes": [], "load": {}}
    for row in rows:
        batch, iters, warmup = int(row["batch"]), int(row["iterations"]), int(row["warmup"])
        c.update(model=row["model"], batch=batch, iters=iters, warmup=warmup)
        rnd, variant, kind = int(row["round"]), row["variant"], row["kind"]
        per_round = c["rounds"].setdefault(rnd, {})
        c["load"].setdefault(rnd, row["loadavg"])
        if kind == "vdnn" and variant not in c["vdnn"]:
            c["vdnn"].append(variant)
        for col in [steady_col(variant), report_col(variant)] if kind == "vdnn" else [variant]:
            if col not in c["columns"]:
                c["columns"].append(col)
        c["commands"].setdefault(variant, row["command"])
        if row["rc"] != "0":
            c["failures"].append(f"round {rnd}, {variant}: exit status {row['rc']}")
            continue
        try:
            if kind == "vdnn":
                steady, rep, note = vdnn_steady(row["file"], batch, iters, warmup)
                per_round[steady_col(variant)], per_round[report_col(variant)] = steady, rep
                if note:
                    c["notes"].append(f"round {rnd}: {note}")
            else:
                per_round[variant] = float(read_last_json_line(row["file"])["images_per_second"])
        except (OSError, ValueError, KeyError, IndexError) as e:
            c["failures"].append(f"round {rnd}, {variant}: unreadable result ({e})")
    return c


def render(c, title) -> str:
    out = []
    w = out.append
    cols = c["columns"]
    vdnn_cols = [col for v in c["vdnn"] for col in (steady_col(v), report_col(v))]
    torch_cols = [k for k in cols if k not in vdnn_cols]
    w(f"## {title}")
    w("")
    w(f"{len(c['rounds'])} round(s), variants interleaved within each round, every run a fresh "
      f"process; {c['iters']} timed iterations after {c['warmup']} warm-up. Training images/s "
      "(forward, loss, backward, SGD step with momentum and weight decay) on random/synthetic "
      "data, no evaluation. PyTorch times N iterations after W untimed warm-up iterations. vdnn "
      "runs W + N iterations in epochs of W batches (`--synthetic-samples` = batch × W): **vdnn "
      "steady** is the epochs after the first (the same N after W), **vdnn report** is vdnn's own "
      "`images_per_second` over all W + N iterations. Ratios are the median of the per-round "
      "ratios; above 1 means vdnn is faster.")
    w("")
    w("| run | images/s, median | min – max | runs |")
    w("| --- | ---: | ---: | ---: |")
    labels = {}
    for v in c["vdnn"]:
        labels[steady_col(v)] = f"{v} steady (iterations {c['warmup'] + 1}–{c['warmup'] + c['iters']})"
        labels[report_col(v)] = f"{v} report (all {c['warmup'] + c['iters']} iterations)"
    for col in cols:
        label = labels.get(col, col)
        med, rng, n = spread([r[col] for r in c["rounds"].values() if col in r])
        w(f"| {label} | {med} | {rng} | {n} |")
    # Each vdnn variant against each PyTorch one, and against the first vdnn variant.
    baselines = torch_cols + [steady_col(v) for v in c["vdnn"][:1] if len(c["vdnn"]) > 1]
    if baselines:
        w("")
        w("| vdnn / other (median of per-round ratios) | " + " | ".join(vdnn_cols) + " |")
        w("| --- | " + " | ".join("---:" for _ in vdnn_cols) + " |")
        for t in baselines:
            cells = [ratio_cell([(r.get(v), r.get(t)) for r in c["rounds"].values()]) if v != t else "1"
                     for v in vdnn_cols]
            w(f"| vs {t} | " + " | ".join(cells) + " |")
    w("")
    w("Per round (images/s; load average when the round started):")
    w("")
    w("| round | " + " | ".join(cols) + " | load avg |")
    w("| ---: | " + " | ".join("---:" for _ in cols) + " | --- |")
    for rnd, r in c["rounds"].items():
        w(f"| {rnd} | " + " | ".join(fmt(r.get(k)) for k in cols) + f" | {c['load'][rnd]} |")
    if c["failures"] or c["notes"]:
        w("")
        out.extend(f"- FAILED: {f}" for f in c["failures"])
        out.extend(f"- note: {n}" for n in c["notes"])
    w("")
    w("Commands (round 1; from the repository root):")
    w("")
    w(code_block(c["commands"].values()))
    w("")
    return "\n".join(out)


def main(argv) -> int:
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[2], "w") as f:
        f.write(render(collect(read_manifest(argv[1])), argv[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
