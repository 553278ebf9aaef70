"""Helpers shared by the benchmark summarizers (standard library only).

    from benchlib import read_manifest, spread, ratio_cell, vdnn_steady, machine_header
    rows = read_manifest("bench/results/raw/case2/runs.tsv")    # list of dicts, by column name
    spread([3.0, 1.0, 2.0], "{:,.0f}")     # ('2', '1 – 3', 3): median, min – max, count
    vdnn_steady("run.json", batch=64, iters=30, warmup=5)     # images/s after the warm-up epoch

machine_header() renders the facts that bench/lib.sh's export_machine_facts puts in BENCH_*.
"""
import csv
import json
import os
import statistics


def env(name: str, default: str = "?") -> str:
    return os.environ.get(name, default) or default


def read_manifest(path: str):
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_json(path: str):
    with open(path) as f:
        return json.load(f)


def read_last_json_line(path: str):
    """The last non-empty line of a file, parsed (the PyTorch scripts print one JSON line)."""
    with open(path) as f:
        lines = [line for line in f.read().splitlines() if line.strip()]
    return json.loads(lines[-1])


def median(values):
    values = [v for v in values if v is not None and v == v]
    return statistics.median(values) if values else None


def fmt(x, pattern="{:,.0f}") -> str:
    return "—" if x is None or x != x else pattern.format(x)


def spread(values, pattern="{:,.0f}"):
    """(median, 'min – max', n) as strings, for a table row."""
    values = [v for v in values if v is not None and v == v]
    if not values:
        return "—", "—", 0
    return (fmt(statistics.median(values), pattern),
            f"{fmt(min(values), pattern)} – {fmt(max(values), pattern)}", len(values))


def ratio_cell(pairs) -> str:
    """Median of per-round ratios a/b from (a, b) pairs, as '1.23× (n=3)'."""
    rs = [a / b for a, b in pairs if a is not None and b]
    return f"{statistics.median(rs):.2f}× (n={len(rs)})" if rs else "—"


def vdnn_steady(path: str, batch: int, iters: int, warmup: int):
    """(images/s over the epochs after the first, report images/s, note) of a vdnn --report run
    made of epochs of `warmup` batches (bench/throughput.sh): the first epoch is the warm-up."""
    r = read_json(path)
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
    return (seen / seconds if seconds > 0 else float("nan")), report_ips, note


def machine_header() -> str:
    return "\n".join([
        f"- Date: {env('BENCH_DATE')}",
        f"- Machine: {env('BENCH_CPU_MODEL')}, {env('BENCH_CPUS')} logical CPUs "
        f"({env('BENCH_SOCKETS')} socket(s) × {env('BENCH_CORES_PER_SOCKET')} core(s) × "
        f"{env('BENCH_THREADS_PER_CORE')} thread(s))",
        f"- vdnn: commit {env('BENCH_VDNN_COMMIT')} (working tree differs outside bench/ and docs/: "
        f"{env('BENCH_VDNN_DIRTY')}), build/vdnn",
        f"- PyTorch: {env('BENCH_PIP_TORCH')} (pip, bench/.venv); Debian python3-torch: "
        f"{env('BENCH_DEBIAN_TORCH')}",
        f"- Threads: OMP_NUM_THREADS={env('BENCH_THREADS')} for every run, "
        f"torch.set_num_threads({env('BENCH_THREADS')}), vdnn --threads {env('BENCH_THREADS')}; "
        f"OPENBLAS_CORETYPE={env('BENCH_OPENBLAS_CORETYPE')} (as found in the environment)",
        f"- Load average at the end: {env('BENCH_LOADAVG_END')}",
    ])


def code_block(lines) -> str:
    return "\n".join(["```", *lines, "```"])


def write_lines(path: str, lines) -> None:
    """Writes a summary's markdown lines to `path`."""
    with open(path, "w") as f:
        f.write("\n".join(lines))
