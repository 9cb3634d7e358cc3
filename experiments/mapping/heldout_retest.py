"""Measure some mappings of one held-out setting again, in interleaved rounds: how far a
held-out figure (a pick's regret: its measured time over the best's) moves between two
measurements of the same runs on this machine. Nothing is predicted or fitted here.

    .venv/bin/python experiments/mapping/heldout_retest.py --seed 8 --setting 5 --minatar 0 \
        --mappings "cpu" "cpu pipelined" [--rounds 3] [--backends jax opencl]

Each round measures every mapping once, in a fresh process, as the draw did
(`validate_mapping.measure_in_fresh_process`, the setting's chunk). Writes
experiments/results/mapping/heldout/retest-seed<S>-s<I>.{csv,md}: per round the env steps/s of
each mapping and the ratio of the second to the first, and the ratio of their medians.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
from pathlib import Path

import heldout  # beside this script
import validate_mapping as vm  # beside this script

from hrl.config import load_config
from hrl.mapping.instantiate import choose
from hrl.mapping.profile import load_profile


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, required=True, help="the held-out draw")
    ap.add_argument("--setting", type=int, required=True, help="its setting's index (s<S>.<I>)")
    ap.add_argument("--mappings", nargs=2, required=True, metavar="LABEL",
                    help="two mapping labels as the draw's report names them")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=16, help="the draw's size (--held-out N)")
    ap.add_argument("--minatar", type=int, default=None, metavar="K",
                    help="the draw's MinAtar settings (its --held-out-minatar; default N // 4, "
                         "as the draw's; 0 for the draws of seeds before MinAtar's)")
    ap.add_argument("--profile", default=str(vm.OUT / "heldout"))
    ap.add_argument("--backends", nargs="+", default=["jax", "opencl"],
                    help="the replay backends the draw ranked (its --backends)")
    args = ap.parse_args(argv)
    minatar = args.n // 4 if args.minatar is None else args.minatar
    if not 0 <= minatar <= args.n:
        ap.error(f"--minatar must be in 0..{args.n}, got {minatar}")
    settings = heldout.draw(args.n, args.seed, minatar)
    if not 0 <= args.setting < len(settings):
        ap.error(f"--setting must be in 0..{len(settings) - 1}, got {args.setting}")
    s = settings[args.setting]
    config = str(vm.CONFIGS[s.env])
    cfg = load_config(config, heldout.run_overrides(s))
    profile = load_profile(Path(args.profile) / vm.PROFILE_DIRS[s.env])
    ranked = {m.label: m for m in choose(cfg, profile, backends=tuple(args.backends)).ranked}
    for label in args.mappings:
        if label not in ranked:
            ap.error(f"--mappings: {label!r} is not ranked for {s.name} (ranked: "
                     f"{sorted(ranked)})")
    rows = []
    for r in range(args.rounds):
        row = {"round": r}
        for label in args.mappings:
            got = vm.measure_in_fresh_process(config, heldout.run_overrides(s, ranked[label]),
                                              s.iterations())
            row[label] = s.num_envs * s.rollout / got["wall_s"]
            print(f"round {r}: {label}: {row[label]:,.0f} env steps/s", flush=True)
        row["ratio"] = row[args.mappings[1]] / row[args.mappings[0]]
        rows.append(row)
    first, second = args.mappings
    medians = {k: statistics.median(r[k] for r in rows) for k in args.mappings}
    out = Path(args.profile) / f"retest-seed{args.seed}-s{args.setting}"
    with out.with_suffix(".csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["round", first, second, "ratio"])
        w.writeheader()
        w.writerows(rows)
    lines = [f"# {s.name}: {first} and {second} measured again", "",
             f"Regenerate: `.venv/bin/python experiments/mapping/heldout_retest.py --seed "
             f"{args.seed} --setting {args.setting} --minatar {minatar} --mappings \"{first}\" "
             f"\"{second}\" --rounds {args.rounds}`. Env steps/s per round (each run in a "
             "fresh process, as the draw measured it); ratio: the second over the first.", "",
             f"| round | {first} | {second} | ratio |", "|---|---|---|---|"]
    lines += [f"| {r['round']} | {r[first]:,.0f} | {r[second]:,.0f} | {r['ratio']:.2f} |"
              for r in rows]
    lines += [f"| median | {medians[first]:,.0f} | {medians[second]:,.0f} | "
              f"{medians[second] / medians[first]:.2f} |", ""]
    out.with_suffix(".md").write_text("\n".join(lines))
    print(f"wrote {out}.csv/.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
