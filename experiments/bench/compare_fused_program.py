"""Is the fused loop's compiled program the same as at another revision?

    .venv/bin/python experiments/bench/compare_fused_program.py REV [--envs 1 64]

Compiles one chunk of the fused DQN CartPole loop (experiments/configs/dqn_cartpole.yaml, M
envs) here and in a temporary git worktree at REV, strips what only says where the code was
(source file names, lines, op metadata), and compares the optimized HLO that XLA:CPU runs. The
same program runs at the same speed on the same machine, so a match answers "did a change slow
the fused loop?" without timing anything on a noisy machine. Prints one line per M; exits 1 if a
program differs (and writes both texts to /tmp for a diff).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DUMP = r"""
import re, sys, jax
from hrl.config import load_config
from hrl.runtime import build, initial_state
cfg = load_config(sys.argv[1], [f"env.num_envs={sys.argv[2]}"])
built = build(cfg)
state = initial_state(built)
text = jax.jit(built.loop._run_chunk, static_argnums=1).lower(state, 10).compile().as_text()
sys.stdout.write(text)
"""


def program_text(checkout: Path, num_envs: int) -> str:
    """The optimized HLO of a fused chunk at `checkout`, without source locations."""
    config = checkout / "experiments" / "configs" / "dqn_cartpole.yaml"
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    text = subprocess.run([sys.executable, "-c", DUMP, str(config), str(num_envs)], cwd=checkout,
                          env=env, check=True, capture_output=True, text=True).stdout
    text = re.sub(r", metadata=\{[^}]*\}", "", text)
    # The source tables (file names, function names, file locations, stack frames) say only
    # where the code was: a refactoring that moves a function changes them, not the program.
    return "\n".join(line for line in text.splitlines()
                     if "file_name_id=" not in line and "file_location_id=" not in line
                     and not re.match(r'^\d+ "', line))


@contextlib.contextmanager
def checkout_at(rev: str):
    """A temporary git worktree of this repository at `rev`, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="hrl_rev_") as tmp:
        path = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(path),
                        rev], check=True)
        try:
            yield path
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(path)],
                           check=False)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the revision to compare with (a commit, tag or branch)")
    ap.add_argument("--envs", nargs="+", type=int, default=[1, 64])
    args = ap.parse_args()
    same = True
    with checkout_at(args.rev) as base:
        for m in args.envs:
            here, there = program_text(ROOT, m), program_text(base, m)
            digest = hashlib.sha256(here.encode()).hexdigest()[:16]
            if here == there:
                print(f"M={m}: identical program ({len(here.splitlines())} lines, "
                      f"sha256 {digest})")
            else:
                same = False
                for name, text in (("here", here), (args.rev, there)):
                    Path(f"/tmp/fused_hlo_M{m}_{name.replace('/', '_')}.txt").write_text(text)
                print(f"M={m}: programs DIFFER (texts in /tmp/fused_hlo_M{m}_*.txt)")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
