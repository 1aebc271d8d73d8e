#!/bin/sh
# Re-record the framework traces used by tests/test_frameworks.py (CPU, ~1 min). Run from the repository root.
set -e
S=tests/scripts/frameworks
T=$(mktemp -d)
export ACTIVE=2 PYTHONPATH=src
# keep NAME AS: the trace and its capture sidecar (exact user and library lines near idle points)
keep() {
  t=$(ls "$T"/"$1"/*/*.pt.trace.json.gz | head -1)
  cp "$t" "tests/traces/frameworks/$2.pt.trace.json.gz"
  cp "${t%.pt.trace.json.gz}.sidecar.json.gz" "tests/traces/frameworks/$2.sidecar.json.gz"
}
python $S/hf_trainer.py on callback "$T/hf_nan" && keep hf_nan hf_nan_filter_on
python $S/hf_trainer.py off callback "$T/hf_plain" && keep hf_plain hf_nan_filter_off
python $S/hf_trainer.py off callback "$T/hf_eval" eval && keep hf_eval hf_eval_steps
python $S/lightning_fit.py step callback "$T/pl_step" && keep pl_step lightning_log_on_step
python $S/lightning_fit.py epoch callback "$T/pl_epoch" && keep pl_epoch lightning_log_on_epoch
python $S/lightning_fit.py sync_dist callback "$T/pl_sd" && keep pl_sd lightning_sync_dist_on_step
python $S/lightning_fit.py sync_dist_epoch callback "$T/pl_sde" && keep pl_sde lightning_sync_dist_on_epoch
python $S/accelerate_loop.py tensor "$T/acc_tensor" && keep acc_tensor accelerate_tqdm_tensor
python $S/accelerate_loop.py number "$T/acc_number" && keep acc_number accelerate_tqdm_number
python $S/accelerate_loop.py gather "$T/acc_gather" && keep acc_gather accelerate_gather_each_step
python $S/accelerate_loop.py gather_epoch "$T/acc_gather_e" && keep acc_gather_e accelerate_gather_once
python $S/lightning_loader.py kwarg memory "$T/pl_mem" && keep pl_mem lightning_loader_kwarg_memory
python $S/lightning_loader.py kwarg slow "$T/pl_kw" && keep pl_kw lightning_loader_kwarg_slow
python $S/lightning_loader.py datamodule slow "$T/pl_dm" && keep pl_dm lightning_loader_datamodule_slow
python $S/lightning_loader.py hook slow "$T/pl_hook" && keep pl_hook lightning_loader_hook_slow
rm -rf "$T"
