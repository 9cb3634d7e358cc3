"""DDPG's `train` on one FPGA learner kernel (`placement.train: fpga` with `algo: ddpg`): the
actor's and the critic's state live in the banks of the training kernel built with DDPG's
step (`hrl_learn_kernel` with TRAIN = 2, driven through the OpenCL driver
`kernel_host.LearnerKernel`, on a card or on the `rtl-sim` device), and every SGD step runs
there. As `kernel_train` does for DQN:

    learner = FpgaDdpgLearner(kernel, agent, batch=64)
    train = make_fpga_ddpg_train(agent, learner)      # the train primitive's contract

Contract: `train(agent_state, batch, weights)` returns what `FixedDDPG.train_step` returns,
bit for bit: the new state (both nets' master weights, Adam's moments, target masters, the
step counter), the TD errors (the kernel's value words; the replay's priorities) and the
metrics (critic loss and |TD| mean from the kernel's TD words; saturations: the kernel's
count plus the host's quantization of the batch). One metric is computed on the host: the
Q mean, from the critic's words before the step on (s, a) (`FixedDDPG.critic_forward`), because
the kernel's second critic pass (on (s, mu(s))) overwrites those rows before a store could
read them. The host quantizes the batch and computes the two rate words in JAX; the kernel's
run is a host callback (`jax.pure_callback`), so the primitive stays jittable for the
sequential executor. One seed at a time. Inference stays in JAX (the actor is not put on the
kernel: `placement.infer: fpga` is DQN's).

What moves: a step loads the batch (s, s', [s, a], the per-sample words, the two rate words)
and stores its TD words, a status row and the four parameter banks of both nets (the host
keeps them as the run's state); the kernel is reloaded (registers, banks, op table, init)
only when the state handed to it is not the one it holds, compared word for word.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import AgentState, check_batch
from hrl.fixed_point import ddpg_program as dp
from hrl.fixed_point import kernel_train as kt
from hrl.fixed_point import train_program as tp
from hrl.fixed_point.ddpg import FixedDDPG
from hrl.fixed_point.formats import FixedPointConfig
from hrl.fixed_point.numerics import dequantize

# The DDPG step's word formats: its Verilog parameters' defaults, the DDPG Adam formats.
STEP_FORMATS = FixedPointConfig().formats("adam", "ddpg")
NETS = ("actor", "critic")


class FpgaDdpgLearner:
    """One actor-critic pair's state in the DDPG training kernel, and its step program.
    Refuses (one line, naming the key) a network, batch, optimizer or formats the kernel does
    not implement."""

    def __init__(self, kernel, agent: FixedDDPG, batch: int):
        self.lay, self.runs = self.refuse(kernel.shape, agent, batch)
        self.kernel, self.agent, self.batch = kernel, agent, batch
        cfg = agent.cfg
        self.dims = self._dims(agent)
        self._pairs = np.array(dp.config_pairs(agent, self.lay, dp.run_ends(self.runs),
                                               period=int(cfg.target_update_period),
                                               tau=float(cfg.tau)), np.int64)
        self._step_prog = dp.step_program(kernel.shape, self.lay, self.dims[0])
        self._held: tuple[dict, int] | None = None  # the banks' streams and step counter
        self.sgd_steps, self.inits, self.inferences = 0, 0, 0
        self.saturations, self.step_cycles = 0, 0

    @staticmethod
    def _dims(agent: FixedDDPG):
        s, a = agent._obs_size, agent._act_size
        return ((s, *agent.cfg.actor_hidden_sizes, a),
                (s + a, *agent.cfg.critic_hidden_sizes, 1))

    @classmethod
    def refuse(cls, shape, agent: FixedDDPG, batch: int):
        """(layout, runs) on a kernel of `shape`, or a one-line ValueError naming the key of
        what it does not implement (before anything is built or simulated)."""
        if shape.train != 2:
            raise ValueError(f"placement.train: fpga with DDPG needs DDPG's training kernel "
                             f"(TRAIN=2); this one has TRAIN={shape.train}")
        if agent.cfg.optimizer != "adam":
            raise ValueError(f"agent.optimizer: the FPGA learner's step implements adam, got "
                             f"{agent.cfg.optimizer!r}")
        actor, critic = cls._dims(agent)
        for key, dims in (("agent.actor_hidden_sizes", actor),
                          ("agent.critic_hidden_sizes", critic)):
            shape.refuse(dims, batch, agent.fmts, key=key, batch_key="train.batch_size")
        na, nc = len(actor) - 1, len(critic) - 1
        if na + nc > shape.nl:
            raise ValueError(f"agent.critic_hidden_sizes: the actor's {na} and the critic's "
                             f"{nc} layers exceed the FPGA learner's NL={shape.nl} together")
        if actor[-1] > shape.amax:
            raise ValueError(f"env.name: {actor[-1]} action dimensions exceed the FPGA "
                             f"learner's AMAX={shape.amax}")
        for name in ("act", "weight", "value", "prob", "delta", "grad", "master", "moment",
                     "second", "rsqrt", "step", "unit", "lr"):
            got, want = getattr(agent.fmts, name), getattr(STEP_FORMATS, name)
            if got != want:
                raise ValueError(f"agent.fixed_point: the FPGA learner's {name} format is "
                                 f"{want}, the config's {got}")
        try:
            lay = dp.layout(dp.kernel_banks(shape), actor, critic, batch)
        except AssertionError as err:
            raise ValueError(f"agent.critic_hidden_sizes: actor {actor} and critic {critic} "
                             f"at batch {batch} do not fit the FPGA learner's banks "
                             f"({err})") from None
        if lay["blocks"] > shape.param_depth:
            raise ValueError(f"agent.critic_hidden_sizes: {lay['blocks']} parameter blocks "
                             f"exceed the FPGA learner's {shape.param_depth}")
        runs = dp.step_runs(agent.fmts, actor, critic, lay)
        n_ops = sum(len(r) for r in runs)
        if n_ops > shape.max_ops:
            raise ValueError(f"agent.critic_hidden_sizes: the step's {n_ops} ops exceed the "
                             f"FPGA learner's op table of {shape.max_ops}")
        return lay, runs

    # ------------------------------------------------------------------ the state
    def _streams(self, params, target, m, v) -> dict[str, np.ndarray]:
        c = self.kernel.shape.c
        return {"master": dp.stream(params, c), "m": dp.stream(m, c), "v": dp.stream(v, c),
                "target": dp.stream(target, c)}

    def hold(self, params, target, m, v, steps) -> None:
        """Make the kernel hold this state (words), loading it only if it does not."""
        streams, steps = self._streams(params, target, m, v), int(steps)
        if kt.holds(self._held, streams, steps):
            return
        self._held = None
        shape = self.kernel.shape
        pairs = self._pairs.copy()
        pairs[pairs[:, 0] == dp.G["STEPS"], 1] = steps
        pairs[pairs[:, 0] == dp.G["PHASE"], 1] = steps % int(self.agent.cfg.target_update_period)
        arrays = tp.split("cfg", pairs, shape)
        for b in tp.BANKS:
            arrays.update(tp.split(b, streams[b], shape))
        outs = self.kernel.run(dp.init_program(shape, self.lay, self.runs, len(pairs)), arrays)
        tp.check_status(outs["status"], steps, "init")
        self._held = (streams, steps)
        self.inits += 1

    def _unstream(self, blocks: np.ndarray) -> dict:
        c, split = self.kernel.shape.c, self.lay["pb"][len(self.dims[0]) - 1]
        return {"actor": tp.unstream(blocks[:split], self.dims[0], c),
                "critic": tp.unstream(blocks[split:], self.dims[1], c)}

    # ------------------------------------------------------------------ the primitive
    def step(self, params, target, m, v, steps, x, xn, a, reward, discount, w, rate_c, rate_a):
        """One SGD step from this state on the batch's words. Returns (td words (B,), |td|
        words (B,), the kernel's saturations, then the new master, target, m and v as
        {"actor", "critic"} trees of [{'w', 'b'}, ...] words)."""
        self.hold(params, target, m, v, steps)
        x, xn, a = (np.asarray(v_, np.int64) for v_ in (x, xn, a))
        batch = np.stack([np.zeros(len(x), np.int64),
                          *(np.asarray(v_, np.int64) for v_ in (reward, discount, w))], 1)
        lr = np.array([[dp.G["LR_C"], int(rate_c)], [dp.G["LR_A"], int(rate_a)]], np.int64)
        outs = self.kernel.run(self._step_prog, {"x": x, "xn": xn,
                                                 "c0": np.concatenate([x, a], 1), "tc0": xn,
                                                 "batch": batch, "lr": lr})
        sats, cycles = tp.check_status(outs["status"], int(steps) + 1, "SGD step")
        streams = {b: tp.join(outs, b) for b in tp.BANKS}
        self._held = (streams, int(steps) + 1)
        self.sgd_steps += 1
        self.saturations += sats
        self.step_cycles += cycles
        nets = [self._unstream(streams[b]) for b in ("master", "target", "m", "v")]
        td = outs["td"]
        return (td[:, 0].astype(np.int32), td[:, 1].astype(np.int32), np.int32(sats), *nets)

    def summary(self) -> dict:
        """The run's FPGA figures (`kernel_train.learner_summary`)."""
        return kt.learner_summary(self)


def make_fpga_ddpg_train(agent: FixedDDPG, learner: FpgaDdpgLearner):
    """The `train` primitive (`hrl.runtime.primitives`) on the kernel (module docstring)."""
    f = agent.fmts

    def train(agent_state: AgentState, batch, weights):
        b = check_batch(agent.spec, batch, weights)
        (x, xn, a, reward, discount, w), n_in = agent._inputs(batch, weights)
        rate_c, rate_a = agent._rates(b, agent_state.train_steps)
        params, target = agent_state.params, agent_state.target_params
        m = {k: agent_state.opt_state[k][0] for k in NETS}
        v = {k: agent_state.opt_state[k][1] for k in NETS}
        out = (jax.ShapeDtypeStruct((b,), jnp.int32), jax.ShapeDtypeStruct((b,), jnp.int32),
               jax.ShapeDtypeStruct((), jnp.int32),
               *(kt.word_shapes(tree) for tree in (params, target, m, v)))
        td, _, sats, new_params, new_target, new_m, new_v = jax.pure_callback(
            learner.step, out, params, target, m, v, agent_state.train_steps, x, xn, a,
            reward, discount, w, rate_c, rate_a)
        _, q, _, _, _ = agent.critic_forward(params["critic"], x, a)
        td_f = dequantize(td, f.value)
        metrics = {"critic_loss": jnp.mean(dequantize(w, f.prob) * 0.5 * td_f**2),
                   "q_mean": jnp.mean(dequantize(q, f.value)),
                   "td_abs_mean": jnp.mean(jnp.abs(td_f)),
                   "saturations": sats + n_in}
        opt = {k: (new_m[k], new_v[k]) for k in NETS}
        state = AgentState(new_params, new_target, opt, agent_state.train_steps + 1)
        return state, td_f, metrics

    train.fpga_learner = learner
    return train


__all__ = ["FpgaDdpgLearner", "STEP_FORMATS", "make_fpga_ddpg_train"]
