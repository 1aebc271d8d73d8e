import json

import pytest

from idlehound.compare import compare_docs
from idlehound.pipeline import analyze_path

from .conftest import TRACES


@pytest.mark.slow
def test_compare_deltas_and_changed_findings(run_cli, tmp_path):
    a, b = analyze_path(TRACES / "dataloader_bound").doc, analyze_path(TRACES / "dataloader_workers").doc
    c = compare_docs(a, b)
    util = next(r for r in c["metrics"] if r["label"] == "GPU busy")
    assert util["a"] == a["metrics"]["gpu_util"]["value"] and util["b"] == b["metrics"]["gpu_util"]["value"]
    assert util["delta"] == pytest.approx(util["b"] - util["a"], abs=1e-3)
    sps = next(r for r in c["metrics"] if r["label"] == "Samples/s (unprofiled)")
    assert sps["b"] > 3 * sps["a"]  # two loader workers
    # both loaders copy from pageable memory; what is new in B is what A's findings lack, in B's order
    was = {f["cause"] for f in a["findings"]}
    assert "pageable_copy" in {f["cause"] for f in b["findings"]}
    assert [f["cause"] for f in c["findings_new"]] == [
        f["cause"] for f in b["findings"] if f["cause"] not in was
    ]
    assert c["findings_kept"][0]["cause"] == "data_loading"
    dl = next(r for r in c["breakdown_ms"] if r["label"] == "DataLoader")
    assert dl["delta"] < 0
    r = run_cli("compare", "--json", TRACES / "sync_item", TRACES / "healthy", "-o", tmp_path / "c.html")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    # sync_item also names a small launch-bound gain (the replay's: launches after each drain), gone too
    assert [f["cause"] for f in doc["findings_gone"]][0] == "sync" and doc["findings_new"] == []
    assert "GPU busy" in (tmp_path / "c.html").read_text()
