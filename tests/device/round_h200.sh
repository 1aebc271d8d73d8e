#!/usr/bin/env bash
# One device call for issues 30, 31, 32, 34 and 35 (2026-12-05). Usage (repo root, GPU machine, wheels in .whl and a
# trimmed Ray in .raypkg as the device README says): bash tests/device/round_h200.sh OUTDIR PART
#   PART watch: issue 34's slowdown/on-demand windows and the step clock's cost, issue 31's Ctrl-C stress on the
#               GPU, issue 32's SIGTERM save time;  PART watch2: the clock's parts, its cost, the windows and
#               the Ctrl-C stress again after the first call's fixes;  PART watch3: the same after the clock's
#               grouping of short steps;  PART calib / ab: issue 30's fresh loops and calibration, then their
#               A/B;  PART calib2: the calibration alone;  PART ranks: issue 35's scaling curve, local pool vs Ray.
# Everything lands in OUTDIR/summary.txt and OUTDIR/results.tgz (the device returns at most 8 files).
set -u
OUT_DIR=${1:?outdir}; PART=${2:?part}
RES=/tmp/idlehound-round; rm -rf "$RES"; mkdir -p "$RES" "$OUT_DIR"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH="$PWD/src:/tmp/site" PYTHONUNBUFFERED=1 COLUMNS=170
log() { echo "$(date +%T) $*" | tee -a "$OUT_DIR/summary.txt"; }
log "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader) cores=$(nproc) load=$(cut -d' ' -f1-3 /proc/loadavg)"
log "$(python3 -c 'import torch, msgspec; print("torch", torch.__version__, "msgspec", msgspec.__version__)')"
step() {  # step NAME LIMIT CMD...: run with a time limit, output to RES/NAME.txt, its tail into the summary
  local name=$1 limit=$2; shift 2; local t0=$(date +%s)
  timeout "$limit" "$@" > "$RES/$name.txt" 2>&1; local rc=$?
  log "$name rc=$rc wall=$(( $(date +%s) - t0 ))s"; tail -n "${TAILN:-12}" "$RES/$name.txt" >> "$OUT_DIR/summary.txt"
}
if [ "$PART" = watch ]; then
  step watch 170 python3 tests/device/watch_h200.py "$RES/watch"
  cp "$RES/watch/log.txt" "$RES/watch.log.txt" 2>/dev/null
  step clock_small 70 python3 benchmarks/bench_step_clock.py --kind small --rounds 15 --block 200 --out "$RES/clock_small.json"
  step clock_resnet 110 python3 benchmarks/bench_step_clock.py --kind resnet --rounds 9 --block 40 --warmup 20 --out "$RES/clock_resnet.json"
  step sigint_cuda 130 python3 benchmarks/stress_sigint_callbacks.py --cuda --trials 20 --seed 7
  step sigterm_save 90 python3 benchmarks/bench_startup_signals.py --sigterm-save 10 20
elif [ "$PART" = calib ]; then  # issue 30: fresh public loops recorded (no A/B yet), then the profiler-cost calibration
  T0=$(date +%s)
  TAILN=30 step fresh 260 python3 tests/device/validation_h200.py record "$RES/fresh"
  tar -czf "$OUT_DIR/fresh_a.tgz" -C "$RES/fresh/runs" wlm_lstm dcgan vae mnist 2>/dev/null
  tar -czf "$OUT_DIR/fresh_b.tgz" -C "$RES/fresh/runs" imagenet_r18 gat siamese mnist_rnn 2>/dev/null
  rm -f "$RES/fresh/fresh_runs.tgz"
  BUDGET=$(( ${CALIB_END:-330} - ($(date +%s) - T0) ))
  TAILN=50 step calib $(( BUDGET + 75 )) python3 tests/device/profiler_cost_h200.py "$RES/calib" --no-write --timeout 60 --budget "$BUDGET"
  cp "$RES/calib/calibration.json" "$RES/calib/profiler_cost.json" "$OUT_DIR/" 2>/dev/null
  rm -rf "$RES/calib/runs"
elif [ "$PART" = calib2 ]; then  # issue 30 item 1 alone: the profiler-cost calibration under a budget
  TAILN=60 step calib $(( ${CALIB_BUDGET:-470} + 75 )) python3 tests/device/profiler_cost_h200.py "$RES/calib" --no-write --timeout 60 --budget "${CALIB_BUDGET:-470}"
  cp "$RES/calib/calibration.json" "$RES/calib/profiler_cost.json" "$RES/calib/log.txt" "$OUT_DIR/" 2>/dev/null
  rm -rf "$RES/calib/runs"
elif [ "$PART" = validate ]; then  # issue 30 item 5 in one call: record, register (reports + plan), then the A/B
  T0=$(date +%s)
  TAILN=30 step fresh 240 python3 tests/device/validation_h200.py record "$RES/fresh"
  tar -czf "$OUT_DIR/fresh_a.tgz" -C "$RES/fresh/runs" wlm_lstm dcgan vae mnist 2>/dev/null
  tar -czf "$OUT_DIR/fresh_b.tgz" -C "$RES/fresh/runs" imagenet_r18 gat siamese mnist_rnn 2>/dev/null
  rm -f "$RES/fresh/fresh_runs.tgz"
  TAILN=40 step register 150 python3 benchmarks/register_validation.py "$RES/fresh/runs" "$RES/registered" tests/device/validation_plan_candidates.json
  tar -czf "$OUT_DIR/registered.tgz" -C "$RES" registered
  log "registered $(sha256sum "$RES/registered/registered.json" | cut -c1-16) before the A/B"
  cp "$RES/registered/plan.json" tests/device/validation_plan.json
  export AB_BUDGET=$(( ${AB_END:-470} - ($(date +%s) - T0) ))
  TAILN=60 step ab $(( AB_BUDGET + 90 )) python3 tests/device/validation_h200.py ab "$OUT_DIR/ab" tests/device/validation_plan.json
elif [ "$PART" = ab ]; then  # issue 30 item 5: the interleaved A/B of the registered loops (PLAN: tests/device/validation_plan.json)
  export AB_BUDGET=${AB_BUDGET:-450}
  TAILN=60 step ab 585 python3 tests/device/validation_h200.py ab "$RES/ab" tests/device/validation_plan.json
  cp "$RES/ab/ab.json" "$OUT_DIR/" 2>/dev/null
elif [ "$PART" = watch2 ]; then  # after the clock's memory sampling was made once a second
  step clock_parts 60 python3 tests/device/clock_parts.py
  step clock_small 70 python3 benchmarks/bench_step_clock.py --kind small --rounds 15 --block 200 --out "$RES/clock_small.json"
  step watch 170 python3 tests/device/watch_h200.py "$RES/watch"
  cp "$RES/watch/log.txt" "$RES/watch.log.txt" 2>/dev/null
  TAILN=16 step sigint_cuda 200 python3 benchmarks/stress_sigint_callbacks.py --cuda --trials 12 --seed 7
elif [ "$PART" = watch3 ]; then  # after the clock groups short steps under one CUDA event
  step clock_parts 60 python3 tests/device/clock_parts.py
  step clock_small 150 python3 benchmarks/bench_step_clock.py --kind small --rounds 300 --block 20 --out "$RES/clock_small.json"
  step clock_resnet 100 python3 benchmarks/bench_step_clock.py --kind resnet --rounds 40 --block 10 --warmup 20 --out "$RES/clock_resnet.json"
  step watch 170 python3 tests/device/watch_h200.py "$RES/watch"
  cp "$RES/watch/log.txt" "$RES/watch.log.txt" 2>/dev/null
else
  mkdir -p /tmp/raysite && tar -xJf .raypkg/ray-trim.tar.xz -C /tmp/raysite && export PYTHONPATH="$PYTHONPATH:/tmp/raysite"
  log "$(python3 -c 'import ray; print("ray", ray.__version__)' 2>&1 | tail -1)"
  TAILN=20 step ranks_nodes1 330 python3 benchmarks/bench_ranks_scaling.py --nodes 1 --out /tmp/ir1
  rm -rf /tmp/ir1
  TAILN=20 step ranks_nodes4 200 python3 benchmarks/bench_ranks_scaling.py --nodes 4 --ranks 64,256 --out /tmp/ir4
fi
tar -czf "$OUT_DIR/results.tgz" -C "$RES" .
