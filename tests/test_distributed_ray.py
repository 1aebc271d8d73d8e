"""`analyze --ranks --engine ray` on a local Ray cluster of three node processes (ray.cluster_utils.Cluster): the
same document as the local engine, traces on each node's own folder, a lost task as one line, Ctrl-C, refusals."""

import importlib.util
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from idlehound.distributed import _ray, analyze_ranks
from idlehound.errors import IdlehoundError
from idlehound.report import render_ranks_html
from idlehound.report.model import encode

from .conftest import ROOT

pytestmark = [
    pytest.mark.slow,  # starts a Ray cluster of three node processes
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="the ray extra is not installed (pip install -e '.[ray]')",
    ),
]
ray = None  # the ray module, imported by the cluster fixture: not when the fast set is collected (~1 s)

_spec = importlib.util.spec_from_file_location("many_ranks", ROOT / "benchmarks" / "many_ranks.py")
many_ranks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(many_ranks)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A head and two worker nodes, one CPU each; each node's NODE_TRACES names its own folder."""
    global ray
    import ray
    from ray.cluster_utils import Cluster

    base = tmp_path_factory.mktemp("nodes")
    dirs = {name: base / name for name in ("head", "a", "b")}
    c = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "env_vars": {"NODE_TRACES": str(dirs["head"])}},
    )
    for name in ("a", "b"):
        c.add_node(num_cpus=1, env_vars={"NODE_TRACES": str(dirs[name])})
    c.wait_for_nodes()
    c.dirs = dirs
    yield c
    if ray.is_initialized():
        ray.shutdown()
    c.shutdown()


def test_same_document_from_both_engines(cluster, tmp_path):
    run, planted = many_ranks.generate(tmp_path, 8, straggler=3)
    local = analyze_ranks(run)
    on_ray = analyze_ranks(run, engine="ray", address=cluster.address)
    assert on_ray["straggler"]["rank"] == planted == 3
    assert encode(on_ray) == encode(local)
    assert render_ranks_html(on_ray) == render_ranks_html(local)


def test_traces_on_each_nodes_own_disk(cluster, tmp_path):
    """Ranks 0-3 on node a's folder, 4-7 on node b's, as tensorboard_trace_handler leaves them on a multi-node
    job: a listing task on every node finds them, each rank is analysed on the node that has it."""
    run, planted = many_ranks.generate(tmp_path, 8, straggler=6)
    for rank in range(8):
        node = cluster.dirs["a" if rank < 4 else "b"] / run.name
        node.mkdir(parents=True, exist_ok=True)
        for f in run.glob(f"rank{rank}_*"):
            shutil.move(str(f), node / f.name)
    doc = analyze_ranks("$NODE_TRACES", engine="ray", address=cluster.address)
    assert doc["ranks_compared"] == 8 and doc["failed"] == []
    assert doc["straggler"]["rank"] == planted
    paths = {r["rank"]: r["trace"] for r in doc["ranks"]}
    assert all(paths[r].startswith(str(cluster.dirs["a"])) for r in range(4))
    assert all(paths[r].startswith(str(cluster.dirs["b"])) for r in range(4, 8))


def _dies(path):
    os._exit(1)  # the worker process is lost, as when a node goes down


def test_a_task_lost_for_good_is_one_line(cluster):
    if not ray.is_initialized():
        ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    task = ray.remote(max_retries=0)(_dies)
    ref = task.remote("x")
    (got,) = _ray._ray_gather(ray, {ref: "run/rank5.pt.trace.json"})
    assert got["error"].startswith("run/rank5.pt.trace.json: Ray task failed: ")
    assert "\n" not in got["error"]
    ray.shutdown()


def test_ctrl_c_cancels_and_exits_130(cluster, tmp_path):
    run, _ = many_ranks.generate(tmp_path, 192)
    cmd = [sys.executable, "-m", "idlehound", "analyze", "--ranks", str(run), "--engine", "ray"]
    cmd += ["--address", cluster.address]
    t0 = (
        time.monotonic()
    )  # a whole run first: the interrupt then lands half-way, on a busy machine or a calm one
    subprocess.run(cmd, capture_output=True, timeout=600, check=True)
    whole = time.monotonic() - t0
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(whole / 2)
    assert p.poll() is None, "finished before the interrupt"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "idlehound: interrupted"


def test_an_address_where_nothing_listens_is_one_line_exit_2(run_cli, tmp_path):
    run, _ = many_ranks.generate(tmp_path, 2)
    r = run_cli("analyze", "--ranks", run, "--engine", "ray", "--address", "127.0.0.1:1", timeout=120)
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == "idlehound: --engine ray: no Ray cluster answers at 127.0.0.1:1 (Connection refused)"
    )
    r = run_cli("analyze", "--ranks", run, "--engine", "ray", "--address", "bogus", timeout=120)
    assert r.returncode == 2
    assert (
        r.stderr.strip()
        == "idlehound: --engine ray: the address 'bogus' is not HOST:PORT (or ray://HOST:PORT, auto)"
    )


# This process says it runs Ray 2.9.0 on Python 3.9.18: ray.init's own check, against the versions the cluster
# recorded when it started, then fails as when the driver's environment is not the cluster's.
OTHER = ("2.9.0", "3.9.18")
MISMATCH = (
    "import sys, ray._private.utils as u; u.compute_version_info = lambda: ('2.9.0', '3.9.18'); "
    "from idlehound.cli import main; sys.argv[0] = 'idlehound'; main()"
)


def _mismatch_line(address):
    return (
        f"--engine ray: cannot join the Ray cluster at {address}: version mismatch: the cluster runs Ray "
        f"{ray.__version__} on Python {platform.python_version()}, this process Ray 2.9.0 on Python 3.9.18 "
        "(the driver needs the cluster's versions)"
    )


def test_another_ray_or_python_version_is_one_error(cluster, tmp_path, monkeypatch):
    import ray._private.utils as ray_utils

    run, _ = many_ranks.generate(tmp_path, 2)
    if ray.is_initialized():
        ray.shutdown()
    monkeypatch.setattr(ray_utils, "compute_version_info", lambda: OTHER)
    with pytest.raises(IdlehoundError) as got:
        analyze_ranks(run, engine="ray", address=cluster.address)
    assert str(got.value) == _mismatch_line(cluster.address)
    monkeypatch.undo()  # this process's own versions again: it was not left half-joined, the next call joins
    assert analyze_ranks(run, engine="ray", address=cluster.address)["ranks_compared"] == 2


def test_another_version_from_the_cli_is_one_line_exit_2(cluster, tmp_path):
    run, _ = many_ranks.generate(tmp_path, 2)
    cmd = [sys.executable, "-c", MISMATCH, "analyze", "--ranks", str(run), "--engine", "ray"]
    r = subprocess.run(cmd + ["--address", cluster.address], capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stderr[-2000:]
    assert r.stderr.strip() == "idlehound: " + _mismatch_line(cluster.address)


def _not_ray(sock):
    """A server on the port that is not Ray's: it answers HTTP/1.1 to whatever comes."""
    while True:
        try:
            conn, _ = sock.accept()
        except OSError:  # closed: the test is over
            return
        with conn:
            conn.recv(1024)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")


def test_an_address_that_is_not_ray_is_one_line_exit_2(run_cli, tmp_path):
    """Something listens there, but not Ray: refused at once (Ray itself retries such an address for minutes)."""
    run, _ = many_ranks.generate(tmp_path, 2)
    sock = socket.create_server(("127.0.0.1", 0))
    threading.Thread(target=_not_ray, args=(sock,), daemon=True).start()
    address = f"127.0.0.1:{sock.getsockname()[1]}"
    try:
        t0 = time.monotonic()
        r = run_cli("analyze", "--ranks", run, "--engine", "ray", "--address", address, timeout=120)
    finally:
        sock.close()
    assert r.returncode == 2
    assert r.stderr.strip() == (
        f"idlehound: --engine ray: {address} answers, but not as a Ray cluster (no gRPC reply; a Ray head's "
        "address is HEAD_IP:6379 by default, Ray Client's ray://HEAD_IP:10001)"
    )
    assert time.monotonic() - t0 < 60


def test_the_cli_writes_the_ray_document(cluster, run_cli, tmp_path):
    run, planted = many_ranks.generate(tmp_path, 4, straggler=0)
    r = run_cli("analyze", "--ranks", "--json", run, "--engine", "ray", "--address", cluster.address)
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout)["straggler"]["rank"] == planted
