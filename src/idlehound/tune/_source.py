"""Edits of a script's source for the diff: where a call, its keywords, the dict behind its **kwargs or the
flag behind a value stand, and the text that changes them. The changes (_changes) make their edits with these."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable


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


def _kw_text(v: Any) -> str:
    return repr(v)


def line_offsets(source: str) -> list[int]:
    """Character offset at which each line starts (1-based line n starts at [n - 1]), and the end."""
    offsets = [0]
    for ln in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(ln))
    return offsets


def rewrite_call(source: str, call: ast.Call, overrides: dict[str, Any]) -> tuple[int, int, str]:
    """(start offset, end offset, new text) for a call with its keywords replaced or added."""
    start, end = span(source, call)
    func = ast.get_source_segment(source, call.func)
    args = [ast.get_source_segment(source, a) or "" for a in call.args]
    kws = {k.arg: ast.get_source_segment(source, k.value) for k in call.keywords if k.arg}
    extra = [f"**{ast.get_source_segment(source, k.value)}" for k in call.keywords if k.arg is None]
    for k, v in overrides.items():
        kws[k] = _kw_text(v)
    parts = args + [f"{k}={v}" for k, v in kws.items()] + extra
    return start, end, f"{func}({', '.join(parts)})"


def span(source: str, node: Any) -> tuple[int, int]:  # an ast node with positions (expr, stmt)
    offsets = line_offsets(source)
    return offsets[node.lineno - 1] + node.col_offset, offsets[node.end_lineno - 1] + node.end_col_offset


def _flag_default(tree: ast.AST, value: ast.AST) -> tuple[ast.AST | None, str]:
    """For a value `args.NAME` (or `int(args.NAME)`), the `default=` node of the argparse option that sets NAME,
    and the option."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "int":
        value = value.args[0] if len(value.args) == 1 and not value.keywords else value
    if not (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)):
        return None, ""
    for c in calls(tree, ("add_argument",)):
        opts = [a.value for a in c.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = next(
            (k.value.value for k in c.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None
        )
        long = [o for o in opts if o.startswith("--")]
        dest = dest or (long[0] if long else opts[0] if opts else "").lstrip("-").replace("-", "_")
        if dest == value.attr:
            default = next((k.value for k in c.keywords if k.arg == "default"), None)
            return default, (long or opts)[0]
    return None, ""


def _dict_sources(
    tree: ast.AST, name: str, depth: int = 0, where: list[ast.AST] | None = None
) -> list[ast.AST] | None:
    """The dict literals and dict(...) calls that fill the variable `name` (None when one cannot be read);
    `where` collects the statements that fill it (assignments and .update calls)."""
    if depth > 3:
        return None
    out: list[ast.AST] = []
    for node in ast.walk(tree):
        value = None
        targets = (
            node.targets
            if isinstance(node, ast.Assign)
            else [node.target]
            if isinstance(node, ast.AugAssign)
            else []
        )
        if isinstance(node, (ast.Assign, ast.AugAssign)) and any(
            isinstance(t, ast.Name) and t.id == name for t in targets
        ):
            value = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "update"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and len(node.args) == 1
        ):
            value = node.args[0]
        if value is None:
            continue
        if where is not None:
            where.append(node)
        got = _dict_value(tree, value, depth, where)
        if got is None:
            return None
        out += got
    return out or None


def _dict_value(
    tree: ast.AST, value: ast.AST, depth: int, where: list[ast.AST] | None = None
) -> list[ast.AST] | None:
    if isinstance(value, ast.Name):
        return _dict_sources(tree, value.id, depth + 1, where)
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "dict"
        and not value.args
        and all(k.arg for k in value.keywords)
    ):
        return [value]
    if isinstance(value, ast.Dict):
        out: list[ast.AST] = [value]
        for k, v in zip(value.keys, value.values):
            if k is None:  # {**other}
                more = _dict_value(tree, v, depth + 1, where)
                if more is None:
                    return None
                out += more
        return out
    return None


def _entries(source: Any, key: str) -> list[ast.AST]:  # ast.Dict or ast.Call
    """The value nodes for key in a dict literal or dict(...) call."""
    if isinstance(source, ast.Dict):
        return [
            v for k, v in zip(source.keys, source.values) if isinstance(k, ast.Constant) and k.value == key
        ]
    return [k.value for k in source.keywords if k.arg == key]


def _quoted(source: str, node: ast.Dict, key: str) -> str:
    """key as a string literal in the quotes the dict already uses."""
    first = next((k for k in node.keys if isinstance(k, ast.Constant)), None)
    text = ast.get_source_segment(source, first) if first is not None else ""
    return f'"{key}"' if (text or "'").startswith('"') else repr(key)


def _append(source: str, node: Any, text: str) -> tuple[int, int, str]:
    """Insert `text` (one more item) at the end of a call's arguments or a dict literal's items."""
    items = (
        (list(node.keys) + list(node.values))
        if isinstance(node, ast.Dict)
        else [*node.args, *(k.value for k in node.keywords)]
    )
    items = [i for i in items if i is not None]
    if items:
        at = max(span(source, i)[1] for i in items)
        return at, at, ", " + text
    at = span(source, node)[1] - 1  # just before the closing bracket
    return at, at, text


def _statement_lists(parents: dict[ast.AST, ast.AST], node: ast.AST) -> list[tuple[int, str]]:
    """The statement lists (parent id, field) that hold node or one of its ancestors, innermost first."""
    out = []
    child = node
    while child in parents:
        parent = parents[child]
        for name in ("body", "orelse", "finalbody", "handlers"):
            held = getattr(parent, name, None)
            if isinstance(held, list) and any(x is child for x in held):
                out.append((id(parent), name))
        child = parent
    return out


def _always_filled(tree: ast.AST, call: ast.Call, where: list[ast.AST]) -> bool:
    """Whether every statement that fills the call's **kwargs runs whenever the call runs: each sits in a
    statement list that also holds the call (not under an `if`, another function, a `try`...)."""
    parents = {c: n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    around = set(_statement_lists(parents, call))
    return all(bool(held := _statement_lists(parents, w)) and held[0] in around for w in where)


def loader_edits(
    source: str, tree: ast.AST, call: ast.Call, loader: dict[str, Any], notes: list[str]
) -> list[tuple[int, int, str]]:
    """Set each loader option where the script sets it: the keyword, the dict passed as **kwargs, or the
    default of the script's own command-line flag; options it does not set are added beside the others.

    When the **kwargs dict is filled only on some branches (`if use_accel: kwargs.update(...)`, `{...} if c
    else {}`, a helper's own **kw), an edit inside it or beside it would hold on one branch only (a keyword
    passed twice, prefetch_factor without workers): the options are merged into the **kwargs at the call,
    `**{**kwargs, "num_workers": 2, ...}`, which holds on every branch."""
    splats: list[ast.AST] = [k.value for k in call.keywords if k.arg is None]
    sources, held = _splat_sources(tree, call, splats)
    texts = {k: repr(v) for k, v in loader.items()}
    edits: list[tuple[int, int, str]] = []
    merged: list[str] = []
    for key, v in loader.items():
        values: list[ast.AST] = [k.value for k in call.keywords if k.arg == key] or [
            e for src in (sources if held else []) for e in _entries(src, key)
        ]
        if key == "num_workers" and values and _flag_default(tree, values[0])[1]:
            # the count stays the flag's: options that need workers follow it, so `--workers 0` still works
            flag = ast.get_source_segment(source, values[0])
            texts.update(
                persistent_workers=f"{flag} > 0",
                prefetch_factor=f"{loader.get('prefetch_factor')!r} if {flag} > 0 else None",
            )
        if not values and splats and not held:
            merged.append(key)
            continue
        if not values:
            edits.append(_added(source, call, sources, len(splats), f"{key}", texts[key]))
        edits += _value_edits(source, tree, key, v, values, texts[key], notes)
    if merged:
        edits.append(_merge_into(source, splats, sources, {k: texts[k] for k in merged}))
    return edits


def _splat_sources(tree: ast.AST, call: ast.Call, splats: list[ast.AST]) -> tuple[list[ast.AST], bool]:
    """The dicts that fill the call's **kwargs, and whether they can be read and are filled on every path."""
    sources: list[ast.AST] = []
    where: list[ast.AST] = []
    readable = True
    for sp in splats:
        found = _dict_value(tree, sp, 0, where)
        readable = readable and found is not None
        sources += found or []
    return sources, readable and _always_filled(tree, call, where)


def _added(
    source: str, call: ast.Call, sources: list[ast.AST], splats: int, key: str, text: str
) -> tuple[int, int, str]:
    """An option the script does not set: into its one **kwargs dict literal, else as a keyword of the call."""
    dicts = [src for src in sources if isinstance(src, ast.Dict)]
    if dicts and splats == 1:
        return _append(source, dicts[0], f"{_quoted(source, dicts[0], key)}: {text}")
    return _append(source, call, f"{key}={text}")


def _value_edits(
    source: str, tree: ast.AST, key: str, v: Any, values: list[ast.AST], text: str, notes: list[str]
) -> list[tuple[int, int, str]]:
    """Each place the script sets the option: its value replaced, or its flag's default (with a note)."""
    edits = []
    for value in values:
        default, flag = _flag_default(tree, value)
        if default is not None:
            edits.append((*span(source, default), repr(v)))
            notes.append(
                f"{key}: the default of the script's own {flag} flag is now {v!r}; "
                f"--{flag.lstrip('-')} still overrides it"
            )
        elif flag:
            notes.append(f"{key}: set by the script's {flag} flag, which has no default: pass {flag} {v!r}")
        else:
            edits.append((*span(source, value), text))
    return edits


def _merge_into(
    source: str, splats: list[ast.AST], sources: list[ast.AST], texts: dict[str, str]
) -> tuple[int, int, str]:
    """`**kwargs` -> `**{**kwargs, "key": value, ...}` on the last **kwargs of the call (later keys win)."""
    dicts = [src for src in sources if isinstance(src, ast.Dict)]
    quote: Callable[[str], str] = (lambda k: _quoted(source, dicts[0], k)) if dicts else (lambda k: f'"{k}"')
    last = splats[-1]
    items = ", ".join(f"{quote(k)}: {t}" for k, t in texts.items())
    return (*span(source, last), f"{{**{ast.get_source_segment(source, last)}, {items}}}")


def calls(tree: ast.AST, names: tuple[str, ...]) -> list[ast.Call]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in names:
                out.append(node)
    return sorted(out, key=lambda c: (c.lineno, c.col_offset))


def optimizer_statement(tree: ast.Module) -> tuple[ast.stmt, str] | None:
    """The first statement building an optimizer from `NAME.parameters()`, and NAME."""
    for stmt in ast.walk(tree):
        if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call) or not stmt.value.args:
            continue
        a = stmt.value.args[0]
        if (
            isinstance(a, ast.Call)
            and isinstance(a.func, ast.Attribute)
            and a.func.attr == "parameters"
            and isinstance(a.func.value, ast.Name)
        ):
            return stmt, a.func.value.id
    return None


def keywords_edit(src: SourceEdits, names: tuple[str, ...], what: str, values: dict[str, Any]) -> None:
    """Set keyword options on every call of one of `names` (a DataLoader, a Trainer's arguments) where the
    script sets them (loader_edits); a snippet `what(..., k=v)` when the script makes no such call."""
    found = calls(src.tree, names)
    for c in found:
        src.edits += loader_edits(src.source, src.tree, c, values, src.notes)
    if not found:
        src.snippets.append(f"{what}(..., " + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")")
