#!/usr/bin/env python3
"""bench/inference_memory.py — peak memory and latency of inference: ONNX Runtime, PyTorch and vdnn
on the same ONNX models (issue 20, "what it must show").

Model. For each (model, batch, engine) a fresh process loads the network, runs --warmup passes on
one seeded random batch (a .npy shared by all engines), times --repeat passes (median seconds per
batch) and writes its logits. The engines:
  ort    onnxruntime, CPU execution provider, default graph optimisations, enable_mem_pattern on
         (its default), intra_op_num_threads=T, inter_op_num_threads=1, ORT_SEQUENTIAL.
  torch  the same torchvision model in eager PyTorch under torch.inference_mode(),
         torch.set_num_threads(T), set_num_interop_threads(1): rebuilt by
         scripts/export_torchvision.py's build_model() with the weights the file was exported with
         (eager PyTorch keeps batch norm unfolded; the logits check shows the weights agree).
  vdnn   build/vdnn infer --model M.onnx --images x.npy --logits y.npy --batch B --threads T
         --repeat N --json (--repeat only when `vdnn infer --help` offers it; its JSON fields
         batch_seconds_median, peak_bytes, peak_by_class, smallest_budget_bytes, arena_bytes are copied
         when present). vdnn runs one pass for the logits and one warm-up before its N timed ones;
         the default --warmup 2 gives the Python engines as many untimed passes.
  vdnn_fastest  the same with --conv-algo fastest --algo-cache WORK/algos/M_bB.json: per layer the
         fastest forward kernel, measured by one untimed run before the rounds and read from the
         cache by the measured ones (no profiling in them). Not run by default.
The files are scripts/export_torchvision.py --eval exports (batch norm folded into the convolutions
by torch's exporter, dropout removed, batch fixed in the file), made in --work if missing.

Peak memory, measured the same way for every engine: the child's RSS high-water mark (ru_maxrss of
wait4, read by /usr/bin/time -f %M), minus the same figure for a process of the same engine that
loads no model (the baseline: Python with the engine's modules imported, numpy included; for vdnn
`vdnn --help`, the binary and its libraries loaded, since vdnn has no point before loading a model
at which to read its RSS, and no --version).
Both the delta and the absolute figure are reported. Python children also report their own view:
VmHWM after resetting it (/proc/self/clear_refs 5) once the imports are done, minus VmRSS then.
Every child gets OMP_NUM_THREADS=T. Rounds interleave the engines (rotated each round), and a
round measures each engine's baseline once; the table shows medians over rounds, and ratios to ORT
are medians of per-round ratios. Outputs: max |logits - ORT's logits| per engine, and that over
max |ORT logit| (the scale: eval-mode ResNet-50 logits from random weights reach hundreds, so an
absolute tolerance alone says little; PyTorch's difference to ORT is the float-noise floor).

  build/pyenv/bin/python bench/inference_memory.py --models resnet18 --batches 1,32 \\
      [--engines ort,torch,vdnn] [--rounds 3] [--warmup 2] [--repeat 7] [--threads 2] \\
      [--work build/inference_bench] [--vdnn build/vdnn] [--json-out results.json] [--ort-profile] \\
      [--torch-python bench/.venv/bin/python] [--quiet-wait 600]
  build/pyenv/bin/python bench/inference_memory.py --from-json results.json   # its table again
(bash bench/inference_memory.sh ... makes build/pyenv first.) Do not measure while a compiler
runs: the script warns; it marks a row † when a compiler was seen or other processes kept more than
0.2 cores busy during one of its runs (/proc/stat busy time less the child's own CPU time), and
shows the median latency of the uncontended runs alone in a column of its own; --quiet-wait S
waits up to S seconds for no compiler before each run.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
from benchlib import fmt, median  # noqa: E402

ENGINES = ("ort", "torch", "vdnn", "vdnn_fastest")  # vdnn_fastest: `vdnn infer --conv-algo fastest`
VDNN_FIELDS = ("peak_bytes", "peak_by_class", "smallest_budget_bytes", "arena_bytes", "forward_order")
OTHER_LOAD_LIMIT = 0.2  # cores other processes may keep busy during a run before it counts as contended
TIME = "/usr/bin/time"  # GNU time: the peak RSS of the command it runs (%M)
MIB = 1024.0 * 1024.0


# --- the child: one engine, one model, one batch --------------------------------------------------

def proc_status(field):
    """Bytes of a /proc/self/status field (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def reset_high_water_mark():
    """VmHWM := VmRSS now (Linux >= 4.0); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def ort_runner(a):
    import numpy as np
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.enable_mem_pattern = True
    so.intra_op_num_threads = a.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if a.ort_profile:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.splitext(a.output)[0] + "_ort_profile"

    def load():
        sess = ort.InferenceSession(a.file, so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        x = np.load(a.input)
        return lambda: sess.run(None, {name: x})[0], sess
    return np, load, {"onnxruntime": ort.__version__}


def torch_runner(a):
    import numpy as np
    import torch
    from export_torchvision import build_model
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)

    def load():
        model = build_model(a.model, eval_form=True)
        x = torch.from_numpy(np.load(a.input))

        def run():
            with torch.inference_mode():
                return model(x).numpy()
        return run, None
    blas = [w for w in torch.__config__.show().replace(",", " ").split() if w.startswith("BLAS_INFO=")]
    return np, load, {"torch": torch.__version__, "blas": blas[0][10:] if blas else None,
                      "mkldnn": torch.backends.mkldnn.is_available()}


def run_child(a):
    np, load, versions = (ort_runner if a.child == "ort" else torch_runner)(a)
    out = {"engine": a.child, "versions": versions}
    if a.baseline:
        out["rss_bytes"] = proc_status("VmRSS")
        print(json.dumps(out))
        return
    out["hwm_at_imports"] = proc_status("VmHWM")
    out["hwm_reset"] = reset_high_water_mark()
    out["rss_before_load"] = proc_status("VmRSS")
    t0 = time.perf_counter()
    run, sess = load()
    out["load_seconds"] = time.perf_counter() - t0
    out["rss_after_load"] = proc_status("VmRSS")
    y = None
    for _ in range(a.warmup):
        y = run()
    times = []
    for _ in range(a.repeat):
        t0 = time.perf_counter()
        y = run()
        times.append(time.perf_counter() - t0)
    out["batch_seconds"] = times
    out["batch_seconds_median"] = statistics.median(times) if times else None
    out["hwm_end"] = proc_status("VmHWM")
    out["own_peak_delta_bytes"] = out["hwm_end"] - out["rss_before_load"] if out["hwm_reset"] else None
    np.save(a.output, np.ascontiguousarray(y, dtype=np.float32))
    if sess is not None and a.ort_profile:
        out["ort_profile"] = summarize_ort_profile(sess.end_profiling())
    print(json.dumps(out))


def summarize_ort_profile(path):
    """What ONNX Runtime's profiler says about memory: per-node sizes (it records no peak)."""
    with open(path) as f:
        events = json.load(f)
    nodes = {}
    for e in events:
        args = e.get("args", {})
        if e.get("cat") == "Node" and "output_size" in args:
            nodes[e["name"]] = {k: int(args.get(k, 0)) for k in ("output_size", "activation_size", "parameter_size")}
    if not nodes:
        return {"file": path, "nodes": 0}
    return {"file": path, "nodes": len(nodes),
            "largest_output_bytes": max(n["output_size"] for n in nodes.values()),
            "largest_activation_bytes": max(n["activation_size"] for n in nodes.values()),
            "sum_parameter_bytes": sum(n["parameter_size"] for n in nodes.values())}


# --- the parent: files, runs, summary ------------------------------------------------------------

def compiler_running():
    return subprocess.run(["pgrep", "-f", "cc1plus"], capture_output=True).returncode == 0


def busy_seconds():
    """CPU seconds the whole machine has spent busy (not idle or waiting on I/O), from /proc/stat."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks[:8]) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def measured(cmd, env):
    """One child under GNU time: (exit status, stdout, stderr, peak RSS bytes, wall seconds, cores
    other processes kept busy meanwhile). The peak is the child's ru_maxrss as time reads it from
    wait4: Linux carries the RSS high-water mark of the process that execs into ru_maxrss, so a
    child forked from this (large) Python process would report at least this process's RSS;
    /usr/bin/time is a few hundred KiB. The other load is the machine's busy CPU time less the
    child's own (%U + %S), per second of wall time."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.NamedTemporaryFile("r") as usage:
        busy0, t0 = busy_seconds(), time.perf_counter()
        rc = subprocess.run([TIME, "-f", "%M %U %S", "-o", usage.name, "--"] + cmd, stdout=out, stderr=err,
                            env=env).returncode
        wall, busy = time.perf_counter() - t0, busy_seconds() - busy0
        out.seek(0)
        err.seek(0)
        fields = ([line for line in usage.read().splitlines() if line.strip()] or [""])[-1].split()
        try:
            kib, cpu = int(fields[0]), float(fields[1]) + float(fields[2])
        except (IndexError, ValueError):
            kib, cpu = None, busy
        other = max(0.0, busy - cpu) / wall if wall > 0 else None
        return rc, out.read().decode(), err.read().decode(), kib * 1024 if kib is not None else None, wall, other


def vdnn_has_repeat(vdnn):
    p = subprocess.run([vdnn, "infer", "--help"], capture_output=True, text=True)
    return "--repeat" in p.stdout


def prepare_files(a):
    """{(model, batch): (onnx path, input .npy path)}, exporting what is missing."""
    import numpy as np
    onnx_dir = os.path.join(a.work, "onnx")
    os.makedirs(onnx_dir, exist_ok=True)
    os.makedirs(os.path.join(a.work, "logits"), exist_ok=True)
    files = {}
    for model in a.models:
        for batch in a.batches:
            from export_torchvision import export, export_path
            path = export_path(onnx_dir, model, batch, True)
            if not os.path.exists(path):
                print(f"[inference_memory] exporting {path}", file=sys.stderr)
                export(model, onnx_dir, a.size, batch, 1000, 0, eval_form=True)
            x = os.path.join(a.work, f"input_b{batch}_s{a.size}_seed{a.seed}.npy")
            if not os.path.exists(x):
                rng = np.random.default_rng(a.seed)
                np.save(x, rng.standard_normal((batch, 3, a.size, a.size), dtype=np.float32))
            files[(model, batch)] = (path, x)
    return files


def child_cmd(a, engine, model, batch, files, output, baseline=False):
    path, x = files[(model, batch)] if not baseline else (None, None)
    if engine.startswith("vdnn"):
        if baseline:
            return [a.vdnn, "--help"]
        cmd = [a.vdnn, "infer", "--model", path, "--images", x, "--logits", output, "--batch", str(batch),
               "--threads", str(a.threads), "--json"]
        if engine == "vdnn_fastest":  # the per-layer choice measured once, before the timed runs
            cmd += ["--conv-algo", "fastest", "--algo-cache", os.path.join(a.work, "algos", f"{model}_b{batch}.json")]
        return cmd + (["--repeat", str(a.repeat)] if a.vdnn_repeat else [])
    python = a.torch_python if engine == "torch" else sys.executable
    cmd = [python, os.path.abspath(__file__), "--child", engine, "--threads", str(a.threads)]
    if baseline:
        return cmd + ["--baseline"]
    cmd += ["--model", model, "--file", path, "--input", x, "--output", output, "--warmup", str(a.warmup),
            "--repeat", str(a.repeat)]
    return cmd + (["--ort-profile"] if a.ort_profile and engine == "ort" else [])


def run_one(a, engine, model, batch, files, rnd, env, baseline=False):
    output = os.path.join(a.work, "logits", f"{model}_b{batch}_{engine}.npy")
    cmd = child_cmd(a, engine, model, batch, files, output, baseline)
    deadline = time.monotonic() + a.quiet_wait
    while compiler_running() and time.monotonic() < deadline:
        time.sleep(5)
    busy = compiler_running()
    rc, out, err, maxrss, wall, other = measured(cmd, env)
    busy = busy or compiler_running()
    rec = {"round": rnd, "engine": engine, "model": model, "batch": batch, "baseline": baseline, "rc": rc,
           "peak_rss_bytes": maxrss, "wall_seconds": wall, "compiler_running": busy,
           "other_load_cores": other, "contended": busy or (other or 0) > OTHER_LOAD_LIMIT,
           "command": " ".join(cmd)}
    if rc != 0:
        rec["error"] = (err.strip() or out.strip())[-2000:]
        print(f"[inference_memory] {engine} {model} b{batch}{' baseline' if baseline else ''} failed "
              f"(exit {rc}): {rec['error'][-400:]}", file=sys.stderr)
        return rec
    if baseline:
        return rec
    rec["logits"] = output
    try:
        text = out.strip()
        rec["report"] = json.loads(text.splitlines()[-1] if not engine.startswith("vdnn") else text)
    except (ValueError, IndexError):
        rec["report"] = {}
        rec["error"] = "unparsable output: " + out[-400:]
    return rec


def max_diffs(records):
    """{(model, batch, engine): max |logits - ORT's|} and {(model, batch): max |ORT logit|}."""
    import numpy as np
    diff, scale, ref = {}, {}, {}
    for r in records:
        if not r["baseline"] and r["rc"] == 0 and r["engine"] == "ort":
            ref[(r["model"], r["batch"], r["round"])] = np.load(r["logits"])
    for r in records:
        key = (r["model"], r["batch"], r["round"])
        if r["baseline"] or r["rc"] != 0 or key not in ref:
            continue
        y, y0 = np.load(r["logits"]), ref[key]
        k = (r["model"], r["batch"], r["engine"])
        d = float(np.max(np.abs(y - y0))) if y.shape == y0.shape else float("inf")
        diff[k] = max(diff.get(k, 0.0), d)
        scale[(r["model"], r["batch"])] = float(np.max(np.abs(y0)))
    return diff, scale


def latency(r):
    rep = r.get("report", {})
    return rep.get("batch_seconds_median")


def summarize(a, records):
    base = {(r["round"], r["engine"]): r["peak_rss_bytes"] for r in records if r["baseline"] and r["rc"] == 0}
    runs = [r for r in records if not r["baseline"] and r["rc"] == 0]
    for r in runs:
        b = base.get((r["round"], r["engine"]))
        r["peak_delta_bytes"] = r["peak_rss_bytes"] - b if None not in (b, r["peak_rss_bytes"]) else None
    diff, scale = max_diffs(records)
    rows = []
    for model in a.models:
        for batch in a.batches:
            ort_by_round = {r["round"]: r for r in runs
                            if (r["model"], r["batch"], r["engine"]) == (model, batch, "ort")}
            for engine in a.engines:
                mine = [r for r in runs if (r["model"], r["batch"], r["engine"]) == (model, batch, engine)]
                failed = [r for r in records if not r["baseline"] and r["rc"] != 0 and
                          (r["model"], r["batch"], r["engine"]) == (model, batch, engine)]

                def ratio(f):
                    rs = [f(r) / f(ort_by_round[r["round"]]) for r in mine if r["round"] in ort_by_round and
                          f(r) is not None and f(ort_by_round[r["round"]])]
                    return statistics.median(rs) if rs else None
                rep = mine[-1]["report"] if mine else {}
                rows.append({
                    "model": model, "batch": batch, "engine": engine, "runs": len(mine), "failed": len(failed),
                    "peak_delta_bytes": median([r["peak_delta_bytes"] for r in mine]),
                    "peak_rss_bytes": median([r["peak_rss_bytes"] for r in mine]),
                    "baseline_rss_bytes": median([base.get((r["round"], engine)) for r in mine]),
                    "own_peak_delta_bytes": median([r["report"].get("own_peak_delta_bytes") for r in mine]),
                    "batch_seconds_median": median([latency(r) for r in mine]),
                    "quiet_batch_seconds_median": median([latency(r) for r in mine if not r["contended"]]),
                    "quiet_runs": sum(1 for r in mine if not r["contended"] and latency(r) is not None),
                    "peak_ratio_to_ort": ratio(lambda r: r.get("peak_delta_bytes")),
                    "latency_ratio_to_ort": ratio(latency),
                    "max_abs_diff_to_ort": diff.get((model, batch, engine)),
                    "max_abs_ort_logit": scale.get((model, batch)),
                    "contended": any(r["contended"] for r in mine),
                    "other_load_cores": max([r["other_load_cores"] or 0 for r in mine], default=None),
                    "vdnn_fields": {k: rep[k] for k in VDNN_FIELDS
                                    if k in rep} if engine.startswith("vdnn") else None,
                    "ort_profile": rep.get("ort_profile"),
                    "error": failed[-1]["error"][-400:] if failed and not mine else None,
                })
    return rows


def markdown(rows):
    lines = ["| model | batch | engine | peak MiB (RSS delta) | peak MiB (RSS) | latency ms | peak / ORT "
             "| latency / ORT | quiet latency ms (runs) | max abs diff to ORT (/ max abs ORT logit) |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    def mib(b):
        return fmt(b / MIB if b is not None else None, "{:,.1f}")
    for r in rows:
        def ms(seconds):
            return fmt(seconds * 1e3 if seconds is not None else None, "{:,.1f}")
        quiet = r.get("quiet_batch_seconds_median")
        quiet = f"{ms(quiet)} ({r['quiet_runs']})" if quiet is not None else "—"
        diff = r["max_abs_diff_to_ort"]
        scale = r["max_abs_ort_logit"]
        diff = "—" if diff is None else ("ref" if r["engine"] == "ort" else
                                         f"{diff:.1e}" + (f" ({diff / scale:.0e} rel.)" if scale else ""))
        mark = " (failed)" if not r["runs"] else (" †" if r["contended"] else "")
        cells = [r["model"], str(r["batch"]), r["engine"] + mark,
                 mib(r["peak_delta_bytes"]), mib(r["peak_rss_bytes"]), ms(r["batch_seconds_median"]),
                 fmt(r["peak_ratio_to_ort"], "{:.2f}×"), fmt(r["latency_ratio_to_ort"], "{:.2f}×"), quiet, diff]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    if any(r["contended"] for r in rows):
        lines.append(f"† contended: during at least one of these runs a compiler ran or other processes kept more "
                     f"than {OTHER_LOAD_LIMIT} cores busy (most: "
                     f"{max(r['other_load_cores'] or 0 for r in rows if r['contended']):.2f}); latency unreliable.")
    for r in rows:
        if r["engine"] == "ort" and r["max_abs_ort_logit"] is not None:
            lines.append(f"- {r['model']} batch {r['batch']}: max |ORT logit| {r['max_abs_ort_logit']:.3g}")
        if r["engine"] == "ort" and r["ort_profile"]:
            pr = r["ort_profile"]
            lines.append(f"  - ORT profiler (no peak recorded): {pr.get('nodes')} nodes, parameters "
                         f"{mib(pr.get('sum_parameter_bytes'))} MiB, largest node output "
                         f"{mib(pr.get('largest_output_bytes'))} MiB")
        if r["engine"].startswith("vdnn") and r["vdnn_fields"]:
            lines.append(f"  - vdnn's own view: {json.dumps(r['vdnn_fields'])}")
        if r["error"]:
            lines.append(f"  - {r['engine']} failed: {r['error'].splitlines()[-1] if r['error'] else ''}")
    return "\n".join(lines)


def parse_list(text, kind, name, allowed=None):
    try:
        values = [kind(v) for v in text.split(",") if v]
    except ValueError:
        sys.exit(f"inference_memory.py: {name} '{text}' is not a comma-separated list")
    bad = [v for v in values if (allowed is not None and v not in allowed) or (kind is int and v < 1)]
    if bad or not values:
        sys.exit(f"inference_memory.py: {name} '{text}': "
                 + (f"valid: {', '.join(map(str, allowed))}" if allowed else "give positive integers"))
    return values


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18")
    p.add_argument("--batches", default="1,32")
    p.add_argument("--engines", default=",".join(ENGINES[:3]))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--seed", type=int, default=0, help="seed of the random input batch")
    p.add_argument("--work", default=os.path.join(ROOT, "build", "inference_bench"),
                   help="folder for the ONNX files, inputs and logits")
    p.add_argument("--vdnn", default=os.path.join(ROOT, "build", "vdnn"))
    p.add_argument("--torch-python", default=sys.executable,
                   help="interpreter of the PyTorch children (with torch and torchvision; default: this one)")
    p.add_argument("--json-out", help="write every run and the summary rows here")
    p.add_argument("--ort-profile", action="store_true", help="ORT children run with enable_profiling")
    p.add_argument("--from-json", metavar="FILE", help="only print the table of an earlier --json-out file")
    p.add_argument("--quiet-wait", type=float, default=0,
                   help="before each run, wait up to this many seconds for no compiler (cc1plus) to run")
    # child mode (internal)
    p.add_argument("--child", choices=("ort", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--baseline", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--model", help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    p.add_argument("--input", help=argparse.SUPPRESS)
    p.add_argument("--output", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return run_child(a)
    if a.from_json:
        with open(a.from_json) as f:
            return print(markdown(json.load(f)["rows"]))
    from export_torchvision import MODELS
    a.models = parse_list(a.models, str, "--models", sorted(MODELS))
    a.batches = parse_list(a.batches, int, "--batches")
    a.engines = parse_list(a.engines, str, "--engines", ENGINES)
    for name in ("rounds", "repeat", "threads"):
        if getattr(a, name) < 1:
            sys.exit(f"inference_memory.py: --{name} must be >= 1, got {getattr(a, name)}")
    if a.warmup < 0:
        sys.exit(f"inference_memory.py: --warmup must be >= 0, got {a.warmup}")
    a.work = os.path.abspath(a.work)
    if any(e.startswith("vdnn") for e in a.engines):
        if not os.access(a.vdnn, os.X_OK):
            print(f"[inference_memory] {a.vdnn} is missing: vdnn is left out", file=sys.stderr)
            a.engines = [e for e in a.engines if not e.startswith("vdnn")]
            a.vdnn_repeat = False
        else:
            a.vdnn_repeat = vdnn_has_repeat(a.vdnn)
            if not a.vdnn_repeat:
                print("[inference_memory] vdnn infer has no --repeat yet: one pass, no latency", file=sys.stderr)
    if not os.access(TIME, os.X_OK):
        sys.exit(f"inference_memory.py: {TIME} (GNU time) is missing; it measures each child's peak RSS")
    if compiler_running():
        print("[inference_memory] warning: a compiler is running; figures will be contended", file=sys.stderr)
    files = prepare_files(a)
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
    if "vdnn_fastest" in a.engines:  # the algorithm caches, measured once, untimed
        os.makedirs(os.path.join(a.work, "algos"), exist_ok=True)
        for model in a.models:
            for batch in a.batches:
                out = os.path.join(a.work, "logits", f"{model}_b{batch}_algos.npy")
                subprocess.run(child_cmd(a, "vdnn_fastest", model, batch, files, out), env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    records = []
    for rnd in range(a.rounds):
        for engine in a.engines:
            records.append(run_one(a, engine, None, None, files, rnd, env, baseline=True))
        for model in a.models:
            for batch in a.batches:
                k = rnd % len(a.engines)
                for engine in a.engines[k:] + a.engines[:k]:
                    records.append(run_one(a, engine, model, batch, files, rnd, env))
                    print(f"[inference_memory] round {rnd}: {model} b{batch} {engine}: "
                          f"{fmt(records[-1]['peak_rss_bytes'], '{:,}')} B peak RSS, "
                          f"{fmt(latency(records[-1]), '{:.4f}')} s/batch, other load "
                          f"{fmt(records[-1]['other_load_cores'], '{:.2f}')} cores", file=sys.stderr)
    rows = summarize(a, records)
    table = markdown(rows)
    print(table)
    if a.json_out:
        meta = {"threads": a.threads, "rounds": a.rounds, "warmup": a.warmup, "repeat": a.repeat,
                "size": a.size, "seed": a.seed, "vdnn": a.vdnn if any(e.startswith("vdnn") for e in a.engines) else None,
                "vdnn_repeat": getattr(a, "vdnn_repeat", False), "python": sys.executable,
                "torch_python": a.torch_python, "time": TIME,
                "loadavg": os.getloadavg(), "argv": sys.argv}
        with open(a.json_out, "w") as f:
            json.dump({"meta": meta, "rows": rows, "runs": records, "table": table}, f, indent=1)


if __name__ == "__main__":
    main()
