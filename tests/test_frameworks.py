"""Framework knowledge table: each entry recognised on a recorded trace and not on its control.

The traces are tiny CPU runs of tests/scripts/frameworks/ (re-record with tests/traces/frameworks/record.sh).
On a CPU trace the sync points are the scalar-read ops (aten::_local_scalar_dense under .item(), `if tensor:`,
formatting); on a GPU the same ops wait for the GPU.
"""

import subprocess
import sys

import pytest

import idlehound
from idlehound.diagnose.frameworks import ENTRIES, annotate, find_matches, match_stack, sync_stacks

from .conftest import ROOT, SCRIPTS, TRACES, shared

FW = TRACES / "frameworks"
# entry -> (recording where the framework causes the sync, control: same run with the framework's fix applied)
CASES = {
    "hf_nan_inf_filter": ("hf_nan_filter_on", "hf_nan_filter_off"),
    "hf_eval_in_loop": ("hf_eval_steps", "hf_nan_filter_off"),
    "lightning_step_log": ("lightning_log_on_step", "lightning_log_on_epoch"),
    "lightning_sync_dist": ("lightning_sync_dist_on_step", "lightning_sync_dist_on_epoch"),
    "tqdm_tensor_postfix": ("accelerate_tqdm_tensor", "accelerate_tqdm_number"),
    "accelerate_gather_each_step": ("accelerate_gather_each_step", "accelerate_gather_once"),
}


def analysis(name: str):
    return idlehound.analyze(idlehound.load_trace(FW / f"{name}.pt.trace.json.gz"))


def test_every_table_entry_has_a_recording_and_a_control():
    assert set(CASES) == {e.name for e in ENTRIES}


@pytest.mark.parametrize("entry", sorted(CASES))
def test_entry_recognised_on_recording_not_on_control(entry):
    problem, control = CASES[entry]
    assert entry in {m.entry.name for m in find_matches(analysis(problem))}
    assert entry not in {m.entry.name for m in find_matches(analysis(control))}


def test_nan_filter_finding_names_library_function_and_setting():
    a = analysis("hf_nan_filter_on")
    (f,) = [f for f in idlehound.diagnose(a) if f.cause == "framework_sync"]
    assert f.kind == "risk" and "logging_nan_inf_filter=False" in f.code
    top = f.details["framework"][0]
    assert top["entry"] == "hf_nan_inf_filter"
    assert top["library"]["file"].endswith("transformers/trainer.py")
    assert top["library"]["function"] in ("_run_epoch", "_inner_training_loop")
    assert top["count_per_step"] == 2  # `torch.isnan(loss) or torch.isinf(loss)`: two host reads per step
    assert top["user"]["file"] == "hf_trainer.py"  # the user's line that reached it
    assert not [f for f in idlehound.diagnose(analysis("hf_nan_filter_off")) if f.cause == "framework_sync"]


def test_only_the_innermost_library_frame_counts_for_the_trainer_loop():
    """The control run reads scalars under trainer.py's loop too (the fused optimizer), deeper down: no match."""
    a = analysis("hf_nan_filter_off")
    smap, points = sync_stacks(a)
    stacks = []
    for _, _, k in points:
        names = []
        while k >= 0:
            names.append(smap.name(k))
            k = int(smap.parent[k])
        stacks.append(names)
    under_loop = [s for s in stacks if any("transformers/trainer.py" in n and "_run_epoch" in n for n in s)]
    assert under_loop
    assert all(match_stack(s) is None for s in under_loop)


def test_gpu_trace_without_framework_keeps_generic_sync_finding():
    a = idlehound.analyze(idlehound.load_trace(shared("h200_torch211_sync.pt.trace.json.gz")))
    assert sync_stacks(a)[1]  # the GPU trace has sync points...
    assert find_matches(a) == []  # ...none from a framework
    (sync,) = [f for f in idlehound.diagnose(a) if f.cause == "sync"]
    assert "framework" not in sync.details and sync.title == "CPU-GPU sync points in the loop"


def test_sync_finding_takes_the_framework_fix():
    """A GPU sync finding whose reads come from the Trainer's check: the fix becomes the Trainer setting and the
    generic one is kept in details."""
    gpu = idlehound.analyze(idlehound.load_trace(shared("h200_torch211_sync.pt.trace.json.gz")))
    (sync,) = [f for f in idlehound.diagnose(gpu) if f.cause == "sync"]
    generic = sync.fix
    (named,) = annotate(analysis("hf_nan_filter_on"), [sync])
    assert named.code == "args = TrainingArguments(..., logging_nan_inf_filter=False)"
    assert named.details["generic_fix"]["fix"] == generic
    assert any("transformers/trainer.py" in e for e in named.evidence)
    # a new finding: the one given is left as it was (findings are frozen)
    assert sync.fix == generic and "generic_fix" not in sync.details
    assert not any("transformers/trainer.py" in e for e in sync.evidence)


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.slow
def test_idlehound_imports_no_framework():
    r = _python(
        "import sys, idlehound, idlehound.integrations, idlehound.diagnose.frameworks\n"
        "print(sorted(m for m in ('transformers', 'lightning', 'pytorch_lightning', 'accelerate')"
        " if m in sys.modules))"
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.parametrize(
    "module,blocked,hint",
    [
        ("transformers", ["transformers"], "pip install transformers"),
        ("lightning", ["lightning", "lightning.pytorch", "pytorch_lightning"], "pip install lightning"),
    ],
)
def test_missing_framework_gives_helpful_import_error(module, blocked, hint):
    r = _python(
        "import sys\n"
        + "".join(f"sys.modules[{b!r}] = None\n" for b in blocked)
        + f"try:\n    import idlehound.integrations.{module}\nexcept ImportError as e:\n    print(e)\n"
    )
    assert r.returncode == 0, r.stderr
    assert hint in r.stdout


def test_lightning_logging_finding_points_at_the_self_log_call_not_the_fit_call():
    """The reads happen later, in Lightning's loop under trainer.fit(): the line to change is the self.log(...)
    in training_step (issue 32 item 14)."""
    a = analysis("lightning_log_on_step")
    (f,) = [f for f in idlehound.diagnose(a) if f.cause == "framework_sync"]
    source = (SCRIPTS / "frameworks" / "lightning_fit.py").read_text().splitlines()
    assert f.location is not None and f.location.file == "lightning_fit.py"
    assert source[f.location.line - 1].strip().startswith('self.log("train_loss"')
    assert f.details["framework"][0]["user"]["line"] == f.location.line


@pytest.mark.slow  # imports lightning and transformers
def test_each_framework_module_points_at_tune_changes_candidates_and_a_callback_that_exist():
    """A framework module names its tune changes, candidates and callback (they live in layers above diagnose):
    each name resolves, and every framework candidate of tune belongs to exactly one framework module."""
    import importlib

    from idlehound.diagnose.frameworks import FRAMEWORKS
    from idlehound.tune._candidates import framework_candidates
    from idlehound.tune._changes import CHANGES

    cands = {c.name: c for c in framework_candidates(8, True)}
    named = [n for fw in FRAMEWORKS for n in fw.tune_candidates]
    assert sorted(named) == sorted(cands)
    for fw in FRAMEWORKS:
        assert set(fw.tune_changes) <= set(CHANGES), fw.name
        assert all(cands[n].framework == fw.name for n in fw.tune_candidates)
        assert all(e.framework == fw.name for e in fw.entries) and all(
            s.framework == fw.name for s in fw.settings
        )
        if fw.callback:
            module, _, name = fw.callback.partition(":")
            pytest.importorskip(fw.name if fw.name != "accelerate" else "torch")
            assert callable(getattr(importlib.import_module(module), name))
        assert not fw.docs or (ROOT / fw.docs).is_file()
