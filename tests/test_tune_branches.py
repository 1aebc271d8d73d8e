"""tune's loader diff holds on every branch the script takes (issue 32, item 11): options filled into **kwargs only
with an accelerator, the worker count from `int(opt.workers)`; and the branch check finds an edit that breaks
one branch (shapes of pytorch/examples' MNIST family and DCGAN, as small scripts of our own)."""

import ast
import json

import pytest

from idlehound.tune._candidates import all_candidates
from idlehound.tune._diff import changed_source

from . import _forkserver as forkserver
from .conftest import SCRIPTS, needs

pytestmark = needs("torch")

TUNE = SCRIPTS / "tune"
WORKERS2 = {c.name: c for c in all_candidates(2, cuda=True)}["workers2"].settings
MERGED = '"num_workers": 2, "persistent_workers": True, "pin_memory": True, "prefetch_factor": 4}'


def _loader_calls(source):
    return [
        n
        for n in ast.walk(ast.parse(source))
        if isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) == "DataLoader"
    ]


def test_options_for_a_dict_filled_only_with_an_accelerator_are_merged_at_the_call():
    source = (TUNE / "accel_ifexp_kwargs.py").read_text()
    new, _ = changed_source(source, WORKERS2)
    assert 'extra = {"num_workers": 1, "pin_memory": True} if use_accel else {}' in new  # left as written
    for call in _loader_calls(new):
        assert [k.arg for k in call.keywords][:2] == ["batch_size", "shuffle"]  # nothing added beside **
        assert ast.get_source_segment(new, call).endswith("**{**extra, " + MERGED + ")")


def test_options_updated_in_under_an_if_are_merged_at_the_call_not_put_in_the_base_dict():
    source = (TUNE / "accel_update_kwargs.py").read_text()
    new, _ = changed_source(source, WORKERS2)
    assert 'train_kwargs = {"batch_size": 32}' in new and 'test_kwargs = {"batch_size": 256}' in new
    assert '"num_workers": 1, "persistent_workers": True' in new  # the accelerator's own dict unchanged
    assert "DataLoader(data, **{**train_kwargs, " + MERGED + ")" in new
    assert "DataLoader(data, **{**test_kwargs, " + MERGED + ")" in new


def test_a_dict_filled_on_every_path_is_still_edited_where_it_is_written():
    source = (TUNE / "kwargs_loader.py").read_text()
    new, _ = changed_source(source, WORKERS2)
    assert 'loader_kwargs = {"num_workers": 2, "shuffle": True}' in new and "**{**" not in new


def test_int_of_the_workers_flag_is_kept_and_the_options_that_need_workers_follow_it():
    source = (TUNE / "int_workers_flag.py").read_text()
    new, snippets = changed_source(source, WORKERS2)
    assert (
        'parser.add_argument("--workers", type=int, help="number of data loading workers", default=2)' in new
    )
    (call,) = _loader_calls(new)
    kw = {k.arg: ast.get_source_segment(new, k.value) for k in call.keywords}
    assert kw["num_workers"] == "int(opt.workers)"
    assert kw["persistent_workers"] == "int(opt.workers) > 0"
    assert kw["prefetch_factor"] == "4 if int(opt.workers) > 0 else None"
    assert any("--workers flag is now 2" in s for s in snippets)


def _branch(tmp_path, script, branch, *args):
    """`python -m idlehound.tune._branches ...`, as a fork of the tests' torch-loaded interpreter."""
    out = tmp_path / f"{branch}.json"
    argv = [out, branch, script, *args]
    forkserver.run(argv, module="idlehound.tune._branches", timeout=120, cwd=tmp_path)
    return json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    "name,on,off",
    [
        ("accel_ifexp_kwargs.py", [], ["--no-accel"]),
        ("accel_update_kwargs.py", [], ["--no-accel"]),
        ("int_workers_flag.py", ["--accel"], []),
    ],
)
def test_the_changed_scripts_build_their_loaders_on_both_branches(tmp_path, name, on, off):
    changed = tmp_path / name
    changed.write_text(changed_source((TUNE / name).read_text(), WORKERS2)[0])
    for branch, args in (("accel", on), ("cpu", off)):
        got = _branch(tmp_path, changed, branch, *args)
        assert got["broken"] == "" and got["stopped"] == "first loader iterated", (branch, got)
        assert got["built"] and all(b.get("num_workers", 2) == 2 for b in got["built"])


@pytest.mark.slow
def test_the_branch_check_finds_an_option_passed_twice_on_the_accelerator_branch_only(tmp_path):
    source = (TUNE / "accel_ifexp_kwargs.py").read_text()
    broken = source.replace("shuffle=True, **extra)", "shuffle=True, num_workers=2, **extra)")
    (tmp_path / "b.py").write_text(broken)
    assert _branch(tmp_path, tmp_path / "b.py", "cpu")["broken"] == ""
    got = _branch(tmp_path, tmp_path / "b.py", "accel")
    assert "multiple values for keyword argument 'num_workers'" in got["broken"]
    assert got["broken"].startswith("line 17: TypeError")  # the train loader's call


@pytest.mark.slow
def test_the_branch_check_finds_prefetch_without_workers_on_the_cpu_branch(tmp_path):
    source = (TUNE / "accel_update_kwargs.py").read_text()
    broken = source.replace('{"batch_size": 32}', '{"batch_size": 32, "prefetch_factor": 4}')
    (tmp_path / "b.py").write_text(broken)
    assert _branch(tmp_path, tmp_path / "b.py", "accel")["broken"] == ""
    assert "prefetch_factor" in _branch(tmp_path, tmp_path / "b.py", "cpu")["broken"]


@pytest.mark.slow
def test_the_diff_check_rejects_an_edit_that_breaks_only_the_accelerator_branch(tmp_path, forked_children):
    from idlehound.tune import TuneOptions, _runs_changed

    script = TUNE / "accel_ifexp_kwargs.py"
    good = changed_source(script.read_text(), WORKERS2)[0]
    broken = script.read_text().replace("shuffle=True, **extra)", "shuffle=True, num_workers=2, **extra)")
    opts = TuneOptions(timeout_s=300)
    assert _runs_changed(str(script), [], opts, tmp_path, good) == ""
    why = _runs_changed(str(script), [], opts, tmp_path, broken)  # it trains on this CPU machine
    assert why.startswith("failed with an accelerator: line 17: TypeError"), why
