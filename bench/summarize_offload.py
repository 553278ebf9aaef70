#!/usr/bin/env python3
"""Markdown for case 6 (bench/offload.sh): images/s of each policy/sync on each emulated link
against `none`, medians and per-round ratios, stall time, device memory, bytes offloaded; dyn's pick.

Usage: summarize_offload.py RUNS_TSV OUT_MD MODEL DYN_BUDGET [SCALING.md]
"""
import os
import re
import sys
from collections import OrderedDict

from benchlib import code_block, median, read_json, read_manifest, spread, vdnn_steady, write_lines

MIB = 2 ** 20
BASE = ("no link", "none/event")
# issue 8's targets (event mode, on the Titan X's link): loss at most this much against none
TARGETS = {"conv/event": 0.02, "all/event": 0.05, "conv+ahead/event": 0.02, "all+ahead/event": 0.05}
TARGET_LINK = "titan-x"


def dyn_pick(log_path):
    try:
        with open(log_path) as f:
            m = re.search(r"^dyn picks (.*)$", f.read(), re.M)
    except OSError:
        return None
    return m.group(1) if m else None


def main(argv) -> int:
    if len(argv) not in (5, 6):
        print(__doc__, file=sys.stderr)
        return 2
    rows = read_manifest(argv[1])
    model, budget = argv[3], argv[4]
    runs = OrderedDict()   # (link, variant) -> {round: (ips, report)}
    failures, picks, commands = [], OrderedDict(), OrderedDict()
    for row in rows:
        key = (row["model"], row["variant"])
        commands.setdefault(row["variant"].split("/")[0], row["command"])
        if row["rc"] != "0":
            failures.append(f"round {row['round']}, {key[0]}, {key[1]}: exit {row['rc']}")
            continue
        ips, _, _ = vdnn_steady(row["file"], int(row["batch"]), int(row["iterations"]), int(row["warmup"]))
        runs.setdefault(key, {})[int(row["round"])] = (ips, read_json(row["file"]))
        if key[1].startswith("dyn/"):
            pick = dyn_pick(row["file"][:-len(".json")] + ".log")
            if pick:
                picks.setdefault(key[0], pick)
    base = runs.get(BASE, {})

    out = [f"## Case 6: offload overhead, {model}, batch {rows[0]['batch'] if rows else '?'}", ""]
    w = out.append
    w(f"Training images/s, steady state ({rows[0]['iterations'] if rows else '?'} iterations after "
      f"{rows[0]['warmup'] if rows else '?'} warm-up, as in cases 1–3), synthetic data; every "
      "configuration once per round, interleaved, fresh processes. `vs none` is the median of the "
      "per-round ratios to `none` (everything resident, nothing copied, so one baseline serves "
      "every link); loss = 1 − that. dyn runs under `--device-memory "
      f"{budget or '—'}` (halfway between the smallest budgets of `all` and `none`, so it must "
      "offload) with costs profiled on the same link.")
    if len(argv) == 6 and os.path.exists(argv[5]):
        w("")
        with open(argv[5]) as f:
            w(f.read().rstrip())
    w("")
    w("| link | policy/sync | images/s, median | min – max | vs none | loss | stall ms/iter | peak device MiB | feature maps MiB | offloaded MiB/iter |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for (link, variant), rounds in runs.items():
        med, rng, _ = spread([v[0] for v in rounds.values()])
        ratios = [v[0] / base[k][0] for k, v in rounds.items() if k in base]
        ratio = median(ratios)
        reports = [v[1] for v in rounds.values()]
        target = TARGETS.get(variant) if link.startswith(TARGET_LINK) else None
        loss = "—" if ratio is None else f"{1 - ratio:+.1%}".replace("+", "")
        if target is not None and ratio is not None:
            loss += f" ({'meets' if 1 - ratio <= target else 'misses'} ≤ {target:.0%})"
        w(f"| {link} | {variant} | {med} | {rng} | {'—' if ratio is None else f'{ratio:.3f}'} | {loss} | "
          f"{median([r['stall_ms_per_iteration'] for r in reports]):.1f} | "
          f"{reports[0]['peak_device_bytes'] / MIB:.1f} | "
          f"{reports[0]['peak_by_class']['feature_maps'] / MIB:.1f} | "
          f"{reports[0]['offloaded_bytes_per_iteration'] / MIB:.1f} |")
    if picks:
        w("")
        out.extend(f"- dyn on {link}: picks {pick}" for link, pick in picks.items())
    out.extend(f"- FAILED: {f}" for f in failures)
    w("")
    w("Commands (round 1, first link; the others differ in --link-bandwidth/--link-latency, "
      "--sync and --costs):")
    w("")
    w(code_block(commands.values()))
    w("")
    write_lines(argv[2], out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
