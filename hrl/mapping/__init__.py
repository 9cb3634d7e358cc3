"""Mapping framework: profile the primitives, predict their latency on every device, explore
every primitive -> device mapping, report, and instantiate the chosen one.

    hrl profile CONFIG            -> profile.csv / profile.json      (hrl.mapping.profile)
    hrl map CONFIG --profile DIR  -> report.md / .html / PNGs        (plan, dse, report)
    hrl train CONFIG --mapping auto --profile DIR                    (instantiate)

Modules: `workload` (work terms of an iteration), `model` (least-squares latency models),
`links` (PCIe / host memory), `fpga` (RMM cycle model, boards, architecture exploration, MLP
learner), `platform` (placements and their latency sources), `calibration` (a profile -> the
executor model's named constants), `constants` (those constants at one workload, what the
exploration reads), `formulas` (one jitted formula per executor), `dse` (the exploration of
every mapping), `plan` (profile + devices -> exploration), `notes` (what describes a plan),
`ranking` (the one ranking of the mappings the
runtime can run: `hrl map`'s, `--mapping auto`'s and the validation's), `report`,
`validate`, `instantiate`, `rtl_tables` (the RTL tables a profile carries, in the FPGA
model's terms), `devices` (the placements' and executors' names, one spelling each), and the package
`profile` (the profiler: typed rows, probes, child processes, profile files).
"""

from hrl.mapping.dse import Exploration, baselines, explore
from hrl.mapping.fpga import BOARDS, ArrayLearner, Board, RmmTiming, best_architecture
from hrl.mapping.links import LINKS, Link
from hrl.mapping.model import LinearModel, fit_models
from hrl.mapping.plan import Plan, plan
from hrl.mapping.platform import Placement, fpga_placement, gpu_spec_placement
from hrl.mapping.workload import PRIMITIVES, Workload, workload_from_config

__all__ = [
    "BOARDS",
    "LINKS",
    "PRIMITIVES",
    "ArrayLearner",
    "Board",
    "Exploration",
    "LinearModel",
    "Link",
    "Placement",
    "Plan",
    "RmmTiming",
    "Workload",
    "baselines",
    "best_architecture",
    "explore",
    "fit_models",
    "fpga_placement",
    "gpu_spec_placement",
    "plan",
    "workload_from_config",
]
