"""The typed report model (report/model.py): real documents read back strictly as their Structs, the shipped JSON
schemas equal the generated ones, the JSON text is what `json.dumps(indent=2)` wrote before, and figures are
rounded to their documented precision."""

import json
import math
import re
import typing

import msgspec
import pytest

from idlehound.compare import compare_docs
from idlehound.distributed import compare_ranks
from idlehound.pipeline import analyze_path
from idlehound.report import model as m
from idlehound.report.schema import DOCUMENTS, schema_text

from .conftest import ROOT, SHARED, TRACES, analysed


@pytest.fixture
def run_cli(forked_cli):
    """Each `idlehound ...` run as a fork of one torch-loaded interpreter (tests/_forkserver.py)."""
    return forked_cli


RUN_FOLDERS = sorted(p.name for p in TRACES.iterdir() if (p / "run.json").exists())


@pytest.fixture(scope="module")
def docs():
    return {name: analysed(TRACES / name).doc for name in RUN_FOLDERS}


def _text(doc) -> bytes:
    return m.encode(doc).encode()


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_shipped_schema_is_the_generated_one(name):
    shipped = ROOT / "docs" / "schema" / f"{name}.schema.json"
    assert shipped.read_text(encoding="utf-8") == schema_text(name), (
        "docs/schema is stale: run `python -m idlehound.report.schema`"
    )


def test_every_recorded_run_reads_back_as_the_report_struct(docs):
    assert len(docs) >= 10
    for name, doc in docs.items():
        rep = m.validate(_text(doc), "report")
        assert isinstance(rep, m.Report) and rep.trace.steps == doc["trace"]["steps"], name
        assert json.loads(m.encode(rep)) == json.loads(_text(doc)), name  # nothing lost or added on the way


def test_bare_traces_and_shared_fixtures_read_back(tmp_path):
    bare = sorted((TRACES / "frameworks").glob("*.pt.trace.json.gz"))[:3]
    bare += sorted(SHARED.glob("*.pt.trace.json.gz"))[:4] if SHARED.is_dir() else []
    for path in bare:
        rep = m.validate(_text(analyze_path(path).doc), "report")
        assert rep.schema == "idlehound/analysis"


def test_a_wrong_or_unknown_key_is_refused(docs):
    doc = json.loads(_text(docs["healthy"]))
    doc["metrics"]["gpu_util"]["value"] = "high"
    with pytest.raises(msgspec.ValidationError, match=r"metrics.*value"):
        m.validate(json.dumps(doc), "report")
    doc = json.loads(_text(docs["healthy"]))
    doc["kernels"]["surprise"] = 1
    with pytest.raises(msgspec.ValidationError, match="surprise"):
        m.validate(json.dumps(doc), "report")
    doc = json.loads(_text(docs["healthy"]))
    doc["schema_version"] = 1  # version 2 since the predicted ranges
    with pytest.raises(msgspec.ValidationError, match="schema_version"):
        m.validate(json.dumps(doc), "report")


def test_json_text_is_what_json_dumps_wrote(docs):
    """The encoder keeps the earlier text: indent 2, key order, floats, non-ASCII as \\u escapes."""
    for name, doc in docs.items():
        assert m.encode(doc) == json.dumps(doc, indent=2), name
    odd = {"name": "caf\u00e9 \u202egpj.exe \U0001f600 \x1b[31m \x9b", "x": [1.5e-07, 1e21, -0.0, 3]}
    assert m.encode(odd) == json.dumps(odd, indent=2)
    assert m.encode(odd).isascii()


def test_non_finite_figures_are_reported_as_null():
    assert json.loads(m.encode({"v": math.nan, "w": math.inf})) == {"v": None, "w": None}


def _decimals(x: float) -> int:
    text = repr(x)
    return 0 if "e" in text or "." not in text else len(text.split(".")[1].rstrip("0"))


def test_figures_are_rounded_to_their_documented_precision(docs):
    for name, doc in docs.items():
        for key, met in doc["metrics"].items():
            assert met["value"] is None or _decimals(met["value"]) <= m.PCT, (name, key)
        for v in list(doc["breakdown_ms"].values()) + list(doc["idle_by_cause_ms"].values()):
            assert v is None or _decimals(v) <= m.MS, name
        for s in doc["steps"]:
            assert _decimals(s["duration_ms"]) <= m.MS and _decimals(s["gpu_busy_pct"]) <= m.PCT, name
        for f in doc["findings"]:
            assert _decimals(f["recoverable_ms_per_step"]) <= m.SHARE, name


def test_compare_and_ranks_documents_read_back(docs):
    c = compare_docs(docs["healthy"], docs["dataloader_bound"])
    back = m.validate(_text(c), "compare")
    assert back.findings_new and back.metrics[0].label == c["metrics"][0]["label"]
    assert back.metrics[1].label == "Samples/s (unprofiled)"
    ranks = []
    for i, name in enumerate(("sync_item", "healthy")):
        d = dict(
            docs[name],
            rank=i,
            world_size=2,
            backend="nccl",
            rank_figures={
                "comm_ms": 0.5,
                "exposed_comm_ms": 0.25,
                "lines": [["train.py", 10 + i, "step", 1.0]],
            },
        )
        ranks.append(d)
    r = compare_ranks(ranks)
    back_r = m.validate(_text(r), "ranks")
    assert [row.rank for row in back_r.ranks] == [0, 1] and back_r.ranks_compared == 2
    assert all(row.overlapped_comm_ms == 0.25 for row in back_r.ranks)


def test_lint_document_reads_back(capsys):
    from idlehound import app

    # what `idlehound lint --json --trace RUN SCRIPT` prints, in this process (no interpreter of its own to start)
    script = ROOT / "tests" / "scripts" / "planted" / "sync_item.py"
    assert app.lint((script,), True, TRACES / "sync_item") == 1  # findings
    out = capsys.readouterr().out
    back = m.validate(out, "lint")
    assert back.findings and all(f.file.endswith("sync_item.py") for f in back.findings)
    assert any(f.measured_idle_ms_per_step for f in back.findings)
    assert out.rstrip("\n") == m.encode(json.loads(out))


def test_recorded_ladder_and_tune_documents_read_back():
    measurements = ROOT / "docs" / "measurements"
    ladder = (measurements / "ladder-h200.json").read_text()
    back = m.validate(ladder, "ladder")
    again = json.loads(m.encode(back))
    for rung in again["rungs"]:  # a key added since: read back at its default
        assert rung.pop("change") == ""
    assert again == json.loads(ladder)
    for name in ("tune-h200-a.json", "tune-h200-b.json"):  # version 1: read with the version-2 defaults
        tune = m.validate((measurements / name).read_text(), "tune")
        assert tune.schema_version == 1 and tune.variants[0].candidate == "baseline"


def test_a_stored_snippet_is_kept_and_a_missing_one_is_absent():
    from idlehound.analysis import SourceLoc
    from idlehound.report._data import _loc

    loc = SourceLoc("train.py", 12, "step", True, (10, ("a = 1", "b = 2", "loss.item()")))
    assert json.loads(m.encode(_loc(loc))) == {
        "file": "train.py",
        "line": 12,
        "function": "step",
        "exact": True,
        "snippet": {"first_line": 10, "lines": ["a = 1", "b = 2", "loss.item()"]},
    }
    assert json.loads(m.encode(_loc(SourceLoc("train.py", 12, "step", False)))) == {
        "file": "train.py",
        "line": 12,
        "function": "step",
        "exact": False,
    }  # absent, never null


def test_ladder_and_tune_builders_make_valid_documents(tmp_path):
    from idlehound.ladder import RungResult, ladder_doc
    from idlehound.tune import TuneOptions, _document
    from idlehound.tune._candidates import Outcome

    rungs = [
        RungResult("baseline", "baseline", samples_per_s=100.0, ms_per_step=10.0, speedup=1.0),
        RungResult("amp", "mixed precision", status="failed", reason="no GPU"),
    ]
    ladder = m.validate(m.encode(ladder_doc(rungs, "cpu")), "ladder")
    assert ladder.best == "baseline" and [r.status for r in ladder.rungs] == ["ok", "failed"]
    outcomes = [
        Outcome("baseline", "unchanged", samples_per_s=100.0, steps_per_s=1.0, speedup=1.0, rounds=3),
        Outcome("tf32", "TF32 matmuls", status="rejected", reason="loss differs"),
    ]
    doc = _document(
        "train.py",
        TuneOptions(),
        {"fp32_math"},
        outcomes,
        tmp_path,
        {"time_pct": 1.5, "loss_rel_diff": 0.0},
        0.5,
    )
    tune = m.validate(m.encode(doc), "tune")
    assert tune.schema_version == 3 and tune.best is None and tune.variants[1].status == "rejected"
    assert list(json.loads(m.encode(doc))) == [  # the JSON key order
        "schema",
        "schema_version",
        "script",
        "run_dir",
        "steps",
        "skip",
        "diagnosed_causes",
        "prediction",
        "budget_s",
        "noise",
        "drift_pct",
        "rounds",
        "margin",
        "variants",
        "best",
        "diff",
        "snippets",
        "diff_check",
        "wall_s",
    ]  # version 3's order (2 had no prediction, budget, wall)


def _structs(t, seen):
    if isinstance(t, type) and issubclass(t, msgspec.Struct) and t not in seen:
        seen.add(t)
        for f in msgspec.structs.fields(t):
            _structs(f.type, seen)
    for arg in typing.get_args(t):
        _structs(arg, seen)
    return seen


@pytest.mark.parametrize("root", [m.Report, m.Tune])
def test_docs_name_every_key_of_the_model(root):
    text = (ROOT / "docs" / "json-schema.md").read_text(encoding="utf-8")
    missing = [
        f"{s.__name__}.{f.name}"
        for s in _structs(root, set())
        for f in msgspec.structs.fields(s)
        if not re.search(rf"\b{f.name}\b", text)
    ]
    assert not missing, f"docs/json-schema.md does not name: {missing}"


def test_compare_kernel_ties_keep_the_order_of_the_runs(docs):
    """Two kernels with the same time keep A's order, then B's (a set's order used to vary from run to run)."""
    a, b = docs["sync_item"], docs["item_gpu_bound"]
    order = list(
        dict.fromkeys([k["name"] for k in a["kernels"]["top"]] + [k["name"] for k in b["kernels"]["top"]])
    )
    rows = compare_docs(a, b)["kernels_ms"]
    top = [max(r["a"] or 0, r["b"] or 0) for r in rows]
    ties = [(x, y) for x, y, tx, ty in zip(rows, rows[1:], top, top[1:]) if tx == ty]
    assert ties, "the recorded pair has no tie to check"
    assert all(order.index(x["label"]) < order.index(y["label"]) for x, y in ties)
