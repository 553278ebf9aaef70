#!/usr/bin/env python3
"""Runs a training command and measures the wall time from its start until an epoch's test
accuracy reaches a target; then stops it (SIGTERM). Reads the per-epoch lines of `vdnn train`
(and of bench/pytorch_fmnist.py, which prints the same format): "epoch   4 ... test acc 0.9111 ...".

Prints one JSON line: {"reached": true, "seconds": 61.2, "epoch": 4, "accuracy": 0.9111,
"epochs": [{"epoch": 1, "test_accuracy": 0.8796, "seconds": 16.0}, ...], "rc": ...}; "reached" is
false (and "seconds" null) when the command ends without reaching the target. The command's own
output goes to --log.

  python3 bench/watch_accuracy.py --target 0.91 --log run.log -- build/vdnn train --epochs 10
"""
import argparse
import json
import re
import signal
import subprocess
import sys
import time

EPOCH_LINE = re.compile(r"^epoch\s+(\d+)\b.*\btest acc ([0-9.]+)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", type=float, required=True, help="test accuracy, e.g. 0.91")
    ap.add_argument("--log", required=True, help="where the command's output goes")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND ARGS...")
    args = ap.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("no command given")

    epochs, result = [], {"reached": False, "seconds": None, "epoch": None, "accuracy": None}
    start = time.perf_counter()
    with open(args.log, "w") as log:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, bufsize=1)
        for line in proc.stdout:
            now = time.perf_counter() - start
            log.write(line)
            m = EPOCH_LINE.match(line.strip())
            if not m:
                continue
            epoch, acc = int(m.group(1)), float(m.group(2))
            epochs.append({"epoch": epoch, "test_accuracy": acc, "seconds": round(now, 3)})
            if acc >= args.target:
                result.update(reached=True, seconds=now, epoch=epoch, accuracy=acc)
                proc.send_signal(signal.SIGTERM)
                break
        proc.stdout.close()
        rc = proc.wait()
    result.update(epochs=epochs, target=args.target, rc=rc, stopped_at_target=result["reached"])
    print(json.dumps(result), flush=True)
    # A run stopped at the target exits by our SIGTERM: that is success.
    return 0 if result["reached"] or rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
