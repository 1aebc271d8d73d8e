"""The multi-rank comparison at scale, without Ray: per-rank summaries, the planted straggler among synthetic ranks
(benchmarks/many_ranks.py perturbs a recorded 2-rank gloo job whose rank 1 sleeps at ddp_train.py:24), a page
whose size follows the k stragglers and not the rank count, a failing rank as one line, the Ray engine's refusals.
"""

import importlib.util
import socket
import sys

import msgspec
import pytest

from idlehound.distributed import _ray, analyze_ranks, compare_ranks, rank_summary, rank_traces
from idlehound.errors import IdlehoundError
from idlehound.pipeline import analyze_path
from idlehound.report import render_ranks_html

from .conftest import ROOT, TRACES

RECORDED = TRACES / "ranks" / "ddp_gloo_slow1"
_spec = importlib.util.spec_from_file_location("many_ranks", ROOT / "benchmarks" / "many_ranks.py")
many_ranks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(many_ranks)


@pytest.fixture(scope="module")
def recorded():
    """The two recorded ranks' summaries: [waiter (rank 0), straggler (rank 1)]."""
    return [rank_summary(str(p)) for p in rank_traces(RECORDED)]


def test_a_summary_is_the_ranks_figures_not_its_table(recorded):
    path = rank_traces(RECORDED)[1]
    full = analyze_path(path)
    s = recorded[1]
    assert (s["rank"], s["world_size"], s["backend"]) == (1, 2, "gloo")
    assert s["metrics"]["step_ms"]["value"] == full.doc["metrics"]["step_ms"]["value"]
    assert len(s["steps_ms"]) == len(full.analysis.steps) == 3
    assert s["rank_figures"]["comm_ms"] == full.analysis.ranks["comm_ms"]
    # rank 1 arrives last at the all_reduce: it spends little there; the event table stays behind
    assert 0 < s["rank_figures"]["collectives"]["gloo:all_reduce"] < 5
    assert len(msgspec.json.encode(s)) < 8 * 1024 < len(full.analysis.trace.events) * 8


@pytest.mark.slow  # six generated ranks analysed: seconds; the fast set finds a planted straggler among four below
def test_planted_straggler_found_among_synthetic_ranks(tmp_path):
    run, planted = many_ranks.generate(tmp_path, 6, straggler=4)
    doc = analyze_ranks(run, workers=1, top_k=3)
    assert doc["ranks_compared"] == doc["world_size"] == 6
    s = doc["straggler"]
    assert s["rank"] == planted == 4
    assert (s["why_lines"][0]["file"].endswith("ddp_train.py"), s["why_lines"][0]["line"]) == (True, 24)
    top = doc["stragglers"]
    assert len(top) == 3 and top[0]["rank"] == 4 and top[0]["why"]["line"] == 24
    assert top[0]["excess_ms_per_step"] > 25  # the recorded 30 ms sleep, less what the waiters do
    c = doc["collectives"][0]
    assert c["name"] == "gloo:all_reduce" and c["ranks"] == 6 and c["wait_ms_per_step"] > 20
    assert sum(doc["step_ms_histogram"]["counts"]) == 6
    assert doc["idle_pct_histogram"] is None  # CPU-only trace: no GPU idle share
    assert all(len(r["steps_ms"]) == 3 for r in doc["ranks"])


def _many(recorded, n, straggler):
    """n summaries: copies of the recorded waiter, the recorded straggler at `straggler`, each rank's figures
    stretched by its own small factor (as the generator does to the traces)."""
    out = []
    for rank in range(n):
        d = msgspec.json.decode(msgspec.json.encode(recorded[1 if rank == straggler else 0]))
        f = 1 + ((rank * 7919) % 201 - 100) / 10000
        d["rank"], d["world_size"] = rank, n
        d["metrics"]["step_ms"]["value"] *= f
        d["steps_ms"] = [v * f for v in d["steps_ms"]]
        fig = d["rank_figures"]
        fig["comm_ms"] *= f
        fig["exposed_comm_ms"] *= f
        fig["collectives"] = {k: v * f for k, v in fig["collectives"].items()}
        d["trace"]["path"] = f"run/rank{rank}.pt.trace.json"
        out.append(d)
    return out


def test_page_size_follows_k_not_the_rank_count(recorded):
    pages = {}
    for n, k in ((256, 10), (1024, 10), (1024, 30)):
        doc = compare_ranks(_many(recorded, n, straggler=n - 5), top_k=k)
        assert doc["straggler"]["rank"] == n - 5 and doc["stragglers"][0]["rank"] == n - 5
        assert len(doc["ranks"]) == n  # the JSON keeps every rank
        pages[n, k] = render_ranks_html(doc)
    small, large, more_k = pages[256, 10], pages[1024, 10], pages[1024, 30]
    assert abs(len(large) - len(small)) < 0.02 * len(small)  # 4x the ranks, the same page
    assert len(more_k) > len(large) + 20 * 200  # 20 more stragglers: 20 more bars and rows
    assert len(large) < 200_000
    assert (
        "rank 1019</text>" in large and "id='rank-heatmap'" in large and "<table id='collectives'>" in large
    )
    chart = large.split("<svg id='rank-chart'")[1].split("</svg>")[0]
    assert chart.count("<text x='0'") == 10  # bars for the 10 stragglers only


def test_a_failing_rank_is_one_line(tmp_path):
    run, planted = many_ranks.generate(tmp_path, 4, straggler=1)
    bad = run / "rank2_synth_2.1.pt.trace.json"
    bad.write_bytes(bad.read_bytes()[:5000])  # cut short, as a crashed writer leaves it
    doc = analyze_ranks(run, workers=1)
    assert len(doc["failed"]) == 1 and "rank2_synth_2.1.pt.trace.json" in doc["failed"][0]
    assert "\n" not in doc["failed"][0]
    assert doc["ranks_compared"] == 3 and doc["straggler"]["rank"] == planted
    assert "skipped a rank: " in render_ranks_html(doc)


def test_ray_engine_without_ray_is_one_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # as if not installed
    with pytest.raises(IdlehoundError, match=r"Ray is not installed here \(pip install 'idlehound\[ray\]'\)"):
        analyze_ranks(RECORDED, engine="ray")


@pytest.mark.parametrize(
    "address, says",
    [("bogus", "is not HOST:PORT"), ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1")],
)
def test_an_address_where_no_ray_listens_is_refused_at_once(address, says):
    with pytest.raises(IdlehoundError, match=says):
        _ray._reachable(address)


def test_a_silent_listener_is_not_taken_for_a_ray_cluster(monkeypatch):
    """Something accepts the connection but never answers gRPC's opening: refused after the timeout."""
    monkeypatch.setattr(_ray, "CONNECT_TIMEOUT_S", 0.3)
    with socket.create_server(("127.0.0.1", 0)) as sock:
        address = f"127.0.0.1:{sock.getsockname()[1]}"
        with pytest.raises(IdlehoundError, match=f"{address} answers, but not as a Ray cluster"):
            _ray._reachable(address)


def test_an_unknown_engine_is_refused():
    with pytest.raises(IdlehoundError, match="--engine spark: not one of local, ray"):
        analyze_ranks(RECORDED, engine="spark")
