"""idlehound.analyze(): one call from a path or a loaded trace to the diagnosed result, the CLI's answer; the
result shows itself in Jupyter and hands its tables to pandas."""

import json
import re
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import idlehound
from idlehound.cli import main
from idlehound.report import encode
from idlehound.trace import parse_trace_bytes

from .conftest import TRACES
from .unit.tracebuilder import TraceBuilder

RUN = TRACES / "sync_item"  # a recorded run folder: an .item()/print per step at sync_item.py:17


def _cli_doc(*args: str) -> dict:
    out = CliRunner().invoke(main, ["analyze", *args, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def result():
    return idlehound.analyze(str(RUN))


def test_one_call_gives_what_the_cli_prints_from_a_str_a_path_and_a_loaded_trace(result):
    cli = _cli_doc(str(RUN))
    assert json.loads(encode(result.doc)) == cli
    assert json.loads(encode(idlehound.analyze(Path(RUN)).doc)) == cli
    trace = idlehound.load_trace(RUN)  # the same file: the run folder's sidecar and run.json are read too
    assert json.loads(encode(idlehound.analyze(trace).doc)) == cli
    assert [f["cause"] for f in cli["findings"]] == [str(f.cause) for f in result.findings]
    assert cli["findings"][0]["location"]["line"] == 17 and result.findings[0].cause == "sync"


def test_step_run_and_worker_choose_as_the_cli_options_do():
    n = idlehound.analyze(RUN).doc["trace"]["steps"][-1]
    one = idlehound.analyze(TRACES, run="sync_item", step=n)
    assert one.doc["trace"]["steps"] == [n]
    assert json.loads(encode(one.doc)) == _cli_doc(str(TRACES), "--run", "sync_item", "--step", str(n))


def test_older_callers_still_work_the_result_is_an_analysis(result):
    """`idlehound.diagnose(idlehound.analyze(trace))` and report_data() as the README showed them."""
    assert isinstance(result, idlehound.Analysis)
    again = idlehound.diagnose(result)
    assert [(f.cause, f.location) for f in again] == [(f.cause, f.location) for f in result.findings]
    assert idlehound.report_data(result, again) == result.doc
    assert result.analysis is result and result.n_steps == len(result.doc["steps"])
    assert repr(result).startswith("<idlehound.Result vm_425.") and "findings: sync" in repr(result)


@pytest.mark.parametrize("bad", [42, b"log", None, ["log"], 3.5])
def test_anything_but_a_path_or_a_trace_is_a_type_error(bad):
    with pytest.raises(TypeError, match=rf"takes a path .* not {type(bad).__name__}$"):
        idlehound.analyze(bad)


def test_a_missing_path_is_the_clis_trace_error(tmp_path):
    with pytest.raises(idlehound.TraceError, match="nothing"):
        idlehound.analyze(tmp_path / "nothing")


def test_repr_html_shows_headline_findings_and_charts_inline_and_scoped(result):
    page = result._repr_html_()
    assert page.startswith("<div class='idlehound-report'>") and page.rstrip().endswith("</div>")
    text = re.sub(r"<[^>]+>", "", page)
    assert result.doc["headline"] in text.replace("&#39;", "'")
    for f in result.doc["findings"]:
        assert f["title"] in text
    for chart in ("breakdown-chart", "timeline"):
        assert f"id='{chart}'" in page
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", page)  # nothing fetched
    assert "<body" not in page and "<html" not in page and "<title>idlehound" not in page  # no page around it
    css = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    selectors = [s.strip() for rule in css.split("}") if "{" in rule for s in rule.split("{")[0].split(",")]
    assert selectors and all(s.startswith(".idlehound-report") for s in selectors)


def test_repr_html_escapes_names_from_the_trace():
    tb = TraceBuilder()
    evil = "<img src=x onerror=alert(1)>"
    for i in range(3):
        t0 = i * 1000
        tb.step(i, ts=t0, dur=900)
        ext = tb.op("aten::mm", t0 + 5, 40)
        tb.kernel(evil, ts=t0 + 100, dur=300, launch_ts=t0 + 10, ext=ext)
    page = idlehound.analyze(parse_trace_bytes(tb.to_bytes(), "built.json"))._repr_html_()
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_to_pandas_gives_the_documents_tables(result):
    pd = pytest.importorskip("pandas", reason="pandas is an optional dependency (the dev extra installs it)")
    frames = result.to_pandas()
    assert set(frames) == set(idlehound.result.TABLES)
    assert all(isinstance(f, pd.DataFrame) for f in frames.values())
    doc = result.doc
    assert frames["findings"]["cause"].tolist() == [f["cause"] for f in doc["findings"]]
    assert frames["steps"]["duration_ms"].tolist() == [s["duration_ms"] for s in doc["steps"]]
    assert frames["findings"]["location"].iloc[0].endswith("sync_item.py:17")
    metrics = frames["metrics"].set_index("metric")["value"]
    assert metrics["gpu_util"] == doc["metrics"]["gpu_util"]["value"]


def test_to_pandas_without_pandas_says_what_to_install(result, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    with pytest.raises(ImportError, match=r"needs pandas, which is not installed: pip install pandas"):
        result.to_pandas()


@pytest.mark.parametrize("ext", ["json", "md", "html"])
def test_result_write_is_the_file_analyze_o_writes(result, tmp_path, ext):
    cli = tmp_path / f"cli.{ext}"
    assert CliRunner().invoke(main, ["analyze", str(RUN), "-o", str(cli)]).exit_code == 0
    api = result.write(tmp_path / f"api.{ext}")
    assert api.read_text(encoding="utf-8") == cli.read_text(encoding="utf-8")
    with pytest.raises(idlehound.IdlehoundError, match="already exists"):
        result.write(api)  # never overwritten unless forced
