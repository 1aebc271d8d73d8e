"""The graphs and compile family: the model's layout (channels_last), CUDA graphs of its forward and backward,
and torch.compile (of a plain loop's model, or of a Lightning module): the changes made at the model's first
training call in the child, and after the optimizer's statement in the diff."""

from __future__ import annotations

import ast
from typing import Any, Callable

from ...settings import TUNE_COMPILE_BACKEND
from .._hooks import after_import, on_first_model_call
from .._recorder import Recorder
from .._source import SourceEdits, calls, keywords_edit, line_offsets, optimizer_statement, span
from ._base import Change, change

# make_graphed_callables(module, sample inputs) or a stand-in for it (tests)
_MakeGraphed = Callable[[Any, tuple[Any, ...]], Any]
COMPILE_BACKEND_ENV = TUNE_COMPILE_BACKEND.name  # e.g. "eager": no compiler needed (tests, CPU)


def _model_lines(src: SourceEdits) -> None:
    """channels_last and CUDA graphs: one insertion after the optimizer is built (or one snippet)."""
    if "model_lines" in src.done:
        return
    src.done.add("model_lines")
    edit, snippet = _model_edit(src.source, src.tree, src.settings, src.graphed_inputs)
    if edit:
        src.edits.append(edit)
    else:
        src.snippets.append(snippet.rstrip("\n"))


@change("channels_last", order=80)
class ChannelsLast(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        import torch

        # before the graphs are recorded, so they record the new layout
        on_first_model_call(lambda module, args: module.to(memory_format=torch.channels_last))

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("weights_4d") == 0:
            return "the model has no 4-D weights"
        return "the model's weights are channels_last already" if facts.get("channels_last") else ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        _model_lines(src)


@change("cuda_graphs", order=90)
class CudaGraphs(Change):
    def inject(self, value: Any, rec: Recorder) -> None:
        graph_first_model(rec)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None:  # it calls model(**inputs): nothing would be recorded
            return (
                "the transformers Trainer calls the model with keywords: CUDA graphs record positional inputs"
            )
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        if not src.settings.get("loader"):  # else the loader's edit adds drop_last with its own keywords
            keywords_edit(src, ("DataLoader",), "DataLoader", {"drop_last": True})
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


@change("compile", order=100)
class CompileModel(Change):
    """torch.compile of a plain loop's model, in place (model.compile(): the state_dict keys stay the same),
    at its first training call; the compile cache lives in the tune folder, so later runs reuse it."""

    def inject(self, value: Any, rec: Recorder) -> None:
        def compile_it(module: Any, args: Any) -> None:
            with rec.ours():
                module.compile(**compile_kwargs())

        on_first_model_call(compile_it)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("transformers_args") is not None or facts.get("lightning_args") is not None:
            return "a framework's Trainer runs the model: its own compile candidate (hf_compile, pl_compile) sets it"
        return _compiled_already(facts)

    def edit(self, value: Any, src: SourceEdits) -> None:
        found = optimizer_statement(src.tree)
        line = "{model}.compile()  # idlehound tune: torch.compile in place (state_dict keys unchanged)\n"
        if found is None:
            src.snippets.append("# once the model is built:\n" + line.format(model="model").rstrip("\n"))
            return
        stmt, model = found
        at = line_offsets(src.source)[stmt.end_lineno or stmt.lineno]
        src.edits.append((at, at, " " * stmt.col_offset + line.format(model=model)))


@change("pl_compile", order=110)
class CompileLightningModule(Change):
    """Lightning: trainer.fit(torch.compile(module), ...), as Lightning documents it."""

    def inject(self, value: Any, rec: Recorder) -> None:
        def patch(module: Any) -> None:
            cls = getattr(module, "Trainer", None)
            if cls is None or getattr(cls.fit, "_idlehound", False):
                return
            fit = cls.fit

            def compiled_fit(self: Any, model: Any, *a: Any, **kw: Any) -> Any:
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
        fits = [c for c in calls(src.tree, ("fit",)) if isinstance(c.func, ast.Attribute)]
        models = [
            c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "model"), None)
            for c in fits
        ]
        models = [m for m in models if m is not None]
        if not models:
            src.snippets.append("trainer.fit(torch.compile(model), ...)")
            return
        for m in models:
            start, end = span(src.source, m)
            src.edits.append((start, end, f"torch.compile({src.source[start:end]})"))
        _ensure_torch_import(src)


_GRAPH_NOTE = (
    "# idlehound tune: CUDA graphs record the model's forward and backward once and replay them; "
    "every\n# batch must have this shape (drop_last=True) and each step overwrites the outputs: "
    "clone any you keep\n"
)


def _graph_line(model: str, inputs: list[dict[str, Any]]) -> str:
    def zeros(x: dict[str, Any]) -> str:
        dtype = "" if x["dtype"] == "float32" else f", dtype=torch.{x['dtype']}"
        return f"torch.zeros({', '.join(map(str, x['shape']))}, device='cuda'{dtype})"

    return f"{model} = torch.cuda.make_graphed_callables({model}, ({', '.join(map(zeros, inputs))},))"


def _model_text(model: str, settings: dict[str, Any], inputs: list[dict[str, Any]] | None) -> str:
    """What to run once the model is on the GPU and its optimizer is built."""
    out = ""
    if settings.get("channels_last"):
        out += f"{model} = {model}.to(memory_format=torch.channels_last)  # idlehound tune\n"
    if settings.get("cuda_graphs"):
        shapes = inputs or [{"shape": ["batch", "..."], "dtype": "float32"}]
        out += _GRAPH_NOTE + _graph_line(model, shapes) + "\n"
    return out


def _model_edit(
    source: str, tree: ast.Module, settings: dict[str, Any], inputs: list[dict[str, Any]] | None
) -> tuple[tuple[int, int, str] | None, str]:
    """(an insertion after the optimizer's statement, or None and a snippet instead)."""
    found = optimizer_statement(tree)
    if found and (inputs or not settings.get("cuda_graphs")):
        stmt, model = found
        pad = " " * stmt.col_offset
        text = "".join(pad + ln for ln in _model_text(model, settings, inputs).splitlines(keepends=True))
        at = line_offsets(source)[stmt.end_lineno or stmt.lineno]
        return (at, at, text), ""
    where = "# once the model is on the GPU and its optimizer is built:\n"
    return None, where + _model_text("model", settings, inputs)


def graph_first_model(rec: Recorder, make_graphed: _MakeGraphed | None = None) -> None:
    """Record the model's forward and backward as CUDA graphs at its first training call (which itself runs
    eagerly); replay them after."""

    def record(module: Any, args: Any) -> None:
        rec.graphed_inputs = graph_module(module, args, make_graphed or _make_graphed_thread_local)

    on_first_model_call(record)


def _make_graphed_thread_local(module: Any, sample: tuple[Any, ...]) -> Any:
    """make_graphed_callables, recording in "thread_local" capture mode: the DataLoader's pin-memory thread
    already runs and calls CUDA (pinned allocations, event queries) while the model is recorded, which the
    default "global" mode turns into a failed capture. (A script that records before its loop starts, as the
    diff does, has no such thread yet.)"""
    import inspect

    import torch

    make = torch.cuda.make_graphed_callables
    if "capture_error_mode" in inspect.signature(make).parameters:
        return make(module, sample, capture_error_mode="thread_local")
    original = torch.cuda.graph

    # older torch: make_graphed_callables opens torch.cuda.graph(...) itself (a base known at run time only)
    class graph(original):  # type: ignore[valid-type,misc]
        def __init__(self, *a: Any, **kw: Any) -> None:
            kw.setdefault("capture_error_mode", "thread_local")
            super().__init__(*a, **kw)

    torch.cuda.graph = graph
    try:
        return make(module, sample)
    finally:
        torch.cuda.graph = original


def graph_module(module: Any, args: tuple[Any, ...], make_graphed: _MakeGraphed) -> list[dict[str, Any]]:
    """Replace module.forward by a dispatcher: calls shaped like `args` replay the recorded graphs, any other
    call (another batch size, eval mode, no_grad, keywords) runs the module's own forward."""
    import torch

    if not args or not all(isinstance(a, torch.Tensor) for a in args):
        raise TypeError("cuda_graphs: the model's inputs are not all tensors; nothing was recorded")
    sample = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in args)
    spec = [(a.shape, a.dtype, a.device, a.requires_grad) for a in sample]
    # The recording's warm-up runs move BatchNorm's running statistics: put them back so the math is the script's.
    saved = [(b, b.detach().clone()) for b in module.buffers()]
    eager = module.forward
    make_graphed(module, sample)
    with torch.no_grad():
        for b, value in saved:
            b.copy_(value)
    graphed = module.forward

    def forward(*a: Any, **kw: Any) -> Any:
        same = (
            not kw
            and len(a) == len(spec)
            and module.training
            and torch.is_grad_enabled()
            and all(
                isinstance(x, torch.Tensor) and (x.shape, x.dtype, x.device, x.requires_grad) == s
                for x, s in zip(a, spec)
            )
        )
        return graphed(*a) if same else eager(*a, **kw)

    module.forward = forward
    return [{"shape": list(a.shape), "dtype": str(a.dtype).replace("torch.", "")} for a in sample]
