"""tune on the shapes of scripts people write: loader options in **kwargs dicts and flags, diffs that must run,
short scripts, scripts that read stdin or start slowly, candidates that would change nothing (CPU)."""

import ast
import json
import os
import re
import subprocess
import sys

import pytest

from idlehound.report.model import as_data
from idlehound.tune import TuneOptions, _document, _runs_changed
from idlehound.tune._candidates import Outcome, all_candidates, not_applicable
from idlehound.tune._diff import changed_source, make_diff

from . import _forkserver as forkserver
from .conftest import ROOT, SCRIPTS, needs
from .tune_helpers import QUICK, tune_cli

pytestmark = [pytest.mark.slow, needs("torch")]  # tune runs and tune children

TUNE = SCRIPTS / "tune"
WORKERS2 = {c.name: c for c in all_candidates(2, cuda=False)}["workers2"].settings


def _added(diff):
    return [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


def _loader_keywords(source):
    """Keyword names of each DataLoader call (a name passed twice shows twice)."""
    calls = [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "DataLoader"
    ]
    return [[k.arg for k in c.keywords] for c in calls]


def test_loader_options_passed_as_kwargs_are_set_in_the_dict_and_the_flag_keeps_its_word():
    script = TUNE / "kwargs_loader.py"
    diff, snippets = make_diff(script, WORKERS2)
    added = _added(diff)
    assert 'loader_kwargs = {"num_workers": 2, "shuffle": True}' in added  # edited where the script sets it
    assert (
        'train_kwargs = {"batch_size": args.batch_size, "persistent_workers": True, "pin_memory": False, '
        '"prefetch_factor": 4}' in added
    )
    assert (
        'parser.add_argument("-j", "--workers", type=int, default=2, help="loader workers of the test loader")'
        in added
    )  # the script's own flag: its default changes, not hard-coded over it
    assert any(
        "persistent_workers=args.workers > 0" in ln and "4 if args.workers > 0 else None" in ln
        for ln in added
    )  # `--workers 0` still runs
    assert snippets == [
        "# num_workers: the default of the script's own --workers flag is now 2; --workers still overrides it"
    ]
    new, _ = changed_source(script.read_text(), WORKERS2)
    for keywords in _loader_keywords(new):
        assert len(keywords) == len(set(keywords))


def test_the_diffs_apply_with_patch_dry_run(tmp_path):
    for name in ("kwargs_loader.py", "data_bound.py"):
        diff, _ = make_diff(TUNE / name, WORKERS2)
        (tmp_path / name).write_text((TUNE / name).read_text())
        (tmp_path / "d.patch").write_text(diff)
        r = subprocess.run(
            ["patch", "--dry-run", "-p1", "-i", "d.patch"], cwd=tmp_path, capture_output=True, text=True
        )
        assert r.returncode == 0, r.stdout + r.stderr


def test_the_blog_script_keeps_its_workers_flag_and_gets_its_default_changed():
    diff, _ = make_diff(ROOT / "examples" / "train_resnet18_cifar10.py", {"loader": {"num_workers": 8}})
    assert _added(diff) == ['parser.add_argument("--workers", type=int, default=8)']


def test_a_changed_script_is_run_before_its_diff_is_shown(tmp_path, forked_children):
    opts = TuneOptions(timeout_s=300)
    good, _ = changed_source((TUNE / "kwargs_loader.py").read_text(), WORKERS2)
    assert _runs_changed(str(TUNE / "kwargs_loader.py"), [], opts, tmp_path, good) == ""
    assert "does not parse" in _runs_changed(str(TUNE / "kwargs_loader.py"), [], opts, tmp_path, good + "\n)")
    # a helper's **kw already holds num_workers: the options are merged into it at the call (issue 32)
    script = TUNE / "helper_kwargs.py"
    base = Outcome("baseline", "as written", speedup=1.0)
    win = Outcome(
        "workers2", "workers", speedup=2.0, speedup_ci=[1.8, 2.2], effect="faster", settings=WORKERS2
    )

    def document(check):  # the document as its JSON reads (run_tune builds the typed Struct)
        return as_data(_document(str(script), opts, set(), [base, win], tmp_path, {}, check=check))

    doc = document(lambda new: _runs_changed(str(script), [], opts, tmp_path, new))
    assert doc["diff_check"].startswith("ran:")
    assert "+    return torch.utils.data.DataLoader(dataset, **{**kw, " in doc["diff"]
    # an edit that passes num_workers twice fails when run, and its diff is not shown
    twice = lambda new: _runs_changed(  # noqa: E731
        str(script),
        [],
        opts,
        tmp_path,
        new.replace("(dataset, **{**kw,", "(dataset, num_workers=2, **{**kw,"),
    )
    doc = document(twice)
    assert doc["best"]["candidate"] == "workers2" and doc["diff"] == ""
    assert doc["diff_check"].startswith("failed: failed when run: TypeError")
    assert "multiple values for keyword argument 'num_workers'" in doc["diff_check"]
    assert "the diff was not shown" in doc["snippets"][0] and "num_workers" in doc["snippets"][0]


def _child(tmp_path, script, settings, skip, steps, *args):
    """`python -m idlehound.tune._child ...`, as a fork of the tests' torch-loaded interpreter."""
    out = tmp_path / "r.json"
    argv = [out, json.dumps(settings), skip, steps, script, *args]
    forkserver.run(argv, module="idlehound.tune._child", timeout=300, check=True)
    return json.loads(out.read_text())


def test_a_raised_warm_up_that_does_not_fit_a_short_script_is_cut_to_fit_and_says_so(tmp_path):
    r = _child(tmp_path, TUNE / "short_loader.py", WORKERS2, 3, 10)  # 2 workers x prefetch 4: warm-up 16
    assert r["status"] == "ok" and r["optimizer_steps"] == 20 and r["steps_timed"] == 10
    assert r["warmup_steps"] == 10
    assert r["warmup_note"] == (
        "warm-up 10 steps, not 16 (twice the 8 batches its loader holds in flight): the "
        "script made only 20 optimizer steps"
    )
    r = _child(tmp_path, TUNE / "short_loader.py", WORKERS2, 3, 18)
    assert r["status"] == "short" and "fewer than --skip 3 + --steps 18" in r["error"]


def test_candidates_that_would_change_nothing_are_found_from_the_baselines_facts(tmp_path):
    facts = _child(tmp_path, TUNE / "already_foreach.py", {}, 2, 3)["facts"]
    assert facts["weights_4d"] == 0 and facts["convolutions"] == 0 and facts["optimizer_fused_or_foreach"]
    cands = {c.name: c for c in all_candidates(16, cuda=True)}
    assert not_applicable(cands["channels_last"], facts) == "the model has no 4-D weights"
    assert not_applicable(cands["cudnn_benchmark"], facts) == "the model has no convolutions"
    assert (
        not_applicable(cands["fused_optimizer"], facts)
        == "the script's optimizer is fused or foreach already"
    )
    assert not_applicable(cands["bf16"], facts) == "" and not_applicable(cands["tf32"], facts) == ""
    conv = _child(tmp_path, TUNE / "conv_net.py", {}, 2, 3)["facts"]
    assert conv["weights_4d"] == 2 and conv["convolutions"] == 2 and conv["cudnn_benchmark"]
    assert not_applicable(cands["channels_last"], conv) == ""
    assert not_applicable(cands["cudnn_benchmark"], conv) == "the script sets cudnn.benchmark already"


def _tune(tmp_path, *args, stdin=subprocess.DEVNULL, timeout=600):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "idlehound",
            "tune",
            *QUICK,
            "--logdir",
            str(tmp_path),
            *map(str, args),
        ],
        env=env,
        capture_output=True,
        text=True,
        stdin=stdin,
        timeout=timeout,
    )


def test_a_no_op_candidate_is_not_applicable_and_not_timed(tmp_path):
    r = tune_cli(
        *QUICK,
        "--logdir",
        tmp_path,
        "--json",
        "--no-diagnose",
        "--try",
        "fused_optimizer",
        TUNE / "already_foreach.py",
    )
    assert r.returncode == 0, r.stderr[-2000:]
    doc = json.loads(r.stdout)
    v = {x["candidate"]: x for x in doc["variants"]}
    assert v["fused_optimizer"]["status"] == "not applicable" and v["fused_optimizer"]["speedup"] is None
    assert not list((tmp_path / doc["run_dir"].split("/")[-1]).glob("fused_optimizer*.json"))
    assert doc["best"] is None and doc["diff"] == ""


def test_a_script_that_reads_stdin_gets_none_and_a_slow_child_hits_the_child_timeout(tmp_path):
    # stdin left open and never written: a child that inherited it would wait for ever
    r = _tune(tmp_path, "--no-diagnose", TUNE / "reads_stdin.py", stdin=subprocess.PIPE, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    # the child's timeout, with the child a fork (tune_cli): a timed-out fork's group is killed as a process's is
    r = tune_cli(
        *QUICK, "--logdir", tmp_path, "--no-diagnose", "--child-timeout", "3", TUNE / "reads_stdin.py", "60"
    )
    assert r.returncode == 2
    assert "did not finish within --child-timeout 3 s" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("width", [80, 100])
def test_the_terminal_table_fits_a_normal_terminal_without_cropping_a_word(tmp_path, width):
    from rich.console import Console

    from idlehound.report.tune import render_tune

    script = TUNE / "data_bound.py"
    base = Outcome("baseline", "the script as written", speedup=1.0, steps_per_s=7.01, rounds=4)
    win = Outcome(
        "workers2",
        "DataLoader num_workers=2, persistent",
        speedup=2.562,
        speedup_ci=[1.049, 6.257],
        effect="faster",
        steps_per_s=30.41,
        rounds=5,
        settings=WORKERS2,
        loss_check="bitwise equal: ok (13 steps)",
        warmup_note="warm-up raised from --skip 3 to 16 steps: twice the 8 batches its loader holds",
    )
    idle = Outcome(
        "channels_last",
        "the model's weights in channels_last memory format",
        status="not applicable",
        reason="the model has no 4-D weights",
    )
    on_top = Outcome(
        "fused_optimizer",
        "fused / foreach optimizer",
        speedup=2.6,
        speedup_ci=[0.5, 9.0],
        gain=1.01,
        gain_ci=[0.2, 5.0],
        effect="no measurable effect",
        on_top_of="workers2",
    )
    doc = _document(str(script), TuneOptions(), set(), [base, win, idle, on_top], tmp_path, {}, -12.5)
    recorded = json.loads((ROOT / "docs" / "measurements" / "tune-h200-a.json").read_text())
    for d in (doc, recorded):
        console = Console(width=width, record=True, color_system=None)
        render_tune(d, console)
        text = console.export_text()
        table = re.split(r"\n  [a-z_0-9]+: ", text)[0]  # the table, before the legend of short names
        assert "…" not in table
        header = next(ln for ln in table.splitlines() if "change" in ln)
        assert header.split() == ["change", "steps/s", "speed-up", "95%", "CI", "gain", "GPU", "verdict"]
        assert all(len(ln) <= width for ln in table.splitlines())
    assert "no measurable effect" in text or "accepted" in text
