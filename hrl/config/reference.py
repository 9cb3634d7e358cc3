"""Every config key with its type, default and meaning, read from the schema itself.

The meaning of a key is the comment the schema writes beside it (on its line, or the comment
block right above it), so the reference cannot drift from the code: a key added to a section
of `schema.py` (or to an agent's config dataclass) appears here with whatever its comment
says. `config_keys()` returns the rows; `config_reference_markdown()` renders them as the
documentation site's "Config keys" page (tests/test_docs.py checks that every key is listed).

Cost: one `inspect.getsource` and one tokenize pass per dataclass; nothing here runs at
training time.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import textwrap
import tokenize
from typing import Any

from hrl.config.schema import RunConfig, agent_config_class

ALGOS = ("dqn", "ddpg")


@dataclasses.dataclass(frozen=True)
class KeyDoc:
    """One config key: its dotted name, annotation as written, default and meaning ("" where
    the source gives no comment)."""

    key: str
    type: str
    default: Any
    meaning: str


def _comments(cls) -> tuple[dict[str, str], dict[str, str]]:
    """The fields of dataclass `cls`: (annotation text, comment) by name, from its source."""
    source = textwrap.dedent(inspect.getsource(cls))
    lines = source.splitlines()
    inline: dict[int, str] = {}  # 1-based line -> trailing or whole-line comment text
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            inline[tok.start[0]] = tok.string.lstrip("#").strip()
    annotations, meanings = {}, {}
    body = ast.parse(source).body[0].body
    group, last_line = "", 0  # a comment block above a run of fields, and where that run is
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        name, line = node.target.id, node.lineno
        annotations[name] = ast.unparse(node.annotation)
        above = []
        row = line - 1
        while row >= 1 and lines[row - 1].strip().startswith("#"):
            above.insert(0, inline.get(row, ""))
            row -= 1
        if above:
            group = " ".join(part for part in above if part)
        elif row != last_line:  # a blank line or other code ends the block's run
            group = ""
        own = inline.get(line, "")
        # Its own comment; else the block above it; else the block above the run of fields
        # it belongs to (e.g. "Epsilon-greedy: ..." above eps_start, eps_end, eps_decay_steps).
        meanings[name] = " ".join(part for part in (*above, own) if part) or group
        last_line = node.end_lineno or line
    return annotations, meanings


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None


def _rows(cls, prefix: str) -> list[KeyDoc]:
    annotations, meanings = _comments(cls)
    rows = []
    for field in dataclasses.fields(cls):
        default = _default(field)
        if dataclasses.is_dataclass(default):  # a section: its keys, one level down
            rows.extend(_rows(type(default), f"{prefix}{field.name}."))
            continue
        rows.append(KeyDoc(f"{prefix}{field.name}", annotations.get(field.name, ""), default,
                           meanings.get(field.name, "")))
    return rows


def config_keys() -> dict[str, list[KeyDoc]]:
    """The keys by section: "run" (top level, `env.*`, `replay.*`, `train.*`, `log.*`,
    `placement`) and one "agent (<algo>)" per algorithm (`agent.*` when `algo: <algo>`)."""
    run = [row for row in _rows(RunConfig, "") if row.key != "agent"]
    out = {"run": run}
    for algo in ALGOS:
        out[f"agent ({algo})"] = _rows(agent_config_class(algo), "agent.")
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _show_default(value: Any) -> str:
    if isinstance(value, str):
        return f'`"{value}"`'
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):
        return f"`{list(value)}`"
    return f"`{value!r}`"


def config_reference_markdown() -> str:
    """The "Config keys" page: one table per section, every key with type, default, meaning."""
    out = [
        "# Config keys",
        "",
        "Generated from `hrl/config/schema.py` and the agents' config dataclasses when the site",
        "is built (`hrl/config/reference.py`): the meaning is the comment beside each key in the",
        "source. Set a key in the YAML file or on the command line with",
        "`--set section.key=value`; a key that does not exist, a value of the wrong type or out",
        "of range stops the run before anything compiles, with one line naming the key.",
        "",
    ]
    tables: dict[str, list[KeyDoc]] = {}
    for section, rows in config_keys().items():
        for row in rows:  # the run's keys by their section: top level, env, replay, ...
            name = section if section != "run" else (
                f"`{row.key.split('.')[0]}`" if "." in row.key else "Top level")
            tables.setdefault(name, []).append(row)
    for name, rows in tables.items():
        out += [f"## {name.capitalize() if name.startswith('agent') else name}", ""]
        if name.startswith("agent"):
            algo = name.split("(")[1].rstrip(")")
            out += [f"The `agent` section when `algo: {algo}`.", ""]
        out += ["| key | type | default | meaning |", "| --- | --- | --- | --- |"]
        for row in rows:
            out.append(f"| `{row.key}` | `{_cell(row.type)}` | {_cell(_show_default(row.default))}"
                       f" | {_cell(row.meaning) or '-'} |")
        out.append("")
    return "\n".join(out)
