#!/usr/bin/env bash
# Records the traces under tests/traces/ on a GPU machine: each planted-cause script under `idlehound run`,
# plus the built-in demo. Usage (from the repo root): bash tests/device/record_traces.sh OUTDIR [names...]
set -u
OUT_DIR=${1:?outdir}; shift
NAMES=${*:-"healthy item_gpu_bound sync_item dataloader_bound dataloader_workers pageable launch_bound fp32_math host_python cudnn_off memory_churn near_oom"}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
for name in $NAMES; do
  script="tests/scripts/planted/$name.py"; extra=()
  case $name in
    dataloader_workers) script=tests/scripts/planted/dataloader_bound.py; extra=(40 2) ;;
    memory_churn|near_oom) extra=(40) ;;
    *) extra=(40) ;;
  esac
  flags=(--skip 8 --warmup 2 --active 3 --stop-after)
  case $name in memory_churn|near_oom) flags+=(--memory) ;; esac
  case $name in dataloader_bound|dataloader_workers|cudnn_off) flags=(--skip 6 --warmup 2 --active 2 --stop-after) ;; esac
  start=$(date +%s.%N)
  python3 -m idlehound run --logdir "$OUT_DIR/$name" --name "$name" "${flags[@]}" "$script" "${extra[@]}" \
    > "$OUT_DIR/$name.out.txt" 2> "$OUT_DIR/$name.err.txt"
  echo "$name rc=$? $(echo "$(date +%s.%N) - $start" | bc 2>/dev/null || true)s"
done
