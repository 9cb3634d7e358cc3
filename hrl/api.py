"""hrl from Python: train, load a trained policy, act with it, evaluate it.

    import hrl
    summary = hrl.train(cfg, run_dir="runs/x")           # cfg: hrl.config.RunConfig
    policy = hrl.load("runs/x")                          # or best=True: RUN_DIR/best/
    actions = policy.act(obs)                            # greedy / deterministic, batched
    actions = policy.explore(obs, key)                   # epsilon-greedy / noisy, as in training
    row = hrl.evaluate(policy)                           # = `hrl eval runs/x` for this seed

`load` restores a run's checkpoint the way `hrl eval` does (the run's own config builds the
structure, `restore_newest` fills it bit for bit) and keeps only the agent's part: its static
config (`policy.agent`, a DQN or DDPG) and its state (`policy.state`: params, target params,
optimizer state). `evaluate` plays the episodes of `hrl.runtime.evaluation` with the same keys
as `hrl eval`, so both return the same returns exactly.

`train` is `hrl.runtime.train` that also takes a JAX env object (`env=`): it is registered
under a `jax:` name for this process (`hrl.envs.register_env`) and the config names it.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from hrl.config import ConfigError, RunConfig, load_run_config
from hrl.envs import register_env
from hrl.envs.registry import JAX_ENV_OPTIONS
from hrl.runtime.build_run import build, initial_state, seed_list
from hrl.runtime.checkpoint import restore_newest
from hrl.runtime.evaluation import make_evaluator
from hrl.runtime.metrics import eval_row
from hrl.runtime.run import train as _train


@dataclasses.dataclass(frozen=True, eq=False)  # hashed by identity: a valid jit static
class Policy:
    """One seed's trained agent: `agent` (static: config, networks, env spec) and `state`
    (an `AgentState` pytree). `act` and `explore` are jitted and batched: `obs` is
    (B, *obs_shape) for any B (one compile per B); inside a jitted function of your own they
    trace like any JAX function. For a pure function of the params use
    `policy.agent.policy(policy.state, obs)`."""

    cfg: RunConfig
    agent: Any
    state: Any
    seed: int
    env_steps: int  # the env steps the checkpoint was taken at
    checkpoint: Path
    run_dir: Path

    @property
    def params(self):
        """The online network parameters (DQN: the Q network; DDPG: {'actor', 'critic'})."""
        return self.state.params

    def act(self, obs) -> jax.Array:
        """Greedy (DQN: argmax Q, int32 (B,)) or deterministic (DDPG: mu(s), (B, *action_shape))
        actions: the policy `hrl eval` plays."""
        return self._policy(self.state, obs)

    def explore(self, obs, key, env_step: int | None = None) -> jax.Array:
        """The exploration policy of training at `env_step` (default: the checkpoint's):
        epsilon-greedy (DQN) or mu(s) plus Gaussian noise (DDPG; a run with OU noise keeps
        per-env state: use `agent.act_with_carry`)."""
        step = self.env_steps if env_step is None else env_step
        return self._explore(self.state, obs, key, jnp.int32(step))

    @functools.cached_property
    def _policy(self):
        return jax.jit(self.agent.policy)

    @functools.cached_property
    def _explore(self):
        return jax.jit(functools.partial(self.agent.act, explore=True))


def _restore(run_dir: Path, best: bool):
    """(cfg, agent, agent states stacked over the run's seeds or one state, seeds, env steps,
    checkpoint) of a run directory whose seeds share one checkpoint: what `hrl eval` restores."""
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (not a run directory?)")
    cfg = load_run_config(path)
    seeds = seed_list(cfg)
    built = build(dataclasses.replace(cfg, seeds=1))
    if len(seeds) > 1:
        built.loop.close()
        if not built.loop.runs_seeds_at_once:  # its seeds keep seed-<s>/ directories
            raise ConfigError(f"no checkpoint in {run_dir / f'seed-{seeds[0]}' / 'checkpoints'}")
        built = build(cfg)
    like = initial_state(built, seeds if len(seeds) > 1 else None)
    where = run_dir / "best" if best else run_dir
    found = restore_newest(where, like, warn=lambda line: print(line, file=sys.stderr))
    built.loop.close()
    if found is None:
        raise ConfigError(f"no checkpoint in {where / 'checkpoints'}"
                          + (" (the run had no evaluation: train.eval_every 0)" if best else ""))
    state, info, ckpt = found
    return cfg, built.agent, state.agent, seeds, int(info["env_steps"]), ckpt


def load(run_dir: str | Path, best: bool = False, seed: int | None = None) -> Policy:
    """The trained policy of RUN_DIR's latest checkpoint (or, with `best`, of the one with the
    best evaluation, RUN_DIR/best/). A run of several seeds: `seed` picks one (default: the
    run's first). Costs what `hrl eval` costs before it plays: building the run (its replay
    included) once to know the checkpoint's structure."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.yaml").is_file():
        raise FileNotFoundError(f"{run_dir / 'config.yaml'} not found (not a run directory?)")
    seeds = seed_list(load_run_config(run_dir / "config.yaml"))
    seed = seeds[0] if seed is None else seed
    if seed not in seeds:
        raise ConfigError(f"seed {seed} is not one of the run's seeds {seeds}")
    if len(seeds) > 1 and (run_dir / f"seed-{seed}" / "checkpoints").is_dir():
        return load(run_dir / f"seed-{seed}", best)  # seeds trained one after another
    cfg, agent, state, _, steps, ckpt = _restore(run_dir, best)
    if len(seeds) > 1:
        state = jax.tree.map(lambda x: x[seeds.index(seed)], state)
    return Policy(cfg, agent, state, seed, steps, ckpt, run_dir)


def evaluate(what: Policy | str | Path, episodes: int | None = None,
             best: bool = False) -> dict:
    """The greedy/deterministic policy on fresh episodes, with `hrl eval`'s keys.

    A `Policy`: {'seed', 'env_steps', 'eval_return', 'eval_return_min', 'eval_return_max',
    'episodes', 'returns'} of its seed at its checkpoint's env step. A run directory: what
    `hrl eval RUN_DIR` writes, {'checkpoint', 'env_steps', 'per_seed': [...]}, every seed.
    `episodes` defaults to the run's `train.eval_episodes`."""
    if episodes is not None and episodes < 1:
        raise ConfigError(f"episodes must be >= 1, got {episodes}")
    if isinstance(what, Policy):
        evaluator = make_evaluator(what.cfg, what.agent, episodes)
        returns = np.asarray(evaluator.returns(what.state, what.seed, what.env_steps))
        return {"seed": what.seed, **eval_row(what.env_steps, returns),
                "returns": returns.tolist()}
    return evaluate_run(what, best, episodes)


def evaluate_run(run_dir: str | Path, best: bool = False, episodes: int | None = None) -> dict:
    """`hrl eval RUN_DIR`: {'checkpoint', 'env_steps', 'per_seed': [{'seed', eval row}...]}.
    Seeds run one after another (a host loop) are evaluated from their seed-<s>/ directories;
    seeds trained at once (stacked) in one vmapped evaluation."""
    run_dir = Path(run_dir)
    if episodes is not None and episodes < 1:
        raise ConfigError(f"--episodes must be >= 1, got {episodes}")
    if not (run_dir / "config.yaml").is_file():
        raise FileNotFoundError(f"{run_dir / 'config.yaml'} not found (not a run directory?)")
    seeds = seed_list(load_run_config(run_dir / "config.yaml"))
    if len(seeds) > 1 and (run_dir / f"seed-{seeds[0]}" / "checkpoints").is_dir():
        rows = [evaluate_run(run_dir / f"seed-{s}", best, episodes)["per_seed"][0]
                for s in seeds]
        return {"run_dir": str(run_dir), "checkpoint": "best" if best else "latest",
                "per_seed": rows}
    cfg, agent, state, seeds, steps, ckpt = _restore(run_dir, best)
    evaluator = make_evaluator(cfg, agent, episodes)
    returns = evaluator.returns(state, np.asarray(seeds) if len(seeds) > 1 else seeds[0], steps)
    returns = np.asarray(returns).reshape(len(seeds), -1)
    return {"run_dir": str(run_dir), "checkpoint": str(ckpt), "env_steps": steps,
            "per_seed": [{"seed": s, **eval_row(steps, r)}
                         for s, r in zip(seeds, returns, strict=True)]}


def train(cfg: RunConfig, run_dir: str | Path | None = None, env: Any = None,
          **kwargs) -> dict:
    """`hrl.runtime.train(cfg, run_dir, **kwargs)`; with `env`, a gymnax-API env object
    (`reset(key, params)`, `step(key, state, action, params)`, `action_space(params)`), or a
    pair (env, params), trained in place of `cfg.env.name` (of `cfg.env.kwargs` only
    `max_episode_steps` and `obs_dtype` then apply). The object is registered for this
    process under `jax:<its class name>` (the name the run's config.yaml keeps); executors
    that start processes of their own (pipelined actors, distributed) need a name they can
    import instead: `jax:<module>:<factory>`."""
    if env is not None:
        name = register_env(type(env[0] if isinstance(env, tuple) else env).__name__,
                            lambda: env)
        # The object is made already: of env.kwargs only hrl's own options still apply.
        kwargs_ = {k: v for k, v in cfg.env.kwargs.items() if k in JAX_ENV_OPTIONS}
        cfg = dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, name=name,
                                                               kwargs=kwargs_))
    return _train(cfg, run_dir, **kwargs)
