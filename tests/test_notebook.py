"""examples/notebook.ipynb runs top to bottom in a fresh kernel (nbclient) on a recorded run, and shows what it
says it shows: the report as HTML, the top finding at the planted line, the tables, the annotated trace."""

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.slow

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


def _outputs(cell) -> str:
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", ""))
        out += [str(v) for v in o.get("data", {}).values()]
    return "\n".join(out)


def test_the_example_notebook_executes_on_a_recorded_run():
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extra")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extra")
    pytest.importorskip("ipykernel", reason="ipykernel (the notebook's kernel) is in the dev extra")
    pytest.importorskip("pandas", reason="the notebook shows the tables as pandas DataFrames")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")  # committed without outputs
    client = nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(o.get("output_type") != "error" for c in code for o in c.get("outputs", []))
    shown = next(c for c in code if c.source.strip().endswith("result"))
    html = shown.outputs[0]["data"]["text/html"]
    assert html.startswith("<div class='idlehound-report'>") and "id='breakdown-chart'" in html
    assert "GPU idle" in html and "CPU-GPU sync points in the loop" in html
    text = "\n".join(_outputs(c) for c in code)
    assert "sync_item.py:17" in text  # the top finding at the planted print(loss)
    assert "recoverable_ms_per_step" in text and "annotated.pt.trace.json.gz" in text
