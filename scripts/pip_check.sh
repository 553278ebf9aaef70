#!/usr/bin/env bash
# scripts/pip_check.sh — `pip install .` as a newcomer runs it, timed: a fresh clone of this
# repository's HEAD for each way, then the README's Python example run from the installed package
# (in an empty folder, so nothing of the source tree is on the path).
#   venv    python3 -m venv (whatever python3 is first on PATH); pip builds in isolation, fetching
#           setuptools, wheel and pybind11 from PyPI (needs the network), numpy for the module;
#   debian  a venv of Debian's /usr/bin/python3 with its site packages, offline:
#           pip install --no-build-isolation . (Debian's setuptools, wheel, numpy and pybind11-dev).
# It compiles the library (into each clone's build-pip/), so it is no CI test: minutes on two cores.
# Where ccache is installed the compiler goes through it; --cold gives it an empty cache first (the
# time a first install takes), else the machine's cache serves what an earlier build compiled.
# Prints one line per way: its seconds and whether the example ran; exits 1 if any failed.
# The figures it gave: docs/design/python.md ("Installing with pip"). On a shared machine run it under
# the CPU lock: flock /tmp/vdnn-cpu.lock bash scripts/pip_check.sh [--cold] [venv] [debian]
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cold=0
if [ "${1:-}" = "--cold" ]; then cold=1; shift; fi
WAYS=("$@")
[ ${#WAYS[@]} -gt 0 ] || WAYS=(venv debian)
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if [ $cold = 1 ]; then export CCACHE_DIR="$WORK/ccache"; fi

# The README's `python check` block: what a newcomer runs first.
awk '/^```python check/ { on = 1; next } on && /^```/ { exit } on { print }' "$ROOT/README.md" >"$WORK/example.py"
[ -s "$WORK/example.py" ] || { echo "pip_check: no \`python check\` block in README.md" >&2; exit 2; }

failed=0
for way in "${WAYS[@]}"; do
  clone="$WORK/$way/vdnn" env="$WORK/$way/env" log="$WORK/$way.log"
  git clone -q "$ROOT" "$clone" || { echo "pip_check: cannot clone $ROOT" >&2; exit 2; }
  case "$way" in
    venv) python3 -m venv "$env" && args=(install "$clone") ;;
    debian) /usr/bin/python3 -m venv --system-site-packages "$env" && args=(install --no-build-isolation "$clone") ;;
    *) echo "pip_check: unknown way '$way' (venv or debian)" >&2; exit 2 ;;
  esac
  start=$(date +%s)
  (cd "$clone" && "$env/bin/pip" "${args[@]}") >"$log" 2>&1
  status=$?
  seconds=$(($(date +%s) - start))
  if [ $status -ne 0 ]; then
    echo "$way: pip install FAILED after ${seconds} s:"; tail -n 15 "$log"; failed=1; continue
  fi
  mkdir -p "$WORK/$way/run"
  if out="$(cd "$WORK/$way/run" && "$env/bin/python" - <<EOF 2>&1
import vdnn, os
assert "site-packages" in vdnn.__file__, vdnn.__file__   # the installed package, not the source tree
print("vdnn", vdnn.__version__, "from", os.path.dirname(vdnn.__file__))
exec(open("$WORK/example.py").read())
EOF
)"; then
    echo "$way: pip install ${seconds} s$([ $cold = 1 ] && echo ' (cold ccache)'); $(head -n 1 <<<"$out"); README example ran, last line: $(tail -n 1 <<<"$out")"
  else
    echo "$way: pip install ${seconds} s, but the README example FAILED:"; tail -n 15 <<<"$out"; failed=1
  fi
done
exit $failed
