"""Entry point of the profiler's child processes:

    python -m hrl.mapping.profile.child PROBE JSON

runs probe PROBE (`PROBES`) with the JSON object JSON as its arguments and prints its result
as one JSON line on stdout (what `hrl.runtime.cpu_backend.run_json_child` reads). The
launchers are in `spawn`; a child must start before JAX does in its process, which is why
each probe is a process of its own. Exit status 2 on bad arguments (argparse).
"""

from __future__ import annotations

import argparse
import json

from hrl.mapping.profile.links import collective_timings
from hrl.mapping.profile.loops import loop_rows
from hrl.mapping.profile.overlap import overlap_rows


def _collective(args: dict) -> list:
    return collective_timings(repeats=args["repeats"], scan=args["scan"])


PROBES = {"collective": _collective, "loop": loop_rows, "overlap": overlap_rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m hrl.mapping.profile.child",
                                 description="Run one profiling probe in this process.")
    ap.add_argument("probe", choices=sorted(PROBES))
    ap.add_argument("args", type=json.loads, help="the probe's arguments, a JSON object")
    a = ap.parse_args(argv)
    print(json.dumps(PROBES[a.probe](a.args)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
