"""The workload of one training iteration, and the work terms the performance models use.

A mapping is judged on one *iteration* of the DRL loop (hrl/runtime/iteration.py):

    L times: env (M envs, 1 step) -> infer (M observations);  then insert (M*L transitions)
    then `sgd_steps` times: sample (B) -> train (B) -> update (B priorities)
    weights travel from the learner to the actors every `weight_sync_period` iterations

The work of each primitive comes from the spec, not from a measurement, so that a model
fitted on a few sizes predicts sizes it has not seen:

| primitive | work term | why |
| --- | --- | --- |
| env    | M                                   | one step per environment copy |
| infer  | 2 * M * (conv MACs + sum(fan_in * fan_out)) | FLOPs of the policy forward pass |
| train  | B * passes * fwd FLOPs + 10 * params | forward + backward (~3x fwd per network) + Adam |
| sample | B * K * D                           | K children read on each of D levels (sumtree) |
| update | B * K * D (insert: M * L * K * D)   | ancestors recomputed from K children, D levels |

A conv net (`agent.network: conv` or `minatar`, DQN only) is described by its input
`obs_shape` (H, W, C) and `conv_layers` (filters, kernel, stride), each a 'SAME' convolution as
the agent builds it (`hrl.agents.networks.ConvMLP`: output H' = ceil(H / stride)), then the
dense head `hidden` on the flattened H' x W' x F features. A convolution's MACs per sample are
H' W' F k^2 C. Its SGD step counts, per sample, the forward convolution and its two gradient
convolutions (kernel and input: each as many MACs as the forward), except the first layer's
input gradient, which nothing needs (the observation is data); the dense head counts as an
MLP does (backward = 2 forwards). So a conv net's train work is what the step computes, and
its `infer` / `train` are priced by models of their own (`platform.call_key`: `infer:dqn:conv`),
fitted on rows that timed conv nets: per FLOP, slices and a matrix product over k^2 C patches
do not run at a dense GEMM's rate. An MLP's work terms are unchanged (`conv_layers` empty).

Bytes that cross devices (charged by `links`) are listed by `edges`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from hrl.agents.networks import MINATAR_CONV, MINATAR_HIDDEN, same_pads
from hrl.config import PRIMITIVES  # noqa: F401  (re-exported: the one definition)
from hrl.envs import make_env
from hrl.replay.formats import log2_exact, tree_depth

# The calls one iteration makes; `insert` is performed by the device that runs `update`
# (it writes the same tree), with its own work term.
CALLS = ("env", "infer", "insert", "sample", "train", "update")
CALL_PRIMITIVE = {"env": "env", "infer": "infer", "insert": "update", "sample": "sample",
                  "train": "train", "update": "update"}
ENV_KINDS = ("gymnax", "brax", "gymnasium")
ALGOS = ("dqn", "ddpg")
BYTES_F32 = 4


def learner_key(call: str, algo: str, network: str = "mlp") -> str:
    """The profile's name for a learner call ("infer" or "train") of `algo` on a `network`
    kind ("mlp" or "conv"): `infer:dqn`, `train:dqn:conv`."""
    return f"{call}:{algo}" if network == "mlp" else f"{call}:{algo}:{network}"


@dataclasses.dataclass(frozen=True)
class Workload:
    """Static description of one DRL training iteration (see the module docstring).

    `obs_dim`, `act_dim`: observation size; number of discrete actions (dqn) or action
    dimensions (ddpg). `hidden`: hidden layer widths of every network (a conv net's: its
    dense head). `conv_layers`: (filters, kernel, stride) of a conv net's 'SAME'
    convolutions over observations of `obs_shape` (H, W, C); empty for an MLP.
    """

    algo: str = "dqn"
    env_kind: str = "gymnax"
    env_id: str = "CartPole-v1"
    obs_dim: int = 4
    act_dim: int = 2
    hidden: tuple[int, ...] = (64, 64)
    num_envs: int = 1
    batch_size: int = 32
    capacity: int = 50_000
    fanout: int = 16
    sgd_steps: float = 1.0  # SGD steps per iteration (an average: 0.25 = one every 4)
    weight_sync_period: int = 1
    critic_hidden: tuple[int, ...] | None = None  # ddpg critic widths (None: same as hidden)
    rollout_length: int = 1  # L: actor steps per iteration, inserted as one batch of M*L
    # Iterations per call of the runtime's loop (`hrl train`: one chunk of
    # train.chunk_env_steps). The fused loop pays a fixed cost per call (dispatch, handing the
    # chunk's outputs back), spread over them. 0: not known, priced as a long chunk (no cost).
    iterations_per_call: int = 0
    obs_shape: tuple[int, ...] = ()  # (H, W, C) of a conv net's input; () for an MLP
    conv_layers: tuple[tuple[int, int, int], ...] = ()  # (filters, kernel, stride) each
    # SGD steps between target-network updates (agent.target_update_period): the FPGA
    # learner's step walks the parameters a second time on the steps that update the target.
    target_period: int = 1
    # Bytes of one observation element as the replay stores it (`hrl.replay.rows` keeps each
    # leaf's dtype: MinAtar's bool grids take 1 byte, float32 observations 4).
    obs_itemsize: int = BYTES_F32

    def __post_init__(self):
        if self.algo not in ALGOS:
            raise ValueError(f"workload algo must be one of {ALGOS}, got {self.algo!r}")
        if self.env_kind not in ENV_KINDS:
            raise ValueError(f"workload env_kind must be one of {ENV_KINDS}, got {self.env_kind!r}")
        for name in ("obs_dim", "act_dim", "num_envs", "batch_size", "capacity",
                     "weight_sync_period", "rollout_length", "target_period",
                     "obs_itemsize"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"workload {name} must be a positive int, got {value!r}")
        if not isinstance(self.iterations_per_call, int) or self.iterations_per_call < 0:
            raise ValueError("workload iterations_per_call must be an int >= 0, got "
                             f"{self.iterations_per_call!r}")
        if not isinstance(self.sgd_steps, (int, float)) or not 0 <= self.sgd_steps < 1e9:
            raise ValueError(f"workload sgd_steps must be a number >= 0, got {self.sgd_steps!r}")
        if not self.hidden or any(not isinstance(h, int) or h < 1 for h in self.hidden):
            raise ValueError(f"workload hidden must be positive ints, got {self.hidden!r}")
        log2_exact(self.fanout)
        if self.conv_layers:
            if self.algo != "dqn":
                raise ValueError(f"workload conv_layers: only dqn builds conv nets, got algo "
                                 f"{self.algo!r}")
            if len(self.obs_shape) != 3 or math.prod(self.obs_shape) != self.obs_dim:
                raise ValueError(f"workload obs_shape must be (H, W, C) with H*W*C = obs_dim "
                                 f"{self.obs_dim} for a conv net, got {self.obs_shape!r}")
            for layer in self.conv_layers:
                if len(layer) != 3 or any(not isinstance(v, int) or v < 1 for v in layer):
                    raise ValueError("workload conv_layers must be (filters, kernel, stride) "
                                     f"positive ints, got {self.conv_layers!r}")

    @property
    def network(self) -> str:
        """"conv" for a conv net, "mlp" otherwise: the kind its infer and train are priced
        by (`platform.call_key`)."""
        return "conv" if self.conv_layers else "mlp"

    def conv_shapes(self) -> list[tuple[int, int, int, int, int, int, int]]:
        """Per convolution (H', W', F, k, C_in, H_in, W_in): its output and input sizes, 'SAME'
        padding as `hrl.agents.networks.SlicedConv` builds it."""
        out = []
        h, w, c = self.obs_shape if self.conv_layers else (0, 0, 0)
        for filters, kernel, stride in self.conv_layers:
            oh, ow = same_pads(h, kernel, stride)[0], same_pads(w, kernel, stride)[0]
            out.append((oh, ow, filters, kernel, c, h, w))
            h, w, c = oh, ow, filters
        return out

    def conv_macs(self) -> list[int]:
        """MACs of each convolution's forward pass on one sample: H' W' F k^2 C."""
        return [oh * ow * f * k * k * c for oh, ow, f, k, c, _, _ in self.conv_shapes()]

    def conv_params(self) -> int:
        return sum(k * k * c * f + f for _, _, f, k, c, _, _ in self.conv_shapes())

    # ---------------------------------------------------------------- derived sizes
    @property
    def depth(self) -> int:
        return tree_depth(self.capacity, self.fanout)

    def networks(self) -> dict[str, list[int]]:
        """Layer widths of each network's dense layers (input first; a conv net's head)."""
        h = list(self.hidden)
        if self.algo == "dqn":
            if self.conv_layers:  # the dense head, on the last convolution's features
                oh, ow, f = self.conv_shapes()[-1][:3]
                return {"q": [oh * ow * f, *h, self.act_dim]}
            return {"q": [self.obs_dim, *h, self.act_dim]}
        c = list(self.critic_hidden or h)
        return {"actor": [self.obs_dim, *h, self.act_dim],
                "critic": [self.obs_dim + self.act_dim, *c, 1]}

    def policy_layers(self) -> list[int]:
        nets = self.networks()
        return nets["q"] if self.algo == "dqn" else nets["actor"]

    @staticmethod
    def macs(layers: list[int]) -> int:
        """Multiply-accumulates of one forward pass of one sample."""
        return sum(a * b for a, b in zip(layers[:-1], layers[1:], strict=False))

    @staticmethod
    def n_params(layers: list[int]) -> int:
        return sum(a * b + b for a, b in zip(layers[:-1], layers[1:], strict=False))

    @property
    def params(self) -> int:
        return (sum(self.n_params(layers) for layers in self.networks().values())
                + self.conv_params())

    def train_flops(self) -> float:
        """FLOPs of one SGD step; a backward pass counts as two forwards.

        dqn (double DQN): online(obs) fwd+bwd 3, online(next) 1, target(next) 1 -> 5 q passes.
        ddpg: critic step: critic fwd+bwd 3 + target actor 1 + target critic 1; actor step:
        actor fwd+bwd 3 + critic fwd and input-gradient 3 -> 4 actor + 7 critic passes.
        Adam: ~10 FLOPs per parameter.
        A conv net's convolutions (module docstring): in the online pass the forward and the
        kernel gradient, and for every layer but the first the input gradient, so 4 forwards
        of the first and 5 of the others over the step, as its dense head's 5.
        """
        nets = self.networks()
        if self.algo == "dqn":
            fwd = 2 * self.macs(nets["q"])
            per_sample = 5 * fwd
            conv = self.conv_macs()
            if conv:
                per_sample += 2 * (4 * conv[0] + 5 * sum(conv[1:]))
        else:
            a, c = 2 * self.macs(nets["actor"]), 2 * self.macs(nets["critic"])
            per_sample = 4 * a + 7 * c
        return float(self.batch_size * per_sample + 10 * self.params)

    def infer_flops(self) -> float:
        return float(2 * self.num_envs * (sum(self.conv_macs())
                                          + self.macs(self.policy_layers())))

    @property
    def action_bytes(self) -> int:
        return BYTES_F32 if self.algo == "dqn" else BYTES_F32 * self.act_dim

    @property
    def transition_bytes(self) -> int:
        """obs and next_obs (`obs_itemsize` bytes an element), action, reward and done
        (float32/int32 each)."""
        return 2 * self.obs_dim * self.obs_itemsize + BYTES_F32 * 2 + self.action_bytes

    # ---------------------------------------------------------------- work and counts
    def work(self, call: str) -> float:
        """The work term of one call (see the module table)."""
        kd = self.fanout * self.depth
        table = {
            "env": float(self.num_envs),
            "infer": self.infer_flops(),
            "insert": float(self.num_envs * self.rollout_length * kd),
            "sample": float(self.batch_size * kd),
            "update": float(self.batch_size * kd),
            "train": self.train_flops(),
        }
        if call not in table:
            raise ValueError(f"unknown call {call!r}; expected one of {CALLS}")
        return table[call]

    def counts(self) -> dict[str, float]:
        """How many times each call runs per iteration."""
        n, steps = float(self.sgd_steps), float(self.rollout_length)
        return {"env": steps, "infer": steps, "insert": 1.0, "sample": n, "train": n,
                "update": n}

    def edges(self) -> list[tuple[str, str, float, float]]:
        """Data that crosses from one primitive to another: (src, dst, bytes, times/iter).

        The transitions and the tree live on the device that runs sample and update (they
        share the tree, see `dse`); the learner's weights live with `train`.
        """
        m, b, n = self.num_envs, self.batch_size, float(self.sgd_steps)
        steps = float(self.rollout_length)
        return [
            ("env", "infer", float(m * BYTES_F32 * self.obs_dim), steps),  # observations
            ("infer", "env", float(m * self.action_bytes), steps),  # actions
            ("env", "update", float(m * self.rollout_length * self.transition_bytes), 1.0),
            # batch + IS weights to the learner
            ("sample", "train", float(b * (self.transition_bytes + BYTES_F32)), n),
            ("train", "update", float(b * BYTES_F32), n),  # TD errors -> new priorities
            # the policy's weights to the actors (DDPG: the actor network, not the critic)
            ("train", "infer", float((self.n_params(self.policy_layers()) + self.conv_params())
                                 * BYTES_F32),
             1.0 / self.weight_sync_period),
        ]

    def describe(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["hidden"] = list(self.hidden)
        d["critic_hidden"] = list(self.critic_hidden) if self.critic_hidden else None
        # An MLP's description as it was before conv nets (reports pin it); a conv net's
        # shape and convolutions where it has them.
        if self.conv_layers:
            d["obs_shape"] = list(self.obs_shape)
            d["conv_layers"] = [list(layer) for layer in self.conv_layers]
        else:
            del d["obs_shape"], d["conv_layers"]
        if self.obs_itemsize == BYTES_F32:  # float32 observations: described as before
            del d["obs_itemsize"]
        d["depth"] = self.depth
        d["params"] = self.params
        return d


# Observation / action sizes of the environments hrl ships configs for, so a workload can be
# described without constructing the environment (importing brax is slow).
KNOWN_ENVS = {
    "CartPole-v1": (4, 2), "Acrobot-v1": (6, 3), "MountainCar-v0": (2, 3),
    "Pendulum-v1": (3, 1), "MountainCarContinuous-v0": (2, 1),
    "inverted_pendulum": (4, 1), "inverted_double_pendulum": (8, 1), "reacher": (11, 2),
    "halfcheetah": (18, 6),
    "Breakout-MinAtar": (400, 3), "SpaceInvaders-MinAtar": (600, 4), "Asterix-MinAtar": (400, 5),
}
# Observation shapes of the image envs above (what a conv net's first layer reads).
KNOWN_SHAPES = {"Breakout-MinAtar": (10, 10, 4), "SpaceInvaders-MinAtar": (10, 10, 6),
                "Asterix-MinAtar": (10, 10, 4)}


def env_sizes(name: str) -> tuple[int, int]:
    """(observation size, number of actions or action dimensions) of env 'library:id'."""
    env_id = name.partition(":")[2] or name
    if env_id in KNOWN_ENVS:
        return KNOWN_ENVS[env_id]
    spec = make_env(name, 1).spec
    obs = 1
    for d in spec.obs_shape:
        obs *= int(d)
    act = spec.action.n if spec.discrete else spec.action.size
    return obs, int(act)


def env_obs_itemsize(name: str) -> int:
    """Bytes of one observation element of env 'library:id' as the replay stores it (MinAtar's
    bool grids: 1, KNOWN_SHAPES' envs; CartPole's float32: 4, KNOWN_ENVS' others; any other
    env: its spec's dtype)."""
    env_id = name.partition(":")[2] or name
    if env_id in KNOWN_SHAPES:
        return 1
    if env_id in KNOWN_ENVS:
        return BYTES_F32
    return int(make_env(name, 1).spec.obs_dtype.itemsize)


def env_shape(name: str) -> tuple[int, ...]:
    """The observation shape of env 'library:id' (KNOWN_SHAPES, else its spec's)."""
    env_id = name.partition(":")[2] or name
    if env_id in KNOWN_SHAPES:
        return KNOWN_SHAPES[env_id]
    return tuple(int(d) for d in make_env(name, 1).spec.obs_shape)


def network_of(agent, obs_shape: tuple[int, ...]) -> tuple[tuple, tuple]:
    """(conv_layers, dense hidden widths) of the network a DQN agent config (`DQNConfig`)
    builds on observations of `obs_shape`: `minatar` is MinAtar's published torso, `conv` its
    `conv_layers` then `hidden_sizes`, `mlp` no convolution. ValueError for a network the
    model cannot describe (a module given to `register_network`) or a conv net on
    observations that are not (H, W, C)."""
    network = getattr(agent, "network", "mlp")
    if network == "mlp":
        return (), tuple(agent.hidden_sizes)
    if network not in ("conv", "minatar"):
        raise ValueError(f"agent.network {network!r}: the mapping model prices the built-in "
                         "networks mlp, conv and minatar only")
    if len(obs_shape) != 3:
        raise ValueError(f"agent.network {network!r} needs (H, W, C) observations, the env's "
                         f"are {tuple(obs_shape)}")
    if network == "minatar":
        return MINATAR_CONV, MINATAR_HIDDEN
    return tuple(tuple(layer) for layer in agent.conv_layers), tuple(agent.hidden_sizes)


def workload_from_config(cfg) -> Workload:
    """The Workload of an `hrl train` run config (`hrl.config.RunConfig`).

    One iteration = `train.rollout_length` steps of `env.num_envs` envs (the runtime's
    iteration), with `train_ratio` SGD steps per env step on average.
    """
    kind, _, env_id = cfg.env.name.partition(":")
    obs, act = env_sizes(cfg.env.name)
    shape, conv = (), ()
    if cfg.algo == "dqn":
        critic = None
        if getattr(cfg.agent, "network", "mlp") != "mlp":
            shape = env_shape(cfg.env.name)
        conv, hidden = network_of(cfg.agent, shape)
        shape = shape if conv else ()
    else:
        hidden, critic = tuple(cfg.agent.actor_hidden_sizes), tuple(cfg.agent.critic_hidden_sizes)
    m, steps = cfg.env.num_envs, cfg.train.rollout_length
    return Workload(
        algo=cfg.algo, env_kind=kind, env_id=env_id, obs_dim=obs, act_dim=act, hidden=hidden,
        critic_hidden=critic, num_envs=m, batch_size=cfg.train.batch_size,
        capacity=cfg.replay.capacity, fanout=cfg.replay.fanout,
        sgd_steps=float(cfg.train.train_ratio * m * steps), rollout_length=steps,
        iterations_per_call=max(1, cfg.train.chunk_env_steps // (m * steps)),  # as hrl train
        obs_shape=shape, conv_layers=conv,
        target_period=int(getattr(cfg.agent, "target_update_period", 1)),
        obs_itemsize=env_obs_itemsize(cfg.env.name),
    )
