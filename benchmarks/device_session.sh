#!/usr/bin/env bash
# One device call for the figures in docs/measurements: `idlehound tune` on the blog's baseline script, then
# the capture-overhead benchmark. Usage (repo root, on a GPU machine): bash benchmarks/device_session.sh OUTDIR
set -u
OUT_DIR=${1:?outdir}
mkdir -p "$OUT_DIR"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 COLUMNS=170
export IDLEHOUND_CACHE=${IDLEHOUND_CACHE:-/tmp/idlehound-cache}
log() { echo "$(date +%T) $*" | tee -a "$OUT_DIR/summary.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null) cores=$(nproc)"
log "$(python3 -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)')"
start=$(date +%s)
timeout "${TUNE_LIMIT:-300}" python3 -m idlehound tune --logdir "$OUT_DIR/tune" \
  examples/train_resnet18_cifar10.py > "$OUT_DIR/tune.out.txt" 2> "$OUT_DIR/tune.err.txt"
log "tune rc=$? wall=$(( $(date +%s) - start ))s"
tar -czf "$OUT_DIR/tune.tgz" -C "$OUT_DIR" tune && rm -rf "$OUT_DIR/tune"
[ "${BENCH_KINDS:-}" = none ] && exit 0
start=$(date +%s)
timeout "${BENCH_LIMIT:-240}" python3 benchmarks/bench_overhead.py --kinds "${BENCH_KINDS:-small,resnet}" \
  --reps 3 --out "$OUT_DIR/overhead.json" > "$OUT_DIR/overhead.out.txt" 2>&1
log "overhead rc=$? wall=$(( $(date +%s) - start ))s"
tail -4 "$OUT_DIR/overhead.out.txt" >> "$OUT_DIR/summary.txt"
