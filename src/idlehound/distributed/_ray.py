"""The Ray engine: the same analysis on a Ray cluster (`idlehound analyze --ranks PATH --engine ray`).

One task per rank file, run where the file is. A listing task on every alive node lists the traces it sees under
PATH: on a shared filesystem every node sees every file, and each is given to one of them in turn; traces left on a
node's local disk (tensorboard_trace_handler on a multi-node job) are seen by that node only, and their task is
pinned there (NodeAffinitySchedulingStrategy, hard). PATH may name environment variables ($VAR), expanded
on each node: a per-node scratch folder. Each task returns the rank's summary
(rank_summary: a few KB), never its event table, which the task frees before returning.

Ray is an optional dependency (the `ray` extra); nothing here imports it before it is asked for, and the package
imports this module only for engine "ray".
"""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path
from typing import Any, Optional, Union

from ..errors import IdlehoundError
from ..settings import JOBS
from . import _one, list_entries, newest_per_worker

MAX_RETRIES = 3  # a task whose worker process or node died runs again, up to this many times
INSTALL = "pip install 'idlehound[ray]'"
CONNECT_TIMEOUT_S = 10


def summaries_on_ray(path: Union[str, Path], address: Optional[str] = None) -> list[dict[str, Any]]:
    """Every rank's summary (or {"error": ...}) computed by Ray tasks on the cluster at address."""
    ray = _ray_import()
    started = _ray_connect(ray, address)
    try:
        return _ray_run(ray, str(path))
    finally:
        if started:
            ray.shutdown()


def _ray_import() -> Any:
    try:
        import ray
    except ImportError:
        raise IdlehoundError(f"--engine ray: Ray is not installed here ({INSTALL})") from None
    return ray


def _ray_connect(ray: Any, address: Optional[str]) -> bool:
    """Join the cluster at address (else RAY_ADDRESS, else start a local one); True when this call connected
    (and so disconnects at the end). A wrong address, no cluster or another Ray version: one IdlehoundError."""
    if ray.is_initialized():
        return False
    where = address or os.environ.get("RAY_ADDRESS") or "a new local Ray instance"
    if address or os.environ.get("RAY_ADDRESS"):
        _reachable(where)  # Ray itself retries, for minutes, an address that does not answer as Ray
    try:
        ray.init(address=address, logging_level="ERROR", log_to_driver=False, configure_logging=True)
    except Exception as e:  # ConnectionError, RuntimeError (version mismatch), ValueError (bad address)
        with contextlib.suppress(Exception):
            ray.shutdown()  # not left half-joined (the version check follows the connection)
        raise IdlehoundError(f"--engine ray: cannot join the Ray cluster at {where}: {_why_not(e)}") from None
    return True


def _reachable(address: str) -> None:
    """Refuse at once an address where nothing listens, or where what listens is not a gRPC server as a Ray
    head's GCS and Ray Client's server are ("auto" and "local" are Ray's to resolve)."""
    import socket

    if address in ("auto", "local"):
        return
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, _, port = hostport.rpartition(":")
    if not host or not port.isdigit():
        raise IdlehoundError(
            f"--engine ray: the address {address!r} is not HOST:PORT (or ray://HOST:PORT, auto)"
        )
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S)
    except OSError as e:
        raise IdlehoundError(
            f"--engine ray: no Ray cluster answers at {address} ({e.strerror or e})"
        ) from None
    with sock:
        if not _speaks_grpc(sock):
            raise IdlehoundError(
                f"--engine ray: {address} answers, but not as a Ray cluster (no gRPC reply; a Ray head's "
                "address is HEAD_IP:6379 by default, Ray Client's ray://HEAD_IP:10001)"
            )


# HTTP/2's client preface and an empty SETTINGS frame; a gRPC server's first frame back is its SETTINGS (type 4).
_H2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _speaks_grpc(sock: Any) -> bool:
    """True when the server answers HTTP/2's preface with a SETTINGS frame (or when the cluster uses TLS,
    which this plain probe cannot speak: Ray decides then)."""
    if os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true"):
        return True
    head = b""
    try:
        sock.sendall(_H2_HELLO)
        while len(head) < 9:
            got = sock.recv(9 - len(head))
            if not got:
                break
            head += got
    except OSError:  # no answer within CONNECT_TIMEOUT_S, or the connection reset
        return False
    return len(head) == 9 and head[3] == 4


def _why_not(e: BaseException) -> str:
    """Ray's reason on one line; its version mismatch (several lines) as the two versions side by side."""
    found = re.findall(r"Ray: (\S+)\s+Python: (\S+)", str(e))
    if str(e).startswith("Version mismatch") and len(found) == 2:
        (ray_there, py_there), (ray_here, py_here) = found
        return (
            f"version mismatch: the cluster runs Ray {ray_there} on Python {py_there}, this process Ray "
            f"{ray_here} on Python {py_here} (the driver needs the cluster's versions)"
        )
    return _first_line(e)


def _first_line(e: BaseException) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0][:300]


def _ray_in(base: str) -> None:
    """Read a relative PATH from the driver's folder where this node has it, so that the reports name the files
    as the user did (and as the local engine does)."""
    if base and os.path.isdir(base):
        os.chdir(base)


def _ray_list(path: str, base: str) -> tuple[str, list[tuple[str, str, str, tuple[Any, ...]]]]:
    """On one node: its id and the traces it sees under path (none if path is not there)."""
    import ray

    _ray_in(base)
    node = ray.get_runtime_context().get_node_id()
    path = os.path.expandvars(path)  # $VAR: this node's own folder (a per-node scratch disk)
    return node, (list_entries(path) if Path(path).is_dir() else [])


def _ray_summary(path: str, base: str) -> dict[str, Any]:
    """On the node that holds path: the rank's summary, or {"error": one line} (a bad trace is not retried)."""
    os.environ[JOBS.name] = "1"  # one core per task: Ray runs a task per core
    _ray_in(base)
    return _one(path)


def _ray_run(ray: Any, path: str) -> list[dict[str, Any]]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    base = "" if os.path.isabs(path) else os.getcwd()
    nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
    lister = ray.remote(num_cpus=0, max_retries=MAX_RETRIES)(_ray_list)
    listed = ray.get(
        [
            lister.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote(
                path, base
            )
            for n in nodes
        ]
    )
    where: dict[str, list[str]] = {}
    entries: dict[str, tuple[Any, ...]] = {}
    for node, found in listed:
        for e in found:
            where.setdefault(e[0], []).append(node)
            entries.setdefault(e[0], e)
    chosen = newest_per_worker(list(entries.values()), path)
    if len(chosen) < 2:
        raise IdlehoundError(f"{path}: one trace only; a multi-rank comparison needs a trace per rank")
    task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_ray_summary)
    refs = {}
    for i, e in enumerate(chosen):
        holders = where[e[0]]
        # Seen by one node: pinned there. Seen by several (a shared filesystem): spread, and free to move.
        strategy = NodeAffinitySchedulingStrategy(holders[i % len(holders)], soft=len(holders) > 1)
        refs[task.options(scheduling_strategy=strategy).remote(e[0], base)] = e[0]
    return _ray_gather(ray, refs)


def _ray_gather(ray: Any, refs: dict[Any, str]) -> list[dict[str, Any]]:
    """The tasks' results as they finish; a task lost for good is its rank's error line. Ctrl-C cancels the
    tasks not yet done and goes on up (exit 130)."""
    out = []
    pending = list(refs)
    try:
        while pending:
            done, pending = ray.wait(pending, num_returns=min(len(pending), 64), timeout=1.0)
            for ref in done:
                try:
                    out.append(ray.get(ref))
                except ray.exceptions.RayError as e:  # worker or node lost after every retry, or cancelled
                    out.append({"error": f"{refs[ref]}: Ray task failed: {_first_line(e)}", "trace": {}})
    except KeyboardInterrupt:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return out
