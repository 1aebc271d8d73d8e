"""`idlehound tune` on real small scripts (CPU): each variant in its own process, checked against the baseline."""

import json

import pytest

from idlehound.tune import _best, _Stack, check_losses
from idlehound.tune._candidates import Outcome, all_candidates

from . import _forkserver as forkserver
from .conftest import SCRIPTS, needs
from .tune_helpers import QUICK, tune_cli

pytestmark = needs("torch")

TUNE = SCRIPTS / "tune"
# data_bound.py's steps sleep 160 ms on one loader process, 80 ms on two: 6 timed steps show the 2x in each run
FAST = ["--skip", "3", "--steps", "6"]
# where a speed-up must come out faster: 3 to 5 rounds (this machine's run-to-run noise reaches tens of %)
TIGHT = ["--min-rounds", "3", "--max-rounds", "5"]


def _tune(tmp_path, script, *extra, options=QUICK):
    r = tune_cli(*options, "--json", "--logdir", tmp_path, *extra, TUNE / script)
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    return doc, {v["candidate"]: v for v in doc["variants"]}


@pytest.fixture(scope="module")
def data_bound(tmp_path_factory):
    """One diagnosed tune of data_bound.py that tries more workers, then a fused optimizer on top of them: the
    runs (and the baseline they share) that the two tests below check, made once."""
    out = tmp_path_factory.mktemp("data_bound")
    r = tune_cli(
        *FAST, *TIGHT, "--json", "--logdir", out, "--try", "workers2,fused_optimizer", TUNE / "data_bound.py"
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    return out, doc, {v["candidate"]: v for v in doc["variants"]}


@pytest.mark.slow
def test_data_bound_script_more_workers_win_with_equal_losses(data_bound):
    out, doc, v = data_bound
    assert "data_loading" in doc["diagnosed_causes"]
    w = v["workers2"]
    assert (
        w["status"] == "ok" and w["speedup"] > 1.3 and w["effect"] == "faster" and w["speedup_ci"][0] > 1.03
    )
    # the baseline: twice before the first round (the second opens it), once to open each later round and once
    # to close the last, then once more at the very end, after the fused optimizer's runs (timed against the
    # workers2 stack, not against the baseline) for the drift over the whole tune
    assert (
        3 <= w["rounds"] <= 5 and v["baseline"]["rounds"] == w["rounds"] + 3 and doc["drift_pct"] is not None
    )
    assert doc["diff_check"].startswith("ran:")
    assert w["loss_check"].startswith("bitwise equal: ok")
    # workers2 is the best unless the fused optimizer measured faster on top of it, when their stack is
    fused_won = v["fused_optimizer"]["effect"] == "faster"
    assert doc["best"]["candidate"] == ("fused_optimizer" if fused_won else "workers2")
    assert doc["best"]["settings"]["loader"]["num_workers"] == 2
    assert "num_workers=2" in doc["diff"] and doc["diff"].startswith("--- a/data_bound.py")
    assert (out / doc["run_dir"].split("/")[-1] / "tune.html").exists()
    assert doc["noise"]["loss_rel_diff"] == 0.0 and doc["noise"]["time_pct"] is not None


@pytest.mark.slow
def test_other_changes_are_measured_on_top_of_the_winning_loader(data_bound):
    _, _, v = data_bound
    w, f = v["workers2"], v["fused_optimizer"]
    assert w["status"] == "ok" and w["speedup"] > 1.3 and w["effect"] == "faster"
    assert f["on_top_of"] == "workers2" and f["settings"]["loader"]["num_workers"] == 2
    assert f["gain"] == pytest.approx(f["speedup"] / w["speedup"], rel=1e-2)
    # the stack's interval and the gain's combine: never narrower than the gain's own
    assert f["speedup_ci"][0] <= f["speedup"] <= f["speedup_ci"][1]
    assert f["speedup_ci"][1] / f["speedup_ci"][0] >= f["gain_ci"][1] / f["gain_ci"][0] * 0.999


@pytest.mark.slow
def test_random_augmentation_makes_workers_change_the_math_and_the_guard_rejects_it(tmp_path):
    # no diagnosis: the loss check is what this is about; a short run (6 steps) shows the divergence
    _, v = _tune(tmp_path, "random_aug.py", "--try", "workers2", "--no-diagnose")
    assert v["workers2"]["status"] == "rejected"
    assert "diverged at step" in v["workers2"]["reason"]


@pytest.mark.slow
def test_a_variant_that_crashes_is_reported_failed(tmp_path):
    doc, v = _tune(
        tmp_path,
        "crash_in_worker.py",
        "--try",
        "workers2,fused_optimizer",
        "--no-diagnose",
    )
    assert v["workers2"]["status"] == "failed" and "main process" in v["workers2"]["reason"]
    assert v["fused_optimizer"]["status"] == "ok"


@pytest.mark.slow
def test_no_dataloader_skips_loader_candidates_with_the_reason(tmp_path):
    _, v = _tune(
        tmp_path, "no_loader.py", "--try", "workers2,fused_optimizer", "--no-diagnose", options=QUICK
    )
    assert (
        v["workers2"]["status"] == "skipped" and v["workers2"]["reason"] == "the script builds no DataLoader"
    )
    assert v["fused_optimizer"]["status"] == "ok" and v["fused_optimizer"]["loss_check"].endswith(
        "ok (6 steps)"  # QUICK: 2 warm-up + 4 timed
    )
    (run,) = tmp_path.glob("*/baseline.1.json")  # each run records where its wall time went
    phases = json.loads(run.read_text())["phases_s"]
    steps = ["launch_to_main", "main_to_script", "script_to_first_step", "first_step_to_warm", "warm_to_end"]
    assert list(phases) == [*steps, "total"]
    assert all(phases[k] >= 0 for k in steps) and sum(phases[k] for k in steps) <= phases["total"]


def test_phases_name_the_time_between_the_milestones_a_run_reached():
    from idlehound.tune._child import phases

    clock = {"main": 10.5, "script": 12.0, "first_step": 15.0}  # it failed before warming up
    assert phases(clock, 10.0) == {"launch_to_main": 0.5, "main_to_script": 1.5, "script_to_first_step": 3.0}
    assert phases(clock, None) == {"main_to_script": 1.5, "script_to_first_step": 3.0}


def test_loss_check_rules():
    ref = [1.0, 0.9, 0.8]
    assert check_losses(ref, list(ref), "same", cuda=False)[0]
    assert not check_losses(ref, [1.0, 0.9, 0.8000001], "same", cuda=False)[0]
    assert check_losses(ref, [1.0, 0.9, 0.8000001], "same", cuda=True)[0]
    assert not check_losses(ref, [1.0, 0.9, 0.8001], "same", cuda=True)[0]
    assert check_losses(ref, [1.0, 0.9, 0.8001], "same", cuda=True, noise=1e-4)[0]  # twice the repeat's noise
    assert check_losses(ref, [1.02, 0.91, 0.79], "precision", cuda=True)[0]
    ok, _, why = check_losses(ref, [1.0, 0.9, 1.4], "precision", cuda=True)  # 3-step means 0.9 vs 1.1
    assert not ok and "diverged at step 2" in why
    assert not check_losses(ref, [1.0, float("nan"), 0.8], "precision", cuda=True)[0]


def test_precision_check_allows_drift_between_runs_but_not_a_curve_that_stops_learning():
    ref = [2.4 * 0.97**i for i in range(80)]
    drift = [x * (1 + 0.06 * (-1) ** i) for i, x in enumerate(ref)]  # single steps 6% off, the mean on course
    assert check_losses(ref, drift, "precision", cuda=True)[0]
    stuck = [max(x, 1.5) for x in ref]
    ok, _, why = check_losses(ref, stuck, "precision", cuda=True)
    assert not ok and why.startswith("10-step mean within 0.1 rel + 0.02: diverged at step")


@pytest.mark.slow
def test_blog_baseline_script_more_workers_keep_the_losses_bitwise(tmp_path, monkeypatch):
    """tune's child on the blog script as written and with workers2, compared as tune compares them (one run of
    each: a tune of its own would add the baseline's four reference runs and two rounds, which this does not
    check; the tune of data_bound.py above checks that machinery)."""
    from .tune_helpers import run_child

    script = SCRIPTS.parent.parent / "examples" / "train_resnet18_cifar10.py"
    monkeypatch.setenv("IDLEHOUND_CACHE", str(tmp_path))
    # the losses' bitwise match needs no big images: 16 px costs a quarter of 32 px
    args = ("--image-size", "16", "--batch-size", "4")
    workers2 = {c.name: c for c in all_candidates(2, cuda=False)}["workers2"].settings
    base = run_child(tmp_path / "base.json", script, {}, *args, steps=4)
    more = run_child(tmp_path / "w2.json", script, workers2, *args, steps=4)
    assert base["status"] == "ok" and more["status"] == "ok"
    assert more["loaders"][0]["num_workers"] == 2
    # the baseline warms up 4 steps, not 2: twice the batches its one worker holds in flight (prefetch 2)
    assert base["warmup_steps"] == 4 and len(base["losses"]) == 8
    assert check_losses(base["losses"], more["losses"], "same", cuda=False) == (
        True,
        0.0,
        "bitwise equal: ok (8 steps)",
    )


def _outcome(name, speedup, status="ok", effect=None):
    """An outcome whose interval over its reference says faster when it is 3% or more faster (as tune decides)."""
    effect = effect or ("faster" if speedup >= 1.03 else "no measurable effect")
    return Outcome(
        name, name, status=status, speedup=speedup, effect=effect, speedup_ci=[speedup * 0.99, speedup * 1.01]
    )


def test_stage_two_stacks_each_change_that_helped_on_top_of_the_fastest_accepted_loader():
    cands = {c.name: c for c in all_candidates(16, cuda=True)}
    stage1 = [cands["workers4"], cands["workers12"], cands["pin_memory"]]
    outs = [
        _outcome("workers4", 3.0),
        _outcome("workers12", 6.0, status="rejected"),
        _outcome("pin_memory", 1.01),
    ]
    stack = _Stack.start(_best(stage1, outs))
    assert stack.name == "workers4"  # the faster workers12 was rejected; pin_memory helped < 3%
    settings, math = stack.plus(cands["cuda_graphs"])
    assert settings == {**cands["workers4"].settings, "cuda_graphs": True} and math == "same"
    stack = stack.grown(cands["cuda_graphs"], _outcome("cuda_graphs", 4.5))
    stack = stack.grown(
        cands["fused_optimizer"], _outcome("fused_optimizer", 4.6, effect="no measurable effect")
    )
    settings, math = stack.plus(cands["bf16"])
    assert stack.name == "workers4 + cuda_graphs" and math == "precision"
    assert (
        settings["loader"]["num_workers"] == 4
        and settings["cuda_graphs"]
        and "fused_optimizer" not in settings
    )
    stack = stack.grown(cands["bf16"], _outcome("bf16", 9.0, status="rejected"))  # faster, but broke the math
    assert stack.name == "workers4 + cuda_graphs" and stack.outcome.speedup == 4.5
    assert (
        _Stack.start(_best(stage1, [_outcome(n, 1.0) for n in ("workers4", "workers12", "pin_memory")])).cands
        == ()
    )


def test_a_faster_stack_that_leaves_the_gpu_waiting_tries_the_next_larger_worker_count_in_place_of_its_own():
    from idlehound.tune import _more_workers

    cands = {c.name: c for c in all_candidates(16, cuda=True)}
    stage1 = [cands["workers4"], cands["workers8"], cands["workers12"]]
    stack = _Stack.start((cands["workers8"], _outcome("workers8", 3.0)))
    assert _more_workers(stack, stage1, cuda=True) == []  # stage 2 kept nothing: the sweep already said
    graphs = _outcome("cuda_graphs", 4.0)
    graphs.gpu_util = 60.0
    stack = stack.grown(cands["cuda_graphs"], graphs)
    (more,) = _more_workers(stack, stage1, cuda=True)
    settings, _ = stack.plus(more)
    assert more.name == "workers12" and settings["loader"]["num_workers"] == 12 and settings["cuda_graphs"]
    assert stack.grown(more, _outcome("workers12", 4.5)).name == "cuda_graphs + workers12"
    assert stack.grown(more, _outcome("workers12", 4.5, effect="slower")).name == "workers8 + cuda_graphs"
    graphs.gpu_util = 95.0  # the GPU sets the pace: more workers cannot help
    assert _more_workers(stack, stage1, cuda=True) == []


def test_stage_two_order_puts_host_side_changes_before_the_gpu_side_ones():
    names = [c.name for c in all_candidates(16, cuda=True) if not c.needs_loader]
    assert names.index("cuda_graphs") < names.index("tf32") and names.index("host_threads") < names.index(
        "bf16"
    )
    assert names.index("channels_last") < names.index("bf16")  # bf16 convolutions want NHWC
    assert names[-1] == "cudnn_benchmark"  # times the algorithms for the final layout and dtype


def test_choice_skips_pinned_copies_alone_when_the_worker_sweep_pins_and_builds_tried_worker_counts():
    from idlehound.tune import TuneOptions, _choose

    cands = all_candidates(16, cuda=True)
    base = {"loaders": [{"num_workers": 1}]}
    chosen, skipped = _choose(cands, {"data_loading"}, base, True, TuneOptions())
    assert [c.name for c in chosen][:3] == ["workers4", "workers8", "workers12"]
    assert [(o.candidate, o.reason) for o in skipped] == [
        ("pin_memory", "every num_workers candidate pins memory already")
    ]
    chosen, skipped = _choose(cands, set(), base, True, TuneOptions(try_=["workers6", "pin_memory", "bf16"]))
    assert [c.name for c in chosen] == ["pin_memory", "workers6", "bf16"] and skipped == []
    assert chosen[1].settings["loader"]["num_workers"] == 6


def test_the_worker_sweep_is_refined_between_the_best_and_its_neighbours():
    from idlehound.tune._candidates import refine_workers

    assert refine_workers([2, 4, 8, 12], 8, cores=16) == [6, 10]
    assert refine_workers([2, 4, 8, 12], 12, cores=16) == [10]
    assert refine_workers([2, 3], 2, cores=4) == []  # nothing between 2 and 3


AUTOCAST_PROBE = """
import torch
from idlehound.tune._child import _autocast_outer_forward

seen = {}
class Probe(torch.nn.Module):
    def __init__(self, name, params):
        super().__init__()
        self.name, self.lin = name, torch.nn.Linear(2, 2) if params else None
    def forward(self, x):
        seen[self.name] = torch.is_autocast_cpu_enabled()
        return self.lin(x) if self.lin is not None else x * 2

_autocast_outer_forward(torch.bfloat16)
y = Probe("model", True)(torch.ones(1, 2))
Probe("transform", False)(torch.ones(1, 2))
print(seen["model"], y.dtype, seen["transform"], torch.is_autocast_cpu_enabled())
"""


@pytest.mark.slow
def test_bf16_autocast_wraps_the_model_but_not_parameterless_modules_such_as_transforms():
    out = forkserver.run([], code=AUTOCAST_PROBE, check=True)
    assert out.stdout.split() == ["True", "torch.bfloat16", "False", "False"]


def test_loader_choice_prefers_more_workers_among_those_that_measure_alike():
    cands = {c.name: c for c in all_candidates(16, cuda=True)}
    stage1 = [cands["workers4"], cands["workers8"], cands["workers12"]]
    outs = [_outcome("workers4", 3.27), _outcome("workers8", 3.24), _outcome("workers12", 2.9)]
    assert _best(stage1, outs)[0].name == "workers8"  # 1% slower than workers4: within the tie
    assert _best(stage1, outs, tie=0.0)[0].name == "workers4"


def test_diff_adds_non_blocking_to_the_batch_copies_of_the_blog_script():
    from idlehound.tune._diff import make_diff

    script = SCRIPTS.parent.parent / "examples" / "train_resnet18_cifar10.py"
    cand = {c.name: c for c in all_candidates(16, cuda=True)}["workers8"]
    diff, snippets = make_diff(script, cand.settings)
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert added == [
        '+parser.add_argument("--workers", type=int, default=8)',
        "+loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, shuffle=True, "
        "num_workers=args.workers, persistent_workers=args.workers > 0, pin_memory=True, "
        "prefetch_factor=4 if args.workers > 0 else None)",
        "+        inputs, labels = inputs.to(device, non_blocking=True), labels.to(device, non_blocking=True)",
    ]
    assert snippets == [
        "# num_workers: the default of the script's own --workers flag is now 8; --workers still overrides it"
    ]


NON_BLOCKING_PROBE = """
import torch
from idlehound.tune import _child

seen = []
plain_to = torch.Tensor.to
def recording_to(self, *args, **kwargs):
    seen.append(kwargs.get("non_blocking"))
    return plain_to(self, *args, **kwargs)
torch.Tensor.to = recording_to
torch.Tensor.is_pinned = lambda self: True  # stands in for the loader's pinned buffers (no GPU here)
_child._async_batch_copies()
data = torch.utils.data.TensorDataset(torch.ones(4, 2), torch.zeros(4))
for x, y in torch.utils.data.DataLoader(data, batch_size=2):
    x.to("cpu"); y.to("cpu", non_blocking=False); (x * 2).to("cpu")
print(seen)
"""


@pytest.mark.slow
def test_non_blocking_is_added_only_to_batch_tensors_the_script_left_unspecified():
    out = forkserver.run([], code=NON_BLOCKING_PROBE, check=True)
    assert out.stdout.strip() == str([True, False, None] * 2)


def test_a_change_that_is_not_measurably_faster_is_never_the_best(tmp_path):
    from idlehound.report.tune import best_line, rows
    from idlehound.tune import TuneOptions, _document

    script = tmp_path / "train.py"
    script.write_text("import torch\nloader = torch.utils.data.DataLoader(range(8))\n")
    base = Outcome("baseline", "as written", speedup=1.0)
    # DCGAN on 2 cores: 2 workers made the step 4.3x slower, with the losses equal
    slow = Outcome(
        "workers2",
        "workers",
        speedup=0.23,
        speedup_ci=[0.21, 0.25],
        effect="slower",
        settings={"loader": {"num_workers": 2}},
    )
    doc = _document(str(script), TuneOptions(), set(), [base, slow], tmp_path, {})
    assert doc.best is None and doc.diff == ""
    assert rows(doc)[1][-1] == "slower: not kept" and best_line(doc).startswith(
        "No change was measurably faster"
    )
    loader = Outcome(
        "workers8",
        "workers",
        speedup=3.0,
        speedup_ci=[2.8, 3.2],
        effect="faster",
        settings={"loader": {"num_workers": 8}},
    )
    noise = Outcome(
        "tf32",
        "tf32",
        speedup=3.05,
        speedup_ci=[2.7, 3.4],
        gain=1.017,
        gain_ci=[0.95, 1.09],
        effect="no measurable effect",
        on_top_of="workers8",
        settings={"loader": {"num_workers": 8}, "tf32": True},
    )
    doc = _document(str(script), TuneOptions(), set(), [base, loader, noise], tmp_path, {})
    assert doc.best.candidate == "workers8" and "allow_tf32" not in doc.diff
    assert [r[-1] for r in rows(doc)] == ["baseline", "accepted", "no measurable effect"]
    assert best_line(doc).startswith("Best safe change: workers — 3.00× faster (95% interval 2.80–3.20×)")
    noise.gain, noise.gain_ci, noise.effect = 1.2, [1.1, 1.3], "faster"
    doc = _document(str(script), TuneOptions(), set(), [base, loader, noise], tmp_path, {})
    assert doc.best.candidate == "tf32" and "allow_tf32 = True" in doc.diff


GRAPH_PROBE = """
import copy

import torch
from idlehound.tune._child import Recorder, _graph_first_model

calls = []
def fake_make_graphed(module, sample):  # what make_graphed_callables does to a module, without a GPU
    for _ in range(3):  # its warm-up runs move BatchNorm's statistics
        module(*sample).sum().backward()
    own = module.forward
    def replay(*a):
        calls.append("graph")
        return own(*a)
    module.forward = replay
    return module

rec = Recorder(skip=1, steps=1)
_graph_first_model(rec, make_graphed=fake_make_graphed)
torch.manual_seed(0)
transform = torch.nn.Identity()
model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
untouched = copy.deepcopy(model)
transform(torch.ones(2))  # no parameters: not the model
x = torch.randn(8, 4)
model(x)  # the first call records, and runs eagerly
untouched(x)
print(torch.equal(model[1].running_mean, untouched[1].running_mean), int(model[1].num_batches_tracked))
model(torch.randn(8, 4))
model(torch.randn(3, 4))  # another batch size
with torch.no_grad():
    model(torch.randn(8, 4))
model.eval(); model(torch.randn(8, 4)); model.train()
print(calls, rec.graphed_inputs)
"""


@pytest.mark.slow
def test_cuda_graph_recording_keeps_the_statistics_and_replays_only_calls_shaped_like_the_recorded_one():
    out = forkserver.run([], code=GRAPH_PROBE)
    assert out.returncode == 0, out.stderr
    first, second = out.stdout.strip().splitlines()
    assert first == "True 1"  # the warm-up's three updates were undone; the script's own call counted once
    assert second == "['graph'] [{'shape': [8, 4], 'dtype': 'float32'}]"


def test_diff_records_the_model_as_cuda_graphs_after_its_optimizer_with_whole_batches():
    from idlehound.tune._diff import make_diff

    script = SCRIPTS.parent.parent / "examples" / "train_resnet18_cifar10.py"
    cands = {c.name: c for c in all_candidates(16, cuda=True)}
    settings, _ = _Stack((cands["workers8"],)).plus(cands["cuda_graphs"])
    diff, snippets = make_diff(script, settings, [{"shape": [32, 3, 224, 224], "dtype": "float32"}])
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert "drop_last=True" in added[1] and added[1].startswith("+loader = torch.utils.data.DataLoader(")
    assert (
        added[-2] == "+model = torch.cuda.make_graphed_callables(model, (torch.zeros(32, 3, 224, 224, "
        "device='cuda'),))"
    )
    assert diff.index("make_graphed_callables") > diff.index("optimizer = torch.optim.SGD")
    assert snippets == [
        "# num_workers: the default of the script's own --workers flag is now 8; --workers still overrides it"
    ]
    diff, _ = make_diff(
        script, {**settings, "channels_last": True}, [{"shape": [32, 3, 224, 224], "dtype": "float32"}]
    )
    added = [ln for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    assert (
        added[2] == "+model = model.to(memory_format=torch.channels_last)  # idlehound tune"
    )  # before recording
    _, snippets = make_diff(script, {"cuda_graphs": True})  # shapes not known: a snippet instead
    assert "make_graphed_callables(model, (torch.zeros(batch, ..." in snippets[0]


CHANNELS_LAST_PROBE = """
import torch
from idlehound.tune._child import Recorder, apply

apply({"channels_last": True}, Recorder(skip=1, steps=1))
frozen = torch.nn.Conv2d(3, 4, 3).eval()
model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4))
weight = model[0].weight
frozen(torch.ones(1, 3, 8, 8))  # eval mode: not the model being trained
model(torch.ones(2, 3, 8, 8))
cl = torch.channels_last
print(model[0].weight.is_contiguous(memory_format=cl), model[0].weight is weight,
      frozen.weight.is_contiguous(memory_format=cl))
"""


@pytest.mark.slow
def test_channels_last_converts_the_trained_model_in_place_at_its_first_call():
    out = forkserver.run([], code=CHANNELS_LAST_PROBE)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "True", "False"]  # the optimizer keeps the same parameter objects


MEASURED = SCRIPTS.parent.parent / "docs" / "measurements"


def _markdown_rows(md: str) -> list[list[str]]:
    """The cells of the markdown table's body rows (the header is the first row starting with '| ')."""
    lines = [ln for ln in md.splitlines() if ln.startswith("| ")]
    return [[c.strip() for c in ln[2:-2].split(" | ")] for ln in lines[1:]]


def _expected_row(v: dict) -> list[str]:
    """A schema-1 row as the recorded figures say it should read, formatted here independently of the renderer."""

    def num(x, spec, unit=""):
        return "—" if x is None else format(x, spec) + unit

    label = v["label"] + (f" (+ {v['on_top_of']})" if v["on_top_of"] else "")
    verdict = (
        "baseline"
        if v["candidate"] == "baseline"
        else {"ok": "accepted"}.get(v["status"], v["status"]) + (f": {v['reason']}" if v["reason"] else "")
    )
    return [
        label,
        num(v["samples_per_s"], ",.0f"),
        num(v["steps_per_s"], ".2f"),
        num(v["speedup"], ".2f", "×"),
        num(v["gain"], ".2f", "×"),
        num(v["gpu_util"], ".0f", "%"),
        v["loss_check"],
        verdict,
    ]


@pytest.mark.parametrize("run", ["tune-h200-a", "tune-h200-b"])
def test_a_tune_recorded_on_the_h200_renders_and_diffs_the_same_here(run):
    from idlehound.report.tune import rows, tune_html, tune_markdown
    from idlehound.tune._diff import make_diff

    doc = json.loads((MEASURED / f"{run}.json").read_text())
    md = tune_markdown(doc)
    assert _markdown_rows(md) == [_expected_row(v) for v in doc["variants"]]
    best = doc["best"]
    assert f"Best safe change: {best['label']} — {best['speedup']:.2f}× faster" in md
    assert f"step time {doc['noise']['time_pct']:.1f}%" in md
    assert "```diff\n" + doc["diff"].rstrip() + "\n```" in md
    html = tune_html(doc)
    assert all(
        r[1] in html and r[3] in html for r in rows(doc)
    )  # the same samples/s and speed-up as the terminal
    best = doc["best"]
    assert best["graphed_inputs"] == [{"shape": [32, 3, 224, 224], "dtype": "float32"}]
    script = SCRIPTS.parent.parent / "examples" / "train_resnet18_cifar10.py"
    diff = make_diff(script, best["settings"], best["graphed_inputs"])[0]
    # the same change, except that the worker count now goes to the default of the script's own --workers flag
    # (these documents hard-coded it over the flag) and the options that need workers follow that flag
    n = best["settings"]["loader"]["num_workers"]
    assert f'+parser.add_argument("--workers", type=int, default={n})' in diff.splitlines()
    assert "persistent_workers=args.workers > 0" in diff and f"num_workers={n}," not in diff

    def body(d):
        return [
            ln for ln in d.splitlines() if ln[:1] in "+-" and "DataLoader" not in ln and "--workers" not in ln
        ]

    assert body(diff) == body(doc["diff"])
