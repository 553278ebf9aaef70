#!/usr/bin/env bash
# scripts/check_docs.sh — the docs' examples still work and their links still lead somewhere.
#
#   bash scripts/check_docs.sh build       # BUILD: a build folder holding vdnn (and python/)
#
# 1. Runs every fenced code block of README.md and docs/**/*.md whose info string is `sh check`
#    or `python check` (GitHub renders them as sh / python): the quick examples, seconds each, that
#    must always work. Each runs in a fresh temporary folder with BUILD first on PATH (so `vdnn` is
#    the built one), PYTHONPATH=BUILD/python, under `bash -euo pipefail` (a python block: BUILD/pyenv/
#    bin/python if present, else /usr/bin/python3) and a timeout (VDNN_DOCS_TIMEOUT, default 60 s).
#    One line per block: file:line, ok or FAILED with the last lines of its output.
# 2. Checks that every relative link of those files ([text](path), ![alt](path), path#anchor)
#    names a file that exists, and that an anchor into a Markdown file names one of its headings.
# Exits 1 if any block or link failed. It trains and plans: on a shared machine run it under the
# CPU lock (`flock /tmp/vdnn-cpu.lock bash scripts/check_docs.sh build`).
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[ $# -ge 1 ] || { echo "usage: bash scripts/check_docs.sh BUILD_DIR (a build folder holding vdnn)" >&2; exit 2; }
BUILD="$(cd "$1" 2>/dev/null && pwd)" || { echo "check_docs: no build folder '$1'" >&2; exit 2; }
[ -x "$BUILD/vdnn" ] || { echo "check_docs: no executable vdnn in '$BUILD'" >&2; exit 2; }
PY=/usr/bin/python3
[ -x "$BUILD/pyenv/bin/python" ] && PY="$BUILD/pyenv/bin/python"
TIMEOUT="${VDNN_DOCS_TIMEOUT:-60}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cd "$ROOT"
mapfile -t FILES < <(ls README.md; find docs -name '*.md' | LC_ALL=C sort)

# Every checked block as WORK/blocks/<n>.{sh,py}, with a line "<n> <kind> <file>:<line>" in WORK/list.
mkdir -p "$WORK/blocks"
for f in "${FILES[@]}"; do
  awk -v file="$f" -v dir="$WORK/blocks" -v list="$WORK/list" '
    BEGIN { n = 0; while ((getline line < list) > 0) n++; close(list) }
    !inside && /^```/ {
      inside = 1; info = substr($0, 4); gsub(/^[ \t]+|[ \t]+$/, "", info)
      kind = (info == "sh check") ? "sh" : (info == "python check") ? "py" : ""
      if (kind != "") { n++; out = dir "/" n "." kind; print n, kind, file ":" FNR >> list }
      next
    }
    inside && /^```[ \t]*$/ { inside = 0; if (kind != "") close(out); kind = ""; next }
    inside && kind != "" { print > out }
  ' "$f"
done

failed=0
count=0
while read -r n kind where; do
  count=$((count + 1))
  dir="$WORK/run$n"
  mkdir -p "$dir"
  start=$(date +%s%N)
  if [ "$kind" = sh ]; then
    cmd=(bash -euo pipefail "$WORK/blocks/$n.sh")
  else
    cmd=(bash -euo pipefail -c '"$0" "$1"' "$PY" "$WORK/blocks/$n.py")
  fi
  (cd "$dir" && PATH="$BUILD:$PATH" PYTHONPATH="$BUILD/python" timeout "$TIMEOUT" "${cmd[@]}") > "$WORK/out$n" 2>&1
  rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 )); secs="$((ms / 1000)).$((ms % 1000 / 100))"
  if [ $rc = 0 ]; then
    echo "$where: ok ($secs s)"
  else
    failed=$((failed + 1))
    [ $rc = 124 ] && reason="timed out after ${TIMEOUT} s" || reason="exit $rc"
    echo "$where: FAILED ($reason, $secs s); last lines:"
    tail -n 8 "$WORK/out$n" | sed 's/^/    /'
  fi
done < <(cat "$WORK/list" 2>/dev/null)

# Relative links: the target file exists; an anchor into a Markdown file is one of its headings
# (GitHub's slugs: lower case, punctuation but - and _ dropped, spaces to -, -1 -2 for repeats).
"$PY" - "${FILES[@]}" > "$WORK/links" <<'EOF'
import os, re, sys
def headings(path):  # code spans keep their text in a slug
    seen, out = {}, set()
    text = re.sub(r"^```.*?^```[ \t]*$", "", open(path, encoding="utf-8").read(), flags=re.S | re.M)
    for line in text.splitlines():
        m = re.match(r"#{1,6}\s+(.*)", line)
        if not m: continue
        s = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-")
        k = seen.get(s, 0); seen[s] = k + 1
        out.add(s if k == 0 else f"{s}-{k}")
    return out
bad = 0
for f in sys.argv[1:]:
    text = open(f, encoding="utf-8").read()
    body = re.sub(r"^```.*?^```[ \t]*$", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S | re.M)
    for lineno, line in enumerate(body.splitlines(), 1):
        line = re.sub(r"`[^`\n]*`", "", line)
        for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target): continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
            if not os.path.exists(dest):
                print(f"{f}:{lineno}: link to {target}: no file {dest}"); bad += 1
            elif anchor and dest.endswith(".md") and anchor not in headings(dest):
                print(f"{f}:{lineno}: link to {target}: {dest} has no heading #{anchor}"); bad += 1
print(f"links: {bad} broken")
sys.exit(1 if bad else 0)
EOF
links_rc=$?
grep -v '^links: ' "$WORK/links"
tail -n 1 "$WORK/links"

echo "check_docs: $count example(s), $failed failed; links $([ $links_rc = 0 ] && echo ok || echo FAILED)"
[ $failed = 0 ] && [ $links_rc = 0 ]
