"""CONTRIBUTING's recipe for a tune change, followed literally: a Change class registered with @change (in its
family's module) and a Candidate are all tune needs. The registry puts the change in its place, and the no-op
test, the choice, the diff and the child's injection find it without naming it."""

import subprocess
import sys
import textwrap

import pytest

from idlehound.tune import TuneOptions, _choose
from idlehound.tune._candidates import Candidate, not_applicable
from idlehound.tune._changes import CHANGES, Change, change
from idlehound.tune._diff import changed_source

from .conftest import SCRIPTS

# The change of the recipe, as it would stand in tune/_changes/optimizer.py.
SET_TO_NONE = """
from idlehound.tune._changes import Change, change
from idlehound.tune._source import calls, rewrite_call


@change("set_to_none", order=125)
class SetToNone(Change):
    def inject(self, value, rec):
        rec.overrides["set_to_none"] = value

    def no_op(self, value, facts):
        return "the script drops its gradients already" if facts.get("set_to_none") else ""

    def edit(self, value, src):
        found = [c for c in calls(src.tree, ("zero_grad",)) if not c.keywords]
        src.edits += [rewrite_call(src.source, c, {"set_to_none": True}) for c in found]
"""

CAND = Candidate(
    "set_to_none",
    "optimizer.zero_grad(set_to_none=True)",
    {"set_to_none": True},
    "same",
    causes=("host_bound",),
    why="no kernel per parameter to fill its gradient with zeros",
)


@pytest.fixture
def registered():
    scope: dict = {}
    exec(SET_TO_NONE, scope)
    yield scope["SetToNone"]
    del CHANGES["set_to_none"]


def test_a_new_change_takes_its_place_and_the_diff_the_no_op_test_and_the_choice_find_it(registered):
    order = list(CHANGES)
    assert order.index("pl_log_epoch") + 1 == order.index("set_to_none") == order.index("fused_optimizer") - 1
    source = (SCRIPTS / "tune" / "plain_loop.py").read_text()
    new, _ = changed_source(source, {"set_to_none": True, "tf32": True})
    assert "    optimizer.zero_grad(set_to_none=True)\n" in new and "optimizer.zero_grad()" not in new
    assert "torch.backends.cuda.matmul.allow_tf32 = True  # idlehound tune\n" in new  # the others still edit
    assert not_applicable(CAND, {"set_to_none": True}) == "the script drops its gradients already"
    base = {"facts": {"set_to_none": True}, "loaders": []}
    chosen, skipped = _choose([CAND], {"host_bound"}, base, False, TuneOptions())
    assert chosen == [] and skipped[0].status == "not applicable"
    chosen, _ = _choose([CAND], {"host_bound"}, {"facts": {}, "loaders": []}, False, TuneOptions())
    assert chosen == [CAND]


def test_a_change_cannot_take_a_key_or_an_order_already_registered(registered):
    with pytest.raises(TypeError, match="is SetToNone's"):

        @change("another", order=125)
        class Another(Change):
            pass

    assert "another" not in CHANGES


@pytest.mark.slow  # a process that imports torch
def test_the_child_injects_a_new_change_it_never_names():
    pytest.importorskip("torch")
    probe = SET_TO_NONE + textwrap.dedent(
        """
        from idlehound.tune._child import Recorder, apply

        rec = Recorder(skip=1, steps=1)
        apply({"set_to_none": True}, rec)
        print(rec.overrides)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.strip() == "{'set_to_none': True}"
