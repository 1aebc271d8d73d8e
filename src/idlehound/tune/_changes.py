"""The registry of tune's changes: each class owns one settings key, and with it how the child injects the change
at start-up, when the change would do nothing in this script, and how the diff makes it in the script's source.

Adding a change is one class here (registered with @change) and its candidate(s) in _candidates; the child
(_child.apply), the no-op test (_candidates.not_applicable) and the diff (_diff.changed_source) look it up here.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from typing import Any, Callable

COMPILE_BACKEND_ENV = "IDLEHOUND_TUNE_COMPILE_BACKEND"  # e.g. "eager": no compiler needed (tests, CPU machines)


@dataclass
class SourceEdits:
    """What the diff collects for one script: replacements (start, end, text), lines after the imports,
    snippets for what cannot be placed, and notes."""

    source: str
    tree: ast.Module
    edits: list[tuple[int, int, str]] = field(default_factory=list)
    header: list[str] = field(default_factory=list)
    snippets: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


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


CHANGES: dict[str, Change] = {}


def change(cls: type[Change]) -> type[Change]:
    CHANGES[cls.key] = cls()
    return cls


def compile_kwargs() -> dict[str, Any]:
    backend = os.environ.get(COMPILE_BACKEND_ENV)
    return {"backend": backend} if backend else {}


def _compiled_already(facts: dict[str, Any]) -> str:
    return "the script compiles its model already (torch.compile)" if facts.get("compiled") else ""


def _ensure_torch_import(src: SourceEdits) -> None:
    imported = any(isinstance(n, ast.Import) and any(a.name == "torch" and a.asname is None for a in n.names)
                   for n in src.tree.body)
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
        at = _line_offsets(src.source)[stmt.end_lineno]
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
        models = [c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "model"), None)
                  for c in fits]
        models = [m for m in models if m is not None]
        if not models:
            src.snippets.append("trainer.fit(torch.compile(model), ...)")
            return
        for m in models:
            start, end = _span(src.source, m)
            src.edits.append((start, end, f"torch.compile({src.source[start:end]})"))
        _ensure_torch_import(src)


def injections(settings: dict[str, Any]) -> list[Callable[[Any], None]]:
    """The registered changes the settings ask for, as functions of the child's Recorder."""
    return [lambda rec, ch=ch: ch.inject(settings[ch.key], rec) for ch in CHANGES.values() if settings.get(ch.key)]
