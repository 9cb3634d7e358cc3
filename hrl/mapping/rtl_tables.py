"""The RTL's measured tables a profile carries, read into the FPGA model's terms: the replay
manager's cycle counts (experiments/results/rtl/cycles.csv and kernel_cycles_fit.csv),
yosys's resource counts (fpga_rtl/syn/resources.csv) and the learning module's cycle table
(experiments/results/fpga_learner/cycles.csv). A profile without them gives the RTL's
documented pipeline, the default logic coefficients and the learner's cycle model at the
default clock."""

from __future__ import annotations

import dataclasses

from hrl.mapping import fpga as fpga_model
from hrl.mapping.profile.rows import profile_rows


def rmm_timing_from_profile(profile: dict | None) -> fpga_model.RmmTiming:
    """RmmTiming fitted on the RTL's measured cycle table (experiments/results/rtl/cycles.csv)
    if the profile carries it, else the RTL's documented pipeline; plus the kernel's measured
    memory side (experiments/results/rtl/kernel_cycles_fit.csv) if the profile carries it."""
    all_rows = profile_rows(profile)
    # a table row's CSV columns are its `extra`: the RTL's own CSV rows
    rows = [dict(r.extra) for r in all_rows if r.call == "rtl-cycles"]
    timing = fpga_model.RmmTiming()
    if rows:
        try:
            t = fpga_model.RmmTiming.from_rtl_csv_rows(rows)
            timing = dataclasses.replace(
                t, source=f"fit on {len(rows)} rows of the RTL's measured cycle table "
                          "(experiments/results/rtl/cycles.csv)")
        except (KeyError, TypeError, ValueError):
            pass
    kernel_rows = [dict(r.extra) for r in all_rows if r.call == "rtl-kernel-cycles"]
    if kernel_rows:
        try:
            timing = timing.with_kernel_fit(kernel_rows)
        except (KeyError, TypeError, ValueError):
            pass
    return timing


def learner_from_profile(profile: dict | None,
                         array: str = fpga_model.DEFAULT_ARRAY) -> fpga_model.ArrayLearner:
    """The FPGA learner on an `array` (RxC) array: at the clock of the learner's cycle
    table if the profile carries the table and it has that array, else the cycle model at
    the default clock; with the kernel's resources where the profile's yosys tables give
    them (`fpga.learner_use`). Raises a one-line ValueError for an array that is not RxC."""
    learner = _learner_timing(profile, array)
    rows = profile_rows(profile)
    try:
        use = fpga_model.learner_use(
            [dict(r.extra) for r in rows if r.call == "rtl-learner-kernel"],
            [dict(r.extra) for r in rows if r.call == "rtl-learner-resources"], array)
    except (KeyError, TypeError, ValueError):  # a table of another layout: not checked
        use = None
    return dataclasses.replace(learner, use=use)


def _learner_timing(profile: dict | None, array: str) -> fpga_model.ArrayLearner:
    """The learner's times on `array` (`learner_from_profile`), its resources not read."""
    r, c = fpga_model.parse_array(array)
    rows = [dict(r.extra) for r in profile_rows(profile) if r.call == "rtl-learner-cycles"]
    if rows:
        try:
            return fpga_model.ArrayLearner.from_table(rows, array)
        except (KeyError, TypeError, ValueError):
            pass
    if (r, c) == (fpga_model.ArrayLearner.rows, fpga_model.ArrayLearner.cols):
        return fpga_model.ArrayLearner()
    return fpga_model.ArrayLearner(r, c, source=(
        f"the learner's cycle model (hrl.mapping.learner_schedule) on the {array} array at the "
        "default clock, no learner table for that array in the profile"))


def logic_from_profile(profile: dict | None) -> fpga_model.LogicCoefficients:
    """LUT/FF coefficients calibrated on the RTL's yosys table (fpga_rtl/syn/resources.csv)."""
    rows = [r.extra for r in profile_rows(profile) if r.call == "rtl-resources"]
    try:
        conv = [{"fanout": int(r["K"]), "word_bits": int(r["W"]), "depth": int(r["D"]),
                 "lanes": int(r["P"]), "lut": float(r["LUT"]) + float(r.get("LUTRAM") or 0),
                 "ff": float(r["FF"])} for r in rows]
        return fpga_model.calibrate_logic(conv)
    except (KeyError, TypeError, ValueError):
        return fpga_model.LogicCoefficients()
