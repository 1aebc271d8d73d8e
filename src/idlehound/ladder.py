"""`idlehound ladder`: the optimisation ladder, each rung measured side by side on the same data.

Each rung adds one change to the best configuration so far. For each: samples/s, ms/step, GPU busy share
(short profile of the rung), NVML utilisation, peak memory, speed-up, % of the in-memory ceiling, and the
top remaining finding. A rung that fails is reported with its reason and the others go on.
"""

from __future__ import annotations

import gc
import re
import sys
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Optional

from .diagnose.dataloader import worker_sweep
from .report import model, write, write_ladder_scalars
from .runfolder import document_files
from .workloads.resnet import TrainConfig, Trainer, baseline, cpu_count, default_device, time_steps


@dataclass
class RungResult:
    name: str
    label: str
    config: dict[str, Any] = field(default_factory=dict)
    samples_per_s: Optional[float] = None
    ms_per_step: Optional[float] = None
    gpu_busy_pct: Optional[float] = None
    nvml_util: Optional[float] = None
    peak_mem_gib: Optional[float] = None
    speedup: Optional[float] = None
    pct_of_ceiling: Optional[float] = None
    top_finding: str = ""
    status: str = "ok"  # ok, skipped, failed
    reason: str = ""
    tried: list[dict[str, Any]] = field(default_factory=list)
    trace: str = ""
    change: str = ""  # what the rung changes on top of the best so far, in words


class _Skip(Exception):
    pass


Apply = Callable[[TrainConfig, "LadderOptions", str], "tuple[TrainConfig, list[dict[str, Any]]]"]


@dataclass(frozen=True)
class Rung:
    """One step up the ladder: what it changes, and how it is applied to the best configuration so far."""

    name: str
    label: str
    change: str
    apply: Apply  # (best so far, options, device) -> (this rung's config, candidates tried)
    needs_cuda: bool = False
    needs_compile: bool = False

    def configure(
        self, best: TrainConfig, opts: LadderOptions, device: str
    ) -> tuple[TrainConfig, list[dict[str, Any]]]:
        """The rung's config on top of the best so far; raises _Skip when the rung cannot run here."""
        if self.needs_cuda and device == "cpu":
            raise _Skip("needs CUDA")
        if self.needs_compile and device == "cpu" and not opts.chosen:
            raise _Skip("minutes of compilation on a CPU: ask for it with --rungs")
        if self.needs_compile:
            _need_compile()
        return self.apply(best, opts, device)


def _same(best: TrainConfig, opts: LadderOptions, device: str) -> tuple[TrainConfig, list[dict[str, Any]]]:
    return best, []


def _set(**change: Any) -> Apply:
    return lambda best, opts, device: (replace(best, **change), [])


def _amp(best: TrainConfig, opts: LadderOptions, device: str) -> tuple[TrainConfig, list[dict[str, Any]]]:
    return _pick(
        best, opts, [replace(best, amp=a, batch_size=b) for b in opts.batch_sizes for a in ("fp16", "bf16")]
    )


LADDER: tuple[Rung, ...] = (
    Rung("baseline", "0. baseline (batch 32, 1 worker, fp32)", "nothing: the textbook starting point", _same),
    Rung(
        "loader",
        "1. DataLoader tuned (batch 128, workers, pinned, non_blocking)",
        "batch 128, the fastest worker count of a sweep, persistent workers, pinned memory, non_blocking copies",
        lambda best, opts, device: _pick_workers(best, opts, device),
    ),
    Rung(
        "amp",
        "2. AMP (fp16 GradScaler / bf16, batch 128-256)",
        "autocast fp16 (GradScaler) or bf16, the fastest with each batch size",
        _amp,
        needs_cuda=True,
    ),
    Rung(
        "channels_last",
        "3. channels_last + cudnn.benchmark",
        "channels_last memory format, cudnn.benchmark on",
        _set(channels_last=True, cudnn_benchmark=True),
        needs_cuda=True,
    ),
    Rung(
        "gpu_preprocess",
        "4. GPU-side resize and normalise",
        "resize and normalise batches on the GPU",
        _set(gpu_preprocess=True),
        needs_cuda=True,
    ),
    Rung(
        "compile",
        "5. torch.compile",
        "torch.compile (default mode)",
        _set(compile="default"),
        needs_compile=True,
    ),
    Rung(
        "cuda_graphs",
        "6. CUDA graphs (reduce-overhead)",
        "torch.compile mode reduce-overhead (CUDA graphs)",
        _set(compile="reduce-overhead"),
        needs_cuda=True,
        needs_compile=True,
    ),
)
RUNGS = [r.name for r in LADDER]
CEILING_LABEL = "ceiling: same model, data already on the GPU"


# Timed and untimed steps per rung where none are given: a GPU's, and a CPU's quick look (a minute or two).
GPU_STEPS, GPU_WARMUP = 50, 10
CPU_STEPS, CPU_WARMUP = 8, 2


@dataclass
class LadderOptions:
    device: str = ""
    rungs: list[str] = field(default_factory=lambda: list(RUNGS))
    warmup: int = GPU_WARMUP
    steps: int = GPU_STEPS
    batch_sizes: tuple[int, ...] = (128, 256)
    workers: Optional[list[int]] = None
    data: Optional[str] = None
    logdir: Path = Path("log")
    profile: bool = True
    ceiling: bool = True
    chosen: bool = False  # the rungs were named (--rungs), not the default set


def run_ladder(
    opts: LadderOptions, progress: Callable[[str], None] = lambda m: print(m, file=sys.stderr)
) -> tuple[list[RungResult], Path]:
    """Run the chosen rungs in order; returns (results, run_dir)."""
    from .runfolder import new_run_dir

    device = opts.device or default_device()
    run_dir = new_run_dir(Path(opts.logdir), "ladder")
    cpu = device == "cpu"
    base = baseline(device)
    if opts.data:
        base = replace(base, data=opts.data)
    best = base
    results: list[RungResult] = []
    for rung in LADDER:
        name = rung.name
        if name not in opts.rungs:
            continue
        res = RungResult(name, rung.label, change=rung.change)
        try:
            cfg, res.tried = rung.configure(best, opts, device)  # raises _Skip when the rung cannot run
            res.label = measured_label(rung.label, cfg, res.tried)
            progress(f"idlehound ladder: {res.label}")
            _measure(cfg, opts, res, run_dir, progress)
            best = cfg
        except _Skip as s:
            res.status, res.reason = "skipped", str(s)
            progress(f"idlehound ladder: {rung.label}: skipped ({s})")
        except Exception as e:  # OOM, compile failure...: report and go on
            res.status, res.reason = "failed", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            (run_dir / f"{name}.error.txt").write_text(traceback.format_exc())
        finally:
            _free()
        results.append(res)
        _save(results, device, run_dir)  # a ladder cut short still leaves what it measured
    if opts.ceiling:
        res = RungResult(
            "ceiling", CEILING_LABEL, change="the best configuration with the data already on the GPU"
        )
        try:
            if cpu:
                raise _Skip("needs CUDA")
            cfg = replace(best, in_memory=True, gpu_preprocess=False)
            _measure(cfg, opts, res, run_dir, progress, profile=False)
        except _Skip as s:
            res.status, res.reason = "skipped", str(s)
        except Exception as e:
            res.status, res.reason = "failed", f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        finally:
            _free()
        results.append(res)
    _save(results, device, run_dir)
    return results, run_dir


def measured_label(label: str, cfg: TrainConfig, tried: list[dict[str, Any]]) -> str:
    """The rung's label with the batch size, worker count and pinning it measured (a CPU runs smaller batches,
    and pins nothing), in place of the GPU figures the label is written with."""
    batches = sorted({int(t["batch_size"]) for t in tried if "samples_per_s" in t}) or [cfg.batch_size]
    batch = f"batch {batches[0]}" if len(batches) == 1 else f"batch {batches[0]}-{batches[-1]}"
    label = re.sub(r"batch \d+(-\d+)?", batch, label, count=1)
    label = re.sub(
        r"\b1 worker\b", f"{cfg.num_workers} worker" + ("s" if cfg.num_workers != 1 else ""), label
    )
    if not cfg.pin_memory:
        label = label.replace(", pinned, non_blocking", "")
    return label


def _save(results: list[RungResult], device: str, run_dir: Path) -> None:
    _relative(results)
    doc = ladder_doc(results, device)
    for path in document_files(run_dir, "ladder"):  # rewritten whole after each rung
        write(doc, path, force=True)
    for old in run_dir.glob("events.out.tfevents.*"):  # rewritten whole after each rung
        old.unlink()
    write_ladder_scalars(run_dir, doc)


def _need_compile() -> None:
    import torch

    if not hasattr(torch, "compile"):
        raise _Skip("torch.compile unavailable in this torch")


def _pick_workers(
    best: TrainConfig, opts: LadderOptions, device: str
) -> tuple[TrainConfig, list[dict[str, Any]]]:
    cands = sorted(set(opts.workers)) if opts.workers else worker_sweep(cpu_count())
    batch = 128 if device != "cpu" else best.batch_size
    pinned = device != "cpu"
    return _pick(
        best,
        opts,
        [
            replace(
                best,
                batch_size=batch,
                num_workers=w,
                pin_memory=pinned,
                persistent_workers=True,
                non_blocking=pinned,
            )
            for w in cands
        ],
    )


def _pick(
    best: TrainConfig, opts: LadderOptions, cands: list[TrainConfig]
) -> tuple[TrainConfig, list[dict[str, Any]]]:
    """Measure each candidate briefly; keep the fastest."""
    tried: list[dict[str, Any]] = []
    for cfg in cands:
        t = None
        try:
            t = Trainer(cfg)
            m = time_steps(t, warmup=max(3, opts.warmup // 2), steps=max(5, opts.steps // 3))
            tried.append(
                {
                    "batch_size": cfg.batch_size,
                    "num_workers": cfg.num_workers,
                    "amp": cfg.amp,
                    "samples_per_s": m["samples_per_s"],
                }
            )
        except Exception as e:
            tried.append(
                {
                    "batch_size": cfg.batch_size,
                    "num_workers": cfg.num_workers,
                    "amp": cfg.amp,
                    "error": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}",
                }
            )
        finally:
            if t is not None:
                t.close()
            t = None
            _free()
    ok = [(c, tr) for c, tr in zip(cands, tried) if "samples_per_s" in tr]
    if not ok:
        raise RuntimeError("every candidate failed: " + "; ".join(tr.get("error", "") for tr in tried))
    cfg = max(ok, key=lambda p: p[1]["samples_per_s"])[0]
    return cfg, tried


def _measure(
    cfg: TrainConfig,
    opts: LadderOptions,
    res: RungResult,
    run_dir: Path,
    progress: Callable[[str], None],
    profile: Optional[bool] = None,
) -> None:
    trainer = Trainer(cfg)
    try:
        _measure_trainer(trainer, cfg, opts, res, run_dir, progress, profile)
    finally:
        trainer.close()


def _measure_trainer(
    trainer: Trainer,
    cfg: TrainConfig,
    opts: LadderOptions,
    res: RungResult,
    run_dir: Path,
    progress: Callable[[str], None],
    profile: Optional[bool],
) -> None:
    from .sampler import Sampler, summarize

    cuda = cfg.device != "cpu"
    if cuda:
        trainer.torch.cuda.reset_peak_memory_stats()
    sampler = Sampler(hz=20).start()
    m = time_steps(trainer, warmup=opts.warmup, steps=opts.steps)
    s = summarize(sampler.stop())
    res.config = {k: v for k, v in cfg.to_json().items() if k not in ("extra", "data")}
    res.samples_per_s, res.ms_per_step = m["samples_per_s"], m["ms_per_step"]
    if s.get("source") == "nvml":
        res.nvml_util = s.get("mean_util")
    if cuda:
        res.peak_mem_gib = round(trainer.torch.cuda.max_memory_allocated() / 2**30, 2)
    if opts.profile if profile is None else profile:
        _profile_rung(trainer, res, run_dir)
    progress(
        f"  {res.samples_per_s:,.0f} samples/s, {res.ms_per_step:.2f} ms/step"
        + (f", GPU busy {res.gpu_busy_pct:.0f}%" if res.gpu_busy_pct is not None else "")
    )


def _profile_rung(trainer: Trainer, res: RungResult, run_dir: Path, steps: int = 3) -> None:
    """A short profile of the rung (no Python stacks, to keep the observer small) and its diagnosis."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    from .capture import kineto_quiet
    from .pipeline import analyze_path

    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    folder = run_dir / res.name
    folder.mkdir(exist_ok=True)
    with (
        kineto_quiet(),
        profile(
            activities=acts,
            schedule=torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(
                str(folder), worker_name=res.name, use_gzip=True
            ),
        ) as p,
    ):
        for _ in range(steps + 1):
            trainer.step()
            p.step()
    trainer.sync()
    out = analyze_path(folder)
    res.gpu_busy_pct = out.report.metrics["gpu_util"].value
    top = next((f for f in out.findings if f.kind != "risk"), None)
    res.top_finding = f"{top.title} ({top.recoverable_ms:.2f} ms/step)" if top else "none"
    res.trace = str(out.analysis.trace.path.relative_to(run_dir))


def _free() -> None:
    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except Exception:
        pass


def _relative(results: list[RungResult]) -> None:
    base = next((r.samples_per_s for r in results if r.name == "baseline" and r.samples_per_s), None)
    ceil = next((r.samples_per_s for r in results if r.name == "ceiling" and r.samples_per_s), None)
    for r in results:
        if r.samples_per_s is None:
            continue
        if base:
            r.speedup = round(r.samples_per_s / base, 2)
        if ceil:
            r.pct_of_ceiling = round(100 * r.samples_per_s / ceil, 1)


def ladder_doc(results: list[RungResult], device: str) -> model.Ladder:
    """The ladder document (schema idlehound/ladder), what report.write and the renderers take."""
    from dataclasses import asdict

    best = max(
        (r for r in results if r.samples_per_s and r.name != "ceiling"),
        key=lambda r: r.samples_per_s or 0.0,  # the filter keeps measured rungs only
        default=None,
    )
    return model.Ladder(
        schema="idlehound/ladder",
        schema_version=1,
        device=device,
        rungs=[model.Rung(**asdict(r)) for r in results],
        best=best.name if best else None,
    )
