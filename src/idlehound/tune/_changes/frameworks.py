"""The frameworks' settings: the keywords of transformers' TrainingArguments and of Lightning's Trainer (set
where the script builds them; the child's watchers apply them), and Lightning's per-step progress-bar logging."""

from __future__ import annotations

import ast
from typing import Any

from .._recorder import Recorder
from .._source import SourceEdits, keywords_edit, rewrite_call
from ._base import Change, change


class _TrainerArgs(Change):
    """Keywords of a framework's Trainer object, injected when the script builds it (the child's watcher)."""

    calls: tuple[str, ...] = ()
    what = ""
    fact = ""

    def inject(self, value: Any, rec: Recorder) -> None:
        rec.overrides[self.key] = dict(value)

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        set_by = facts.get(self.fact)
        if set_by is not None and all(set_by.get(k) == v for k, v in value.items()):
            return (
                "the script's Trainer sets " + ", ".join(f"{k}={v!r}" for k, v in value.items()) + " already"
            )
        return ""

    def edit(self, value: Any, src: SourceEdits) -> None:
        keywords_edit(src, self.calls, self.what, value)


@change("hf_args", order=30)
class TrainingArgs(_TrainerArgs):
    calls, what, fact = (
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


@change("pl_args", order=40)
class LightningTrainerArgs(_TrainerArgs):
    calls, what, fact = ("Trainer",), "Trainer", "lightning_args"

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        why = super().no_op(value, facts)
        if why:
            return why
        if value.get("benchmark") and facts.get("convolutions") == 0:
            return "the model has no convolutions"
        return ""


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


@change("pl_log_epoch", order=120)
class LightningLogPerEpoch(Change):
    """Lightning: a tensor logged with prog_bar=True per step is logged per epoch instead (on_step=False,
    on_epoch=True): Lightning keeps its running mean on the device, and the progress bar no longer reads it
    on the host every batch. The training math is the script's."""

    def inject(self, value: Any, rec: Recorder) -> None:
        rec.overrides[self.key] = True  # applied by the child's LightningModule.log watcher

    def no_op(self, value: Any, facts: dict[str, Any]) -> str:
        if facts.get("lightning_step_prog_bar"):
            return ""
        return "nothing is logged with self.log(..., prog_bar=True) per step"

    def edit(self, value: Any, src: SourceEdits) -> None:
        calls = step_prog_bar_logs(src.tree)
        src.edits += [rewrite_call(src.source, c, {"on_step": False, "on_epoch": True}) for c in calls]
        if not calls:
            src.snippets.append(
                'self.log("train_loss", loss, prog_bar=True, on_step=False, on_epoch=True)  # per epoch'
            )
