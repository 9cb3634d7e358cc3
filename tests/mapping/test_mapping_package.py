"""The profiler's package: typed rows, one spelling per device, no import cycles."""

import ast
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAPPING = ROOT / "hrl" / "mapping"
# A committed profile written when the second CPU device was spelled `cpu1`.
OLD_PROFILE = ROOT / "experiments" / "results" / "mapping" / "run10" / "profile"


def test_a_profile_row_round_trips_through_dict_and_json():
    from hrl.mapping.profile.rows import ProfileRow

    timed = {"call": "sample", "placement": "cpu", "mode": "dispatched",
             "env": "gymnax:CartPole-v1", "algo": "dqn", "num_envs": 1, "width": 32,
             "batch": 16, "capacity": 1024, "fanout": 16, "depth": 3, "work": 768.0,
             "latency_s": 2e-5, "p10_s": 1e-5, "p90_s": 3e-5, "cpu_s": 2e-5,
             "context": "loop", "repeats": 5, "dispatch": "sync"}
    loop = {**timed, "call": "loop:fused", "placement": "loop", "mode": "loop", "rollout": 4,
            "sgd": 1, "iterations": 80}
    overlap = {**timed, "call": "overlap:loop", "placement": "pocl", "train_s": 1e-4,
               "replay_s": 5e-5, "saved_s": 1e-5, "pipelined_saved_s": 2e-5,
               "not_a_field": [1, 2]}
    table = {"call": "rtl-cycles", "placement": "rtl-cycles", "mode": "table",
             "source": "sim/cycles.csv", "K": "4", "D": "4", "depth": "odd column"}
    for data in (timed, loop, overlap, table):
        row = ProfileRow.from_dict(data)
        assert row.to_dict() == data
        assert ProfileRow.from_dict(json.loads(json.dumps(row.to_dict()))) == row
    row = ProfileRow.from_dict(overlap)
    assert (row.call, row.train_s, row.extra) == ("overlap:loop", 1e-4, {"not_a_field": [1, 2]})
    assert row["saved_s"] == 1e-5 and row.get("rollout") is None and "rollout" not in row
    assert ProfileRow.from_dict(table).extra["depth"] == "odd column"  # CSV columns stay apart
    assert ProfileRow.from_dict(table).depth is None
    with pytest.raises(KeyError):
        row["rollout"]
    with pytest.raises(AttributeError):
        row.call = "train:dqn"  # frozen


def test_write_and_load_keep_a_profile_s_rows_as_they_were(tmp_path):
    from hrl.mapping.profile import load_profile, write_profile
    from hrl.mapping.profile.rows import ProfileRow

    rows = [{"call": "link:host", "placement": "host", "mode": "host", "work": 1024.0,
             "latency_s": 1e-6, "repeats": 3},
            {"call": "sample", "placement": "cpu1", "mode": "dispatched", "batch": 4,
             "work": 8.0, "latency_s": 2e-6}]
    write_profile([ProfileRow.from_dict(r) for r in rows], tmp_path, {"algo": "dqn"},
                  rounds=[rows, rows])
    on_disk = json.loads((tmp_path / "profile.json").read_text())
    assert on_disk["rows"] == [rows[0], {**rows[1], "placement": "cpu:1"}]
    loaded = load_profile(tmp_path)
    assert all(isinstance(r, ProfileRow) for r in loaded["rows"] + loaded["rounds"][1])
    assert [r.placement for r in loaded["rows"]] == ["host", "cpu:1"]


def test_a_committed_profile_with_the_old_device_spelling_loads_normalized():
    from hrl.mapping.devices import SECOND_CPU
    from hrl.mapping.plan import plan
    from hrl.mapping.profile import load_profile
    from hrl.mapping.workload import Workload

    raw = json.loads((OLD_PROFILE / "profile.json").read_text())
    old = {r["placement"] for r in raw["rows"]}
    assert "cpu1" in old and SECOND_CPU not in old
    profile = load_profile(OLD_PROFILE)
    places = {r.placement for r in profile["rows"]}
    assert SECOND_CPU in places and "cpu1" not in places
    assert places == {SECOND_CPU if p == "cpu1" else p for p in old}
    assert all(r.placement != "cpu1" for rs in profile.get("rounds", []) for r in rs)
    assert len(profile["rows"]) == len(raw["rows"])
    # the model prices the device under its one name, and an old name asked for reads as it
    w = Workload(hidden=(64, 64), batch_size=64, num_envs=16)
    for devices in (["cpu", "cpu:1"], ["cpu", "cpu1"]):
        p = plan(w, profile, devices=devices)
        assert SECOND_CPU in {x.name for x in p.placements}


def _top_level_imports(path: Path, module: str) -> set[str]:
    """The hrl modules `path` imports when it is imported (module-level statements, also
    inside a module-level if/try; not inside functions), each with the packages above it
    that the import runs, except the importer's own."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()

    def visit(nodes):
        for node in nodes:
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                found.add(base)
                found.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(getattr(node, "orelse", []))
                for h in getattr(node, "handlers", []):
                    visit(h.body)

    visit(tree.body)
    out = set()
    for name in found:
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            if not (module == prefix or module.startswith(prefix + ".")):
                out.add(prefix)
    return out


def _mapping_graph() -> dict[str, set[str]]:
    modules = {}
    for path in MAPPING.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        modules[".".join(parts)] = path
    return {m: {t for t in _top_level_imports(p, m) if t in modules}
            for m, p in modules.items()}


def test_no_module_in_hrl_mapping_imports_one_that_imports_it_back():
    graph = _mapping_graph()
    assert "hrl.mapping.profile.rows" in graph and "hrl.mapping.validate" in graph
    # the cycle that was: the profiler's children ran the validation's loops, and the
    # validation read the profiler's placement names
    assert not any(t.startswith("hrl.mapping.profile") for t in graph["hrl.mapping.validate"])
    cycles = []
    state: dict[str, int] = {}

    def walk(node, stack):
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                walk(nxt, stack + [nxt])
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            walk(m, [m])
    assert cycles == []


def test_the_mapping_package_starts_no_child_from_a_code_string_and_imports_no_runtime_back():
    for path in MAPPING.rglob("*.py"):
        assert '"-c"' not in path.read_text(), path
    for path in (ROOT / "hrl").rglob("*.py"):
        if MAPPING in path.parents or path.parent.name == "commands":
            continue
        imported = _top_level_imports(path, "hrl.x")
        assert not any(m.startswith("hrl.mapping") for m in imported), path


def test_every_profile_module_is_small():
    for path in (MAPPING / "profile").glob("*.py"):
        assert len(path.read_text().splitlines()) < 300, path
