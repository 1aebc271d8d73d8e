#!/usr/bin/env bash
# The scaling curve of `analyze --ranks` on the 16-core GPU host: local process pool vs Ray (one Ray node, then a
# local cluster of 4 node processes), 2 to 1,024 synthetic ranks. The analysis uses no GPU; the host's cores are the
# point. Needs the ray extra in the environment the device machine runs (it reaches no package index: carry a venv
# built with `pip install -e ".[ray]"`). Usage (repo root): bash benchmarks/device_ranks_scaling.sh OUTDIR
set -u
OUT_DIR=${1:?outdir}
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=170
log() { echo "$(date +%T) $*" | tee -a "$OUT_DIR/summary.txt"; }
python3 -c 'import ray' 2>/dev/null || { log "ray is not installed here: pip install -e '.[ray]'"; exit 2; }
log "cores=$(nproc) $(python3 -c 'import ray; print("ray", ray.__version__)') load=$(cut -d' ' -f1-3 /proc/loadavg)"
for nodes in 1 4; do
  start=$(date +%s)
  timeout "${RANKS_LIMIT:-280}" python3 benchmarks/bench_ranks_scaling.py --nodes "$nodes" \
    --out "${RANKS_TMP:-/tmp/idlehound-ranks}" > "$OUT_DIR/scaling.nodes$nodes.txt" 2>&1
  log "nodes=$nodes rc=$? wall=$(( $(date +%s) - start ))s"
  cat "$OUT_DIR/scaling.nodes$nodes.txt" >> "$OUT_DIR/summary.txt"
done
rm -rf "${RANKS_TMP:-/tmp/idlehound-ranks}"
