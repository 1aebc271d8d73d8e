#!/usr/bin/env bash
# Build the wheel and the sdist as a user installing from the repository would, without a C compiler, and check
# that each installs in a fresh virtual environment without torch and analyses a recorded trace (`analyze`).
# Usage: bash tools/check_dist.sh [WORKDIR]   (CI runs it; WORKDIR defaults to a new temporary folder)
set -euo pipefail
cd "$(dirname "$0")/.."
work="${1:-$(mktemp -d)}"
mkdir -p "$work"
# The build runs in this environment (--no-isolation): it needs setuptools (pyproject's build-system) and build.
python -c "import setuptools, build" 2>/dev/null || python -m pip install -q "setuptools>=77" build
# CC=false: the optional C decoder cannot be built, as on a machine without gcc/clang; the build must not fail.
CC=false python -m build --no-isolation --outdir "$work/dist" . >"$work/build.log" 2>&1 || {
  tail -30 "$work/build.log"; exit 1; }
trace="$(ls tests/traces/demo/*.pt.trace.json.gz)"
for kind in whl tar.gz; do
  pkg="$(ls "$work"/dist/idlehound-*."$kind")"
  venv="$work/venv-${kind%%.*}"
  python3 -m venv "$venv"
  CC=false "$venv/bin/python" -m pip install -q "$pkg" 2>&1 | grep -v "^WARNING: Location" || true
  "$venv/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('torch') is not None)" || {
    echo "check_dist: torch was installed with the $kind"; exit 1; }
  "$venv/bin/idlehound" analyze "$trace" --json >"$work/analyze-$kind.json"
  "$venv/bin/python" - "$work/analyze-$kind.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "idlehound/analysis" and doc["findings"], "no findings on the recorded demo trace"
assert doc["findings"][0]["location"]["line"] == 110, doc["findings"][0]["location"]
PY
  "$venv/bin/python" -c "import idlehound.app._demo as d; assert (d.RECORDED / 'run.json').is_file()"
  echo "check_dist: $(basename "$pkg") installs without a compiler or torch and analyses the demo trace"
done
