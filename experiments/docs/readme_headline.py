"""The README's headline table, generated from the results files it cites, so no figure on the
landing page is typed by hand or drifts from its file.

    python experiments/docs/readme_headline.py            # rewrite README.md between its markers
    python experiments/docs/readme_headline.py --check    # exit 1 if README.md is out of date

Each row reads one results file (and links it); a file whose table changed shape fails here
with the file named, rather than the README keeping an old figure. The fused-DQN row also
names the home page's figure for the same loop (the peers table of docs/index.md, written by
`make peers`), so the two pages say which measurement each is.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "experiments" / "results"
BEGIN, END = "<!-- headline:begin -->", "<!-- headline:end -->"


def _table(md: Path, first_header: str) -> list[dict[str, str]]:
    """The rows of the first Markdown table in `md` whose header starts with `first_header`."""
    lines = md.read_text().splitlines()
    for i, line in enumerate(lines):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] == first_header:
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                values = [c.strip() for c in row.strip().strip("|").split("|")]
                rows.append(dict(zip(cells, values, strict=False)))
            return rows
    raise ValueError(f"{md.relative_to(REPO)}: no table with a {first_header!r} column")


def _first(value: str) -> str:
    """'9.4x (9.0x)' -> '9.4x': the wall-time figure, without the CPU-time one."""
    return value.split(" (")[0]


def _link(text: str, path: Path) -> str:
    return f"[{text}]({path.relative_to(REPO).as_posix()})"


def _replay_cpu() -> tuple[str, str]:
    md = RESULTS / "replay" / "headline.md"
    row = _table(md, "N")[0]
    ratio = _first(row["cpprb / hrl native scan"])
    return (f"replay sample + update, N = {row['N']}, B = {row['B']}, K = {row['K']}, in a "
            "fused scan, CPU", _link(f"{ratio} faster than cpprb per step", md))


def _replay_gpu() -> tuple[str, str]:
    md = RESULTS / "replay" / "replay_bench_gpu.md"
    ratio = _first(_table(md, "N")[0]["flashbax / hrl best scan"])
    row = _table(md, "N")[0]
    return ("the same on a GPU (Pallas kernels)",
            _link(f"{ratio} faster than flashbax ({_first(row['hrl pallas scan (us)'])} us "
                  "per step)", md))


def _peers_fused_m1() -> str:
    """The home page's figure for hrl's fused DQN at M=1 (docs/index.md's peers table)."""
    text = (REPO / "docs" / "index.md").read_text()
    match = re.search(r"^\| hrl \(gymnax, fused\) \| ([\d,]+) /", text, flags=re.M)
    if match is None:
        raise ValueError("docs/index.md: no 'hrl (gymnax, fused)' row in the peers table")
    return match.group(1)


def _fused_dqn() -> tuple[str, str]:
    md = RESULTS / "train" / "bench_train.md"
    row = next(r for r in _table(md, "workload")
               if r["workload"] == "cartpole" and r["M envs"] == "1"
               and r["setting"] == "sgd_per_step")
    return ("fused DQN CartPole, one SGD step (batch 32) per env step, one env, 2 CPU cores",
            _link(f"{row['env steps/s']} env steps/s, the jitted loop alone after "
                  "learning_starts", md)
            + f"; {_peers_fused_m1()} in the peers table on the home page (runs to 475 under "
            "the peers' shared settings, interleaved with the other libraries)")


def _learning() -> tuple[str, str]:
    md = RESULTS / "learning" / "learning_quality.md"
    rows = [r for r in _table(md, "config") if "+" not in r["config"]]
    parts = [f"{r['config']} {r['solved']} (final eval {r['end at the bar (eval)']})"
             for r in rows]
    return ("learning over 10 seeds: seeds that reach the bar, and whose final greedy "
            "evaluation ends there", _link("; ".join(parts), md))


def _demo() -> tuple[str, str]:
    time_md = RESULTS / "demo" / "demo_time.md"
    seeds_md = RESULTS / "demo" / "demo_seeds.md"
    median = re.search(r"Median over (\d+) seeds: ([\d.]+) s", time_md.read_text())
    if median is None:
        raise ValueError(f"{time_md.relative_to(REPO)}: no 'Median over N seeds' line")
    rows = _table(seeds_md, "seed")
    solved = sum(r["env steps to solved"].replace(",", "").isdigit() for r in rows)
    return ("`make demo`: CartPole solved, process start to exit",
            _link(f"{median.group(2)} s (median of {median.group(1)} seeds)", time_md) + "; "
            + _link(f"solved on {solved} of {len(rows)} seeds no test uses", seeds_md))


def _mapping() -> tuple[str, str]:
    folder = RESULTS / "mapping" / "heldout"
    draws = sorted((int(m.group(1)), p) for p in folder.glob("heldout-seed*.md")
                   if (m := re.fullmatch(r"heldout-seed(\d+)\.md", p.name)))
    missed, partial = {}, {}
    for seed, md in draws:
        met = [r["met"] for r in _table(md, "figure") if r["met"] in ("True", "False")]
        missed[seed] = (met.count("False"), len(met))
        # A draw stopped part way says so on its page: "Partial: K of the N settings ...".
        if m := re.search(r"Partial: (\d+) of the (\d+) settings", md.read_text()):
            partial[seed] = f"{m.group(1)} of {m.group(2)} settings measured"
    latest, md = draws[-1]
    figures = {r["figure"].split(" (")[0]: r["value"] for r in _table(md, "figure")}
    error = figures["median abs. error of predicted env steps/s"]
    regret = figures["median pick regret"]
    worst = figures["worst pick regret"]
    vs_default = figures["worst pick / default"]
    all_met = [f"{s} ({partial[s]})" if s in partial else str(s)
               for s, (n, _) in missed.items() if n == 0]
    earlier = draws[-2][0] if len(draws) > 1 else None
    before = (f"; seed {earlier} missed {missed[earlier][0]} of its {missed[earlier][1]} targets"
              if earlier is not None and missed[earlier][0] else "")
    # The latest draw's own misses, by name: the figure next to the link is its value.
    names = [r["figure"].split(" (")[0] for r in _table(md, "figure") if r["met"] == "False"]
    if names:
        before += (f"; seed {latest} missed {len(names)} of its {missed[latest][1]} targets "
                   f"({', '.join(names)})")
    return (f"mapping model on settings drawn at random, never fitted to (seed {latest}, the "
            f"latest of {len(draws)} draws; every target met on seeds "
            f"{', '.join(all_met)}{before})",
            _link(f"{error} median error; median pick regret {regret}, worst {worst}; the "
                  f"pick at worst {vs_default} the default's time", md))


ROWS = (_replay_cpu, _replay_gpu, _fused_dqn, _learning, _demo, _mapping)
PEERS = ("hrl beside SB3, Tianshou, RLlib and flashbax",
         "[the peers table](experiments/results/peers/peers.md)")


def headline_table() -> str:
    rows = [f() for f in ROWS[:5]] + [PEERS, ROWS[5]()]
    out = ["| what | figure |", "| --- | --- |"]
    out += [f"| {what} | {figure} |" for what, figure in rows]
    return "\n".join(out)


def updated(readme: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README.md: the markers {BEGIN} and {END} are missing")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{headline_table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1, naming the file, if README.md is not up to date")
    args = parser.parse_args(argv)
    path = REPO / "README.md"
    text = path.read_text()
    new = updated(text)
    if args.check:
        if new != text:
            print("README.md's headline table is out of date: run python "
                  "experiments/docs/readme_headline.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        path.write_text(new)
        print(f"written: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
