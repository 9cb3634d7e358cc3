"""The mapping model's error by how far a held-out setting lies outside the profiled sizes.

    .venv/bin/python experiments/mapping/heldout_distance.py [--seeds 3 4 5 6]

Reads the held-out draws' runs (experiments/results/mapping/heldout/heldout-seed<S>.csv,
written by `validate_mapping.py --held-out`) and the profiles they were predicted from
(heldout/profile and heldout/profile-gymnasium), places each setting by its doublings outside
the profile's box (`hrl.mapping.uncertainty.doublings_outside`: M, batch and width against the
sizes the per-call models were fitted on), and tabulates the median absolute error of the
predicted throughput inside the box and outside it, per executor. It is the evidence behind
`uncertainty.TRUSTED_DOUBLINGS`; the draws it reads were made before that constant was set, so
it is judged on a later seed, not on these. Writes
heldout/error_by_distance-seeds<S1>-<S2>...{md,csv}.
"""

from __future__ import annotations

import argparse
import csv
import statistics

from validate_mapping import OUT, PROFILE_DIRS  # beside this script

from hrl.mapping.profile import load_profile
from hrl.mapping.uncertainty import doublings_outside, profiled_box
from hrl.mapping.workload import Workload

HELDOUT = OUT / "heldout"


def distance_of(row: dict, boxes: dict) -> float:
    """Doublings by which the run's setting lies outside its profile's box (0 inside)."""
    w = Workload(num_envs=int(row["num_envs"]), batch_size=int(row["batch"]),
                 hidden=(int(row["width"]),) * 2)
    return doublings_outside(w, boxes[row["env"]])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[3, 4, 5, 6])
    args = ap.parse_args(argv)
    boxes = {env: profiled_box(load_profile(HELDOUT / d)) for env, d in PROFILE_DIRS.items()}
    groups: dict[tuple[str, str], list[float]] = {}
    for seed in args.seeds:
        with open(HELDOUT / f"heldout-seed{seed}.csv") as f:
            for row in csv.DictReader(f):
                far = distance_of(row, boxes)
                where = "inside" if far == 0 else "<= 1 doubling out" if far <= 1 else "further"
                err = abs(float(row["error"]))
                groups.setdefault((row["executor"], where), []).append(err)
                groups.setdefault(("all", where), []).append(err)
    places = ["inside", "<= 1 doubling out", "further"]
    executors = sorted({e for e, _ in groups} - {"all"}) + ["all"]
    table = [{"executor": e, "where": w, "runs": len(groups[e, w]),
              "median_abs_error": round(statistics.median(groups[e, w]), 4)}
             for e in executors for w in places if (e, w) in groups]
    name = "error_by_distance-seeds" + "-".join(map(str, args.seeds))
    with open(HELDOUT / f"{name}.csv", "w", newline="") as f:
        out = csv.DictWriter(f, fieldnames=list(table[0]))
        out.writeheader()
        out.writerows(table)
    seeds = " ".join(map(str, args.seeds))
    lines = ["# Held-out error by distance outside the profiled sizes", "",
             f"Seeds {seeds}. Regenerate: `.venv/bin/python experiments/mapping/"
             f"heldout_distance.py --seeds {seeds}`. Box per profile: "
             + "; ".join(f"{env} {box}" for env, box in boxes.items()), "",
             "| executor | where | runs | median abs. error |", "|---|---|---|---|"]
    lines += [f"| {r['executor']} | {r['where']} | {r['runs']} | {r['median_abs_error']:.1%} |"
              for r in table]
    (HELDOUT / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
