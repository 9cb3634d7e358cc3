"""`Target`: the run config a profile times, and how its rows are built.

It makes the runtime's own objects at a grid point (agent, replay buffer, the primitive
functions of `hrl.runtime.primitives.make_primitives`) and turns a timing into a
`ProfileRow`. Building is cheap (no JAX compilation) except `filled_replay`, which writes
every slot of a buffer once: O(capacity).
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl import agents
from hrl.envs import example_transition, make_env
from hrl.mapping.profile.grids import Setting
from hrl.mapping.profile.rows import ProfileRow
from hrl.mapping.workload import Workload, env_shape, env_sizes, learner_key, network_of
from hrl.replay.buffer import make_prioritized_replay
from hrl.runtime.primitives import make_primitives


def make_agent(algo: str, width: int, spec, conv_layers=(), head_layers: int = 2):
    """The agent of `algo` with two hidden layers `width` wide (DDPG: both networks); a DQN
    conv net (`conv_layers` (filters, kernel, stride) non-empty): those convolutions, then
    `head_layers` dense layers `width` wide (`network: conv`)."""
    if algo == "dqn" and conv_layers:
        return agents.make_dqn(agents.DQNConfig(
            network="conv", conv_layers=tuple(conv_layers),
            hidden_sizes=(width,) * head_layers), spec)
    if algo == "dqn":
        return agents.make_dqn(agents.DQNConfig(hidden_sizes=(width, width)), spec)
    return agents.make_ddpg(agents.DDPGConfig(actor_hidden_sizes=(width, width),
                                              critic_hidden_sizes=(width, width)), spec)


class Target:
    """The config `cfg` a profile times, its env's spec and one example transition.

    The network timed is the config's kind: an MLP (two hidden layers of the grid's width, as
    always), or a DQN conv net (`agent.network: conv` or `minatar`): the config's
    convolutions, then its head's number of dense layers, each the grid's width (so the grid
    varies the head, and the convolutions are the config's). A conv net's learner rows are
    `infer:dqn:conv`, `train:dqn:conv` and carry `conv_layers`, `head_layers` (every row
    does, so loop rows can be priced again: `calibration`); an MLP's rows are as before."""

    def __init__(self, cfg, dispatch: str):
        """`dispatch`: the CPU dispatch this process runs in, recorded on every timed row."""
        self.cfg = cfg
        self.dispatch = dispatch
        self.env_name = cfg.env.name
        self.algo = cfg.algo
        self.obs_dim, self.act_dim = env_sizes(cfg.env.name)
        self.spec = make_env(cfg.env.name, 1, **cfg.env.kwargs).spec
        self.example = example_transition(self.spec)
        self.conv_layers, self.head_layers = (), 2
        if self.algo == "dqn" and getattr(cfg.agent, "network", "mlp") != "mlp":
            conv, hidden = network_of(cfg.agent, env_shape(cfg.env.name))
            self.conv_layers, self.head_layers = conv, len(hidden)
        self.obs_shape = tuple(self.spec.obs_shape) if self.conv_layers else ()

    @property
    def network(self) -> str:
        return "conv" if self.conv_layers else "mlp"

    def network_fields(self) -> dict:
        """What a row of a conv net carries to rebuild its workload (nothing for an MLP)."""
        if not self.conv_layers:
            return {}
        return {"network": "conv", "conv_layers": [list(c) for c in self.conv_layers],
                "head_layers": self.head_layers}

    def workload(self, s: Setting) -> Workload:
        kind, _, env_id = self.env_name.partition(":")
        return Workload(algo=self.algo, env_kind=kind, env_id=env_id, obs_dim=self.obs_dim,
                        act_dim=self.act_dim, hidden=(s.width,) * self.head_layers,
                        num_envs=s.num_envs, batch_size=s.batch, capacity=s.capacity,
                        fanout=s.fanout, obs_shape=self.obs_shape,
                        conv_layers=self.conv_layers,
                        obs_itemsize=int(self.spec.obs_dtype.itemsize))

    def row(self, call: str, placement: str, mode: str, s: Setting, work_call: str,
            timing: dict, repeats: int, **extra) -> ProfileRow:
        """The row of one timed primitive: its call key (`env:<name>`, `infer:<algo>`,
        `train:<algo>`, or the call), the setting, the work of `work_call` at it, `timing`
        (`timers.median_time`'s keys) and this process's dispatch; `extra` adds fields."""
        w = self.workload(s)
        env_name = extra.pop("env_name", self.env_name)
        if env_name != self.env_name:  # another env's step (`envs` of the grid)
            kind, _, env_id = env_name.partition(":")
            w = dataclasses.replace(w, env_kind=kind, env_id=env_id)
        key = call
        if call == "env":
            key = f"env:{env_name}"
        elif call in ("infer", "train"):
            key = learner_key(call, self.algo, self.network)
        return ProfileRow.from_dict({
            "call": key, "placement": placement, "mode": mode, "env": env_name,
            "algo": self.algo, "num_envs": s.num_envs, "width": s.width, "batch": s.batch,
            "capacity": s.capacity, "fanout": s.fanout, "depth": w.depth,
            "work": w.work(work_call), **timing, "repeats": repeats,
            "dispatch": self.dispatch, **self.network_fields(), **extra})

    def agent(self, width: int):
        return make_agent(self.algo, width, self.spec, self.conv_layers, self.head_layers)

    def replay(self, capacity: int, fanout: int, impl: str = "auto"):
        """The JAX prioritized buffer of the config's replay settings at these sizes."""
        r = self.cfg.replay
        return make_prioritized_replay(capacity, alpha=r.alpha, eps=r.eps, fanout=fanout,
                                       fmt=r.fmt, weights=r.weights, impl=impl)

    def filled_replay(self, replay, device, rng):
        """A full buffer with random transitions and priorities (sampling needs items), on
        `device`."""
        state = replay.init(self.example)
        chunk = min(replay.capacity, 1 << 14)
        add = jax.jit(replay.add)
        for start in range(0, replay.capacity, chunk):
            m = min(chunk, replay.capacity - start)
            items = {k: jnp.asarray(rng.standard_normal((m, *v.shape)).astype(v.dtype)
                                    if v.dtype.kind == "f" else
                                    rng.integers(0, max(self.act_dim, 1), (m, *v.shape))
                                    .astype(v.dtype))
                     for k, v in self.example.items()}
            pri = jnp.asarray(rng.uniform(0.01, 2.0, m).astype(np.float32))
            state = add(state, items, pri)
        return jax.device_put(state, device)

    def prims(self, agent, replay, batch: int, num_envs: int):
        """The runtime's own primitive functions (`hrl.runtime.primitives.make_primitives`)."""
        env = make_env(self.env_name, num_envs, **self.cfg.env.kwargs)
        return make_primitives(env, agent, replay, batch)

    def random_actions(self, m: int, rng, spec=None):
        """`m` random actions of the config's env (or of `spec`'s)."""
        spec = spec or self.spec
        if spec.discrete:
            return rng.integers(0, spec.action.n, m).astype(np.int32)
        return rng.uniform(-1, 1, (m, *spec.action.shape)).astype(np.float32)

    def random_batch(self, batch: int, rng) -> dict:
        """A batch of `batch` random transitions as JAX arrays."""
        return {k: jnp.asarray(
            rng.standard_normal((batch, *v.shape)).astype(v.dtype) if v.dtype.kind == "f"
            else rng.integers(0, max(self.act_dim, 1), (batch, *v.shape)).astype(v.dtype))
            for k, v in self.example.items()}


