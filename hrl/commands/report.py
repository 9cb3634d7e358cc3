"""`hrl report MAP_DIR`: regenerate a mapping report from the request `hrl map` saved there
(after a new profile, a new RTL cycle table or a changed model)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hrl.commands import map as map_command

HELP = "regenerate the mapping report in a directory written by `hrl map`"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("map_dir", help="directory written by `hrl map` (has request.json)")


def run(args: argparse.Namespace) -> int:
    request = Path(args.map_dir) / "request.json"
    if not request.is_file():
        print(f"hrl report: error: {request} does not exist; run `hrl map` first",
              file=sys.stderr)
        return 2
    req = json.loads(request.read_text())
    argv = [req["config"], "--out", args.map_dir, "--staleness", str(req["staleness"])]
    for o in req.get("overrides") or []:
        argv += ["--set", o]
    if req.get("profile"):
        argv += ["--profile", req["profile"]]
    if req.get("devices"):
        argv += ["--devices", ",".join(req["devices"])]
    if req.get("scaling"):
        argv += ["--scaling", req["scaling"]]
    if req.get("metric"):
        argv += ["--metric", req["metric"]]
    if req.get("gpu_spec"):
        argv += ["--gpu-spec", req["gpu_spec"]]
    parser = argparse.ArgumentParser(prog="hrl report")
    map_command.add_arguments(parser)
    return map_command.run(parser.parse_args(argv))
