"""The registry of tune's changes: each class owns one settings key, and with it how the child injects the change
at start-up, when the change would do nothing in this script, and how the diff makes it in the script's source.

Adding a change is one class here (registered with @change) and its candidate(s) in _candidates; the child
(_child.apply), the no-op test (_candidates.not_applicable) and the diff (_diff.changed_source) look it up here.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from ..settings import TUNE_COMPILE_BACKEND
from ._candidates import FUSED_OPTIMIZERS

COMPILE_BACKEND_ENV = TUNE_COMPILE_BACKEND.name  # e.g. "eager": no compiler needed (tests, CPU)


@dataclass
class SourceEdits:
    """What the diff collects for one script: replacements (start, end, text), lines after the imports,
    snippets for what cannot be placed, and notes."""

    source: str
    tree: ast.Module
    settings: dict[str, Any] = field(default_factory=dict)  # all the variant's settings (some edits combine)
    graphed_inputs: list[dict[str, Any]] | None = None
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)  # edits shared by two changes, made once


class Change:
    """One kind of change, keyed by the settings key it owns (the value is what the candidate asks for)."""

    key = ""

    def inject(self, value: Any, rec: Any) -> None:
        """Apply the change in the child before the script runs (rec: the child's Recorder)."""
        raise NotImplementedError

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        """Why the change would do nothing in this script as it runs (from the baseline's facts), or ""."""
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        """Make the change in the script's source (or add a snippet saying where)."""
        raise NotImplementedError


CHANGES: dict[str, Change] = {}  # in the order the child injects them and the diff makes them


def change(cls: type[Change]) -> type[Change]:
    CHANGES[cls.key] = cls()
    return cls


def _loader_edit(src: SourceEdits, loader: dict[str, Any]) -> None:
    from ._diff import _calls, _loader_edits

    calls = _calls(src.tree, ("DataLoader",))
    for c in calls:
        src.edits += _loader_edits(src.source, src.tree, c, loader, src.notes)
    if not calls:
        src.snippets.append("DataLoader(..., " + ", ".join(f"{k}={v!r}" for k, v in loader.items()) + ")")


@change
class Loader(Change):
    """DataLoader keywords (workers, persistent, pinned, prefetch), set where the script builds its loaders."""

    key = "loader"

    def inject(self, value: Any, rec: Any) -> None:
        rec.overrides["loader"] = dict(value)  # applied by the child's DataLoader watcher

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None:
            return "the transformers Trainer builds the loaders: hf_workers sets them"
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        loader = dict(value)
        if src.settings.get("cuda_graphs"):
            loader["drop_last"] = True  # a short last batch could not replay the recorded shapes
        _loader_edit(src, loader)


@change
class NonBlocking(Change):
    """non_blocking=True on the copies of pinned loader batches to the GPU."""

    key = "non_blocking"

    def inject(self, value: Any, rec: Any) -> None:
        from ._child import _async_batch_copies

        _async_batch_copies()

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _batch_copies, _rewrite_call

        copies = _batch_copies(src.tree)
        src.edits += [_rewrite_call(src.source, c, {"non_blocking": True}) for c in copies]
        if not copies:
            src.snippets.append(
                "inputs = inputs.to(device, non_blocking=True)   # each batch tensor from the loader"
            )


class _TrainerArgs(Change):
    """Keywords of a framework's Trainer object, injected when the script builds it (the child's watcher)."""

    calls: tuple[str, ...] = ()
    what = ""
    fact = ""

    def inject(self, value: Any, rec: Any) -> None:
        rec.overrides[self.key] = dict(value)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        set_by = facts.get(self.fact)
        if set_by is not None and all(set_by.get(k) == v for k, v in value.items()):
            return (
                "the script's Trainer sets " + ", ".join(f"{k}={v!r}" for k, v in value.items()) + " already"
            )
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _calls, _loader_edits

        calls = _calls(src.tree, self.calls)
        for c in calls:
            src.edits += _loader_edits(src.source, src.tree, c, value, src.notes)
        if not calls:
            src.snippets.append(
                f"{self.what}(..., " + ", ".join(f"{k}={v!r}" for k, v in value.items()) + ")"
            )


@change
class TrainingArgs(_TrainerArgs):
    key, calls, what, fact = (
        "hf_args",
        ("TrainingArguments", "Seq2SeqTrainingArguments"),
        "TrainingArguments",
        "transformers_args",
    )

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        why = super().no_op(value, facts)
        if why:
            return why
        share = facts.get("padded_share")
        if not value.get("group_by_length") or (share or 0) >= 0.03:
            return ""
        if share is None:
            return "the model is not called with an attention mask: no padding to save is seen"
        if share == 0:
            return "the model's batches carry no padding: grouping samples by length changes nothing"
        return f"{share:.1%} of the tokens are padding: grouping by length could save no more than that"


@change
class LightningTrainerArgs(_TrainerArgs):
    key, calls, what, fact = "pl_args", ("Trainer",), "Trainer", "lightning_args"

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        why = super().no_op(value, facts)
        if why:
            return why
        if value.get("benchmark") and facts.get("convolutions") == 0:
            return "the model has no convolutions"
        return ""


def _header(src: SourceEdits, *lines: str) -> None:
    src.header.extend(lines)


@change
class CudnnBenchmark(Change):
    key = "cudnn_benchmark"

    def inject(self, value: Any, rec: Any) -> None:
        import torch

        torch.backends.cudnn.benchmark = True

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("convolutions") == 0:
            return "the model has no convolutions"
        return "the script sets cudnn.benchmark already" if facts.get("cudnn_benchmark") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        _header(src, "torch.backends.cudnn.benchmark = True")


@change
class TF32(Change):
    key = "tf32"

    def inject(self, value: Any, rec: Any) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.set_float32_matmul_precision("high")

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return "the script allows TF32 matmuls already" if facts.get("tf32") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        _header(src, "torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends.cudnn.allow_tf32 = True")


@change
class Autocast(Change):
    """Autocast around the outermost module call (registered before channels_last and the graphs: a graph
    recorded under autocast replays its casts)."""

    key = "autocast"

    def inject(self, value: Any, rec: Any) -> None:
        import torch

        from ._child import _autocast_outer_forward

        _autocast_outer_forward(getattr(torch, value), cache=not rec.settings.get("cuda_graphs"))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return "the script runs its model under autocast already" if facts.get("autocast") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        src.snippets.append(
            f"with torch.autocast('cuda', dtype=torch.{value}):\n"
            "    output = model(inputs)   # wrap the model's forward (and the loss) in the loop"
        )


def _model_lines(src: SourceEdits) -> None:
    """channels_last and CUDA graphs: one insertion after the optimizer is built (or one snippet)."""
    from ._diff import _model_edit

    if "model_lines" in src.done:
        return
    src.done.add("model_lines")
    edit, snippet = _model_edit(src.source, src.tree, src.settings, src.graphed_inputs)
    if edit:
        src.edits.append(edit)
    else:
        src.snippets.append(snippet.rstrip("\n"))


@change
class ChannelsLast(Change):
    key = "channels_last"

    def inject(self, value: Any, rec: Any) -> None:
        import torch

        from ._child import on_first_model_call

        # before the graphs are recorded, so they record the new layout
        on_first_model_call(lambda module, args: module.to(memory_format=torch.channels_last))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("weights_4d") == 0:
            return "the model has no 4-D weights"
        return "the model's weights are channels_last already" if facts.get("channels_last") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        _model_lines(src)


@change
class CudaGraphs(Change):
    key = "cuda_graphs"

    def inject(self, value: Any, rec: Any) -> None:
        from ._child import _graph_first_model

        _graph_first_model(rec)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None:  # it calls model(**inputs): nothing would be recorded
            return (
                "the transformers Trainer calls the model with keywords: CUDA graphs record positional inputs"
            )
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        if not src.settings.get("loader"):  # else the loader's edit adds drop_last with its own keywords
            _loader_edit(src, {"drop_last": True})
        _model_lines(src)


def compile_kwargs() -> dict[str, Any]:
    backend = TUNE_COMPILE_BACKEND.get()
    return {"backend": backend} if backend else {}


def _compiled_already(facts: dict[str, Any]) -> str:
    return "the script compiles its model already (torch.compile)" if facts.get("compiled") else ""


def _ensure_torch_import(src: SourceEdits) -> None:
    imported = any(
        isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
        for n in src.tree.body
    )
    if not imported:
        src.header.insert(0, "import torch")


@change
class CompileModel(Change):
    """torch.compile of a plain loop's model, in place (model.compile(): the state_dict keys stay the same),
    at its first training call; the compile cache lives in the tune folder, so later runs reuse it."""

    key = "compile"

    def inject(self, value: Any, rec: Any) -> None:
        from ._child import on_first_model_call

        def compile_it(module, args) -> None:
            with rec.ours():
                module.compile(**compile_kwargs())

        on_first_model_call(compile_it)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None or facts.get("lightning_args") is not None:
            return "a framework's Trainer runs the model: its own compile candidate (hf_compile, pl_compile) sets it"
        return _compiled_already(facts)

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _line_offsets, _optimizer_statement

        found = _optimizer_statement(src.tree)
        line = "{model}.compile()  # idlehound tune: torch.compile in place (state_dict keys unchanged)\n"
        if found is None:
            src.snippets.append("# once the model is built:\n" + line.format(model="model").rstrip("\n"))
            return
        stmt, model = found
        at = _line_offsets(src.source)[stmt.end_lineno or stmt.lineno]
        src.edits.append((at, at, " " * stmt.col_offset + line.format(model=model)))


@change
class CompileLightningModule(Change):
    """Lightning: trainer.fit(torch.compile(module), ...), as Lightning documents it."""

    key = "pl_compile"

    def inject(self, value: Any, rec: Any) -> None:
        from ._child import after_import

        def patch(module) -> None:
            cls = getattr(module, "Trainer", None)
            if cls is None or getattr(cls.fit, "_idlehound", False):
                return
            fit = cls.fit

            def compiled_fit(self, model, *a, **kw):
                import torch

                with rec.ours():
                    model = torch.compile(model, **compile_kwargs())
                return fit(self, model, *a, **kw)

            compiled_fit._idlehound = True  # type: ignore[attr-defined]
            cls.fit = compiled_fit

        after_import(("lightning.pytorch.trainer.trainer", "pytorch_lightning.trainer.trainer"), patch)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return _compiled_already(facts)

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _calls, _span

        fits = [c for c in _calls(src.tree, ("fit",)) if isinstance(c.func, ast.Attribute)]
        models = [
            c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "model"), None)
            for c in fits
        ]
        models = [m for m in models if m is not None]
        if not models:
            src.snippets.append("trainer.fit(torch.compile(model), ...)")
            return
        for m in models:
            start, end = _span(src.source, m)
            src.edits.append((start, end, f"torch.compile({src.source[start:end]})"))
        _ensure_torch_import(src)


_STEP_HOOKS = (  # LightningModule hooks where self.log logs per step unless told otherwise
    "training_step",
    "on_train_batch_start",
    "on_train_batch_end",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_before_zero_grad",
)


def _is_true(node: Any) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def step_prog_bar_logs(tree: ast.AST) -> list[ast.Call]:
    """The `X.log(..., prog_bar=True)` calls that log per step: with on_step=True, or without on_step in a
    per-step hook (training_step, ...)."""
    found: dict[int, ast.Call] = {}
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for c in ast.walk(fn):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "log"):
                continue
            kw = {k.arg: k.value for k in c.keywords if k.arg}
            step = kw.get("on_step")
            if _is_true(kw.get("prog_bar")) and (_is_true(step) or (step is None and fn.name in _STEP_HOOKS)):
                found[id(c)] = c
    return sorted(found.values(), key=lambda c: (c.lineno, c.col_offset))


@change
class LightningLogPerEpoch(Change):
    """Lightning: a tensor logged with prog_bar=True per step is logged per epoch instead (on_step=False,
    on_epoch=True): Lightning keeps its running mean on the device, and the progress bar no longer reads it
    on the host every batch. The training math is the script's."""

    key = "pl_log_epoch"

    def inject(self, value: Any, rec: Any) -> None:
        rec.overrides[self.key] = True  # applied by the child's LightningModule.log watcher

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("lightning_step_prog_bar"):
            return ""
        return "nothing is logged with self.log(..., prog_bar=True) per step"

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _rewrite_call

        calls = step_prog_bar_logs(src.tree)
        src.edits += [_rewrite_call(src.source, c, {"on_step": False, "on_epoch": True}) for c in calls]
        if not calls:
            src.snippets.append(
                'self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)  # per epoch'
            )


@change
class FusedOptimizer(Change):
    key = "fused_optimizer"

    def inject(self, value: Any, rec: Any) -> None:
        from ._child import _fused_optimizers

        _fused_optimizers()

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("optimizer") not in (None, *FUSED_OPTIMIZERS):
            return f"its optimizer ({facts.get('optimizer')}) is not Adam, AdamW or SGD"
        return (
            "the script's optimizer is fused or foreach already"
            if facts.get("optimizer_fused_or_foreach")
            else ""
        )

    def edit(self, value: Any, src: SourceEdits) -> None:
        from ._diff import _calls, _rewrite_call

        for c in _calls(src.tree, FUSED_OPTIMIZERS):
            if not any(k.arg in ("fused", "foreach") for k in c.keywords):
                src.edits.append(_rewrite_call(src.source, c, {"fused": True}))


@change
class HostThreads(Change):
    key = "threads"

    def inject(self, value: Any, rec: Any) -> None:
        import torch

        torch.set_num_threads(int(value))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        return (
            f"the training process runs {value} intra-op threads already"
            if facts.get("threads") == value
            else ""
        )

    def edit(self, value: Any, src: SourceEdits) -> None:
        _header(src, f"torch.set_num_threads({int(value)})")


def no_op(settings: dict[str, Any], facts: dict[str, Any]) -> str:
    """Why a variant with these settings would change nothing (the first change that says so), or ""."""
    return next(
        (
            why
            for k, ch in CHANGES.items()
            if settings.get(k)
            for why in [ch.no_op(settings[k], facts)]
            if why
        ),
        "",
    )
