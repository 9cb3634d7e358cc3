"""Why a conv net's learner calls have models of their own: the fitted infer and train models of
the MinAtar profile's conv net beside the CartPole profile's MLP, on the same machine.

    .venv/bin/python experiments/mapping/conv_terms.py

Reads experiments/results/mapping/heldout/profile (gymnax CartPole, MLP rows `infer:dqn`,
`train:dqn`) and profile-minatar (the MinAtar config's conv net, rows `infer:dqn:conv`,
`train:dqn:conv`), fits each as `hrl map` does (`calibration.models_from_profile`), and writes
conv_terms.csv and conv_terms.md beside them: per call and placement, each kind's seconds per
GFLOP (the slope), fixed seconds per call (the intercept), fit errors, and the conv model's
prediction at each conv row against the MLP model's prediction at the same FLOPs (what pricing
a conv net as an MLP would have predicted). Measures nothing.
"""

from __future__ import annotations

import csv
import statistics
from pathlib import Path

from hrl.mapping.calibration import models_from_profile
from hrl.mapping.profile import load_profile
from hrl.mapping.profile.rows import profile_rows

OUT = Path(__file__).resolve().parents[2] / "experiments" / "results" / "mapping" / "heldout"


def main() -> int:
    mlp_profile = load_profile(OUT / "profile")
    conv_profile = load_profile(OUT / "profile-minatar")
    mlp = models_from_profile(mlp_profile)
    conv = models_from_profile(conv_profile)
    # Each profile's reference workload (`hrl.mapping.speed`), its median over the samples:
    # the two profiles were taken at different loads, so slopes are compared in its units.
    ref = {kind: statistics.median(x["seconds"] for x in p["speed_reference"])
           for kind, p in (("conv", conv_profile), ("mlp", mlp_profile))}
    rows, lines = [], []
    for call in ("infer", "train"):
        for place in ("cpu", "cpu-fused"):
            c, m = conv.get((f"{call}:dqn:conv", place)), mlp.get((f"{call}:dqn", place))
            if c is None or m is None:
                continue
            points = [r for r in profile_rows(conv_profile)
                      if r.call == f"{call}:dqn:conv" and r.placement == place]
            # the MLP model's prediction over the measured conv time, at the conv rows' FLOPs
            as_mlp = statistics.median(float(m(r.work)) / r.latency_s for r in points)
            # the same, the MLP's model rescaled to the conv profile's reference speed
            as_mlp_ref = as_mlp * ref["conv"] / ref["mlp"]
            for kind, model in (("conv", c), ("mlp", m)):
                rows.append({"call": call, "placement": place, "network": kind,
                             "s_per_gflop": model.slope * 1e9, "intercept_s": model.intercept,
                             "reference_s": ref[kind],
                             "references_per_gflop": model.slope * 1e9 / ref[kind],
                             "points": model.n_points, "rel_err_median": model.rel_err_median,
                             "loo_err_median": model.loo_err_median,
                             "work_min": model.work_range[0], "work_max": model.work_range[1],
                             "mlp_model_over_measured_conv": as_mlp if kind == "conv" else "",
                             "same_speed": as_mlp_ref if kind == "conv" else ""})
    with open(OUT / "conv_terms.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    lines = ["# Conv-net and MLP learner terms on one machine", "",
             "Regenerate: `.venv/bin/python experiments/mapping/conv_terms.py` (reads the "
             "profiles `profile/` (CartPole, MLP) and `profile-minatar/` (MinAtar, conv net: "
             "one 3x3 convolution of 16 filters, then a dense layer of the grid's width) in "
             "this directory; measures nothing).", "",
             f"The profiles' reference workload (`hrl.mapping.speed`) ran "
             f"{ref['conv'] * 1e3:.1f} ms (conv profile) and {ref['mlp'] * 1e3:.1f} ms (MLP "
             "profile): they were taken at different loads of a shared machine, so the slopes "
             "are compared in reference runs per GFLOP too, and the MLP model's prediction of "
             "the conv rows is given as it stands and rescaled to the conv profile's speed.", "",
             "| call | placement | network | s per GFLOP | references per GFLOP | fixed us per "
             "call | points | median rel. error | leave-one-out | MLP model / measured conv "
             "(median) | same, at equal reference speed |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ratio, same = r["mlp_model_over_measured_conv"], r["same_speed"]
        lines.append(f"| {r['call']} | {r['placement']} | {r['network']} | "
                     f"{r['s_per_gflop']:.3g} | {r['references_per_gflop']:.3g} | "
                     f"{r['intercept_s'] * 1e6:.1f} | {r['points']} | "
                     f"{r['rel_err_median']:.1%} | {r['loo_err_median']:.1%} | "
                     f"{f'{ratio:.2f}x' if ratio != '' else '-'} | "
                     f"{f'{same:.2f}x' if same != '' else '-'} |")
    lines += ["", "The last column is what pricing the conv net with the MLP's model (its FLOPs "
              "counted as `hrl.mapping.workload` counts them) would have predicted, over what "
              "the conv net measured: where it is far from 1, the two kinds need models of "
              "their own (`platform.call_key`)."]
    (OUT / "conv_terms.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
