"""The code change that makes a winning combination permanent: a unified diff where the lines can be found."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path
from typing import Any


def _kw_text(v: Any) -> str:
    return repr(v)


def _line_offsets(source: str) -> list[int]:
    """Character offset at which each line starts (1-based line n starts at [n - 1]), and the end."""
    offsets = [0]
    for ln in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(ln))
    return offsets


def _rewrite_call(source: str, call: ast.Call, overrides: dict[str, Any]) -> tuple[int, int, str]:
    """(start offset, end offset, new text) for a call with its keywords replaced or added."""
    offsets = _line_offsets(source)
    start = offsets[call.lineno - 1] + call.col_offset
    end = offsets[call.end_lineno - 1] + call.end_col_offset
    func = ast.get_source_segment(source, call.func)
    args = [ast.get_source_segment(source, a) for a in call.args]
    kws = {k.arg: ast.get_source_segment(source, k.value) for k in call.keywords if k.arg}
    extra = [f"**{ast.get_source_segment(source, k.value)}" for k in call.keywords if k.arg is None]
    for k, v in overrides.items():
        kws[k] = _kw_text(v)
    parts = args + [f"{k}={v}" for k, v in kws.items()] + extra
    return start, end, f"{func}({', '.join(parts)})"


def _calls(tree: ast.AST, names: tuple[str, ...]) -> list[ast.Call]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in names:
                out.append(node)
    return sorted(out, key=lambda c: (c.lineno, c.col_offset))


def _batch_copies(tree: ast.AST) -> list[ast.Call]:
    """`x.to(...)` / `x.cuda(...)` calls on a name that a for loop binds (the batch), without non_blocking."""
    bound = {n.id for loop in ast.walk(tree) if isinstance(loop, ast.For)
             for n in ast.walk(loop.target) if isinstance(n, ast.Name)}
    return [c for c in _calls(tree, ("to", "cuda"))
            if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)
            and c.func.value.id in bound and not any(k.arg == "non_blocking" for k in c.keywords)]


_GRAPH_NOTE = ("# idlehound tune: CUDA graphs record the model's forward and backward once and replay them; "
               "every\n# batch must have this shape (drop_last=True) and each step overwrites the outputs: "
               "clone any you keep\n")


def _graph_line(model: str, inputs: list[dict[str, Any]]) -> str:
    def zeros(x: dict[str, Any]) -> str:
        dtype = "" if x["dtype"] == "float32" else f", dtype=torch.{x['dtype']}"
        return f"torch.zeros({', '.join(map(str, x['shape']))}, device='cuda'{dtype})"

    return f"{model} = torch.cuda.make_graphed_callables({model}, ({', '.join(map(zeros, inputs))},))"


def _optimizer_statement(tree: ast.Module) -> tuple[ast.stmt, str] | None:
    """The first statement building an optimizer from `NAME.parameters()`, and NAME."""
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call) or not stmt.value.args:
            continue
        a = stmt.value.args[0]
        if (isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr == "parameters"
                and isinstance(a.func.value, ast.Name)):
            return stmt, a.func.value.id
    return None


def _model_lines(model: str, settings: dict[str, Any], inputs: list[dict[str, Any]] | None) -> str:
    """What to run once the model is on the GPU and its optimizer is built."""
    out = ""
    if settings.get("channels_last"):
        out += f"{model} = {model}.to(memory_format=torch.channels_last)  # idlehound tune\n"
    if settings.get("cuda_graphs"):
        shapes = inputs or [{"shape": ["batch", "..."], "dtype": "float32"}]
        out += _GRAPH_NOTE + _graph_line(model, shapes) + "\n"
    return out


def _model_edit(source: str, tree: ast.Module, settings: dict[str, Any],
                inputs: list[dict[str, Any]] | None) -> tuple[tuple[int, int, str] | None, str]:
    """(an insertion after the optimizer's statement, or None and a snippet instead)."""
    found = _optimizer_statement(tree)
    if found and (inputs or not settings.get("cuda_graphs")):
        stmt, model = found
        pad = " " * stmt.col_offset
        text = "".join(pad + ln for ln in _model_lines(model, settings, inputs).splitlines(keepends=True))
        at = _line_offsets(source)[stmt.end_lineno]
        return (at, at, text), ""
    where = "# once the model is on the GPU and its optimizer is built:\n"
    return None, where + _model_lines("model", settings, inputs)


def make_diff(script: Path, settings: dict[str, Any],
              graphed_inputs: list[dict[str, Any]] | None = None) -> tuple[str, list[str]]:
    """(unified diff, snippets for what could not be placed in the file)."""
    source = script.read_text(encoding="utf-8")
    tree = ast.parse(source)
    edits: list[tuple[int, int, str]] = []
    snippets: list[str] = []
    loader = dict(settings.get("loader") or {})
    if settings.get("cuda_graphs"):
        loader["drop_last"] = True  # a short last batch could not replay the recorded shapes
    if loader:
        calls = _calls(tree, ("DataLoader",))
        if calls:
            edits += [_rewrite_call(source, c, loader) for c in calls]
        else:
            snippets.append("DataLoader(..., " + ", ".join(f"{k}={v!r}" for k, v in loader.items()) + ")")
    if settings.get("fused_optimizer"):
        for c in _calls(tree, ("Adam", "AdamW", "SGD")):
            if not any(k.arg in ("fused", "foreach") for k in c.keywords):
                edits.append(_rewrite_call(source, c, {"fused": True}))
    if settings.get("non_blocking"):
        copies = _batch_copies(tree)
        edits += [_rewrite_call(source, c, {"non_blocking": True}) for c in copies]
        if not copies:
            snippets.append("inputs = inputs.to(device, non_blocking=True)   # each batch tensor from the loader")
    header = []
    if settings.get("cudnn_benchmark"):
        header.append("torch.backends.cudnn.benchmark = True")
    if settings.get("tf32"):
        header.append("torch.backends.cuda.matmul.allow_tf32 = True")
        header.append("torch.backends.cudnn.allow_tf32 = True")
    if settings.get("threads"):
        header.append(f"torch.set_num_threads({int(settings['threads'])})")
    if settings.get("autocast"):
        snippets.append(f"with torch.autocast('cuda', dtype=torch.{settings['autocast']}):\n"
                        "    output = model(inputs)   # wrap the model's forward (and the loss) in the loop")
    if settings.get("cuda_graphs") or settings.get("channels_last"):
        edit, snippet = _model_edit(source, tree, settings, graphed_inputs)
        if edit:
            edits.append(edit)
        else:
            snippets.append(snippet.rstrip("\n"))
    new = source
    for start, end, text in sorted(edits, reverse=True):
        new = new[:start] + text + new[end:]
    if header:
        imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
        at = imports[-1].end_lineno if imports else 0
        lines = new.splitlines(keepends=True)
        lines[at:at] = [h + "  # idlehound tune\n" for h in header]
        new = "".join(lines)
    diff = "".join(difflib.unified_diff(source.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=f"a/{script.name}", tofile=f"b/{script.name}"))
    return diff, snippets
