"""DQN's `train` and `infer` on one FPGA learner kernel (`placement.train: fpga`): the
network's state lives in the training kernel's banks (`hrl_learn_kernel` with TRAIN = 1,
driven through the OpenCL driver `kernel_host.LearnerKernel`, on a card or on the `rtl-sim`
device), and every SGD step and inference runs there.

    learner = FpgaLearner(kernel, agent, batch=64, infer_rows=1)
    train = make_fpga_train(agent, learner)      # the train primitive's contract
    infer = make_fpga_learner_infer(agent, learner)

Contract: `train(agent_state, batch, weights)` returns what `FixedDQN.train_step` returns,
bit for bit: the new state (master weights, Adam's moments, target masters, step counter),
the TD errors (the kernel's value words; the replay's priorities) and the metrics (loss,
Q mean, |TD| mean from the kernel's words by `FixedDQN.step_metrics`; saturations: the
kernel's count plus the host's quantization of the batch). The host does what the step
module leaves to it (`hrl_learn_step`'s header): it quantizes the batch and computes the
step's rate word (`step_rate`) in JAX; the kernel's run is a host callback
(`jax.pure_callback`) on those words, so both primitives stay jittable for the sequential
executor. One seed at a time.

What moves: a step loads only the batch (s and s', the per-sample words, the rate word) and
stores its TD words, Q(s) rows, a status row and the four parameter banks, which the host
keeps as the run's state (state is data: checkpoints, evaluation and the final state read
it); the kernel reads its own banks for the next step and for inference, and is reloaded
(the step's registers, the four banks, the op table, its init) only when the state handed
to a primitive is not the one it holds (the first call, a restored checkpoint), compared
word for word on the host. An inference moves its observations and its Q words.

An OpenCL host cannot read the kernel's registers: every run stores a status row (status
bits, saturations, cycles, step counter) and the host refuses, in one line, a run that
stopped early, failed, or left the step counter elsewhere than expected.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from hrl.agents.common import AgentState, check_batch
from hrl.fixed_point import optim
from hrl.fixed_point import train_program as tp
from hrl.fixed_point.common import step_rate
from hrl.fixed_point.dqn import FixedDQN
from hrl.fixed_point.numerics import dequantize, quantize


class FpgaLearner:
    """One DQN network's state in the training kernel, and its step and inference programs.
    Refuses (one line, naming the key) a network, batch, optimizer or formats the kernel does
    not implement."""

    def __init__(self, kernel, agent: FixedDQN, batch: int, infer_rows: int):
        cfg, f = agent.cfg, agent.fmts
        self.t = self.refuse(kernel.shape, agent, batch, infer_rows)
        self.kernel, self.agent = kernel, agent
        fp = cfg.fixed_point
        c2 = optim.unit_word(1.0 - fp.beta2, f, "beta2")
        polyak = cfg.tau != 1.0
        self._const = {
            "flags": int(cfg.double) | 2 | (4 if polyak else 0), "huber": agent._huber(),
            "c1": optim.unit_word(1.0 - fp.beta1, f, "beta1"), "c2": c2,
            "v_floor": optim.second_floor(c2, f),
            "tau": optim.unit_word(cfg.tau, f, "tau") if polyak else 0,
            "period": int(cfg.target_update_period)}
        self._step_prog = tp.step_program(self.t, sync=True)
        self._infer_prog = tp.infer_program(self.t)
        self._held: tuple[dict, int] | None = None  # the banks' streams and step counter
        # for the run's summary
        self.sgd_steps, self.inits, self.inferences = 0, 0, 0
        self.saturations, self.step_cycles = 0, 0

    @staticmethod
    def refuse(shape, agent: FixedDQN, batch: int, infer_rows: int) -> tp.TrainLayout:
        """The layout on a kernel of `shape`, or a one-line ValueError naming the key of
        what it does not implement (before anything is built or simulated)."""
        if agent.cfg.optimizer != "adam":
            raise ValueError(f"agent.optimizer: the FPGA learner's step implements adam, got "
                             f"{agent.cfg.optimizer!r}")
        dims = (int(np.prod(agent.spec.obs_shape)), *agent.cfg.hidden_sizes,
                agent.spec.action.n)
        return tp.TrainLayout.of(shape, dims, batch, infer_rows, agent.fmts)

    # ------------------------------------------------------------------ the state
    def _streams(self, params, target, m, v) -> dict[str, np.ndarray]:
        c = self.kernel.shape.c
        return {"master": tp.stream(params, c), "m": tp.stream(m, c), "v": tp.stream(v, c),
                "target": tp.stream(target, c)}

    def hold(self, params, target, m, v, steps) -> None:
        """Make the kernel hold this state (words), loading it only if it does not."""
        streams, steps = self._streams(params, target, m, v), int(steps)
        if holds(self._held, streams, steps):
            return
        self._held = None
        pairs = tp.config_pairs(self.t, **self._const, train_steps=steps)
        arrays = tp.split("cfg", pairs, self.t.shape)
        for b in tp.BANKS:
            arrays.update(tp.split(b, streams[b], self.t.shape))
        outs = self.kernel.run(tp.init_program(self.t, len(pairs)), arrays)
        tp.check_status(outs["status"], steps, "init")
        self._held = (streams, steps)
        self.inits += 1

    # ------------------------------------------------------------------ the primitives
    def step(self, params, target, m, v, steps, x, xn, action, reward, discount, w, rate):
        """One SGD step from this state on the batch's words. Returns (td words (B,), Q(s)
        words (B, A), the kernel's saturations, then the new master, target, m and v as
        [{'w', 'b'}, ...] words)."""
        self.hold(params, target, m, v, steps)
        t = self.t
        batch = np.stack([np.asarray(a, np.int64) for a in (action, reward, discount, w)], 1)
        arrays = {"x": np.concatenate([x, xn]), "xn": np.asarray(xn), "batch": batch,
                  "lr": np.array([[tp.G["LR"], int(rate)]], np.int64)}
        outs = self.kernel.run(self._step_prog, arrays)
        sats, cycles = tp.check_status(outs["status"], int(steps) + 1, "SGD step")
        streams = {b: tp.join(outs, b) for b in tp.BANKS}
        self._held = (streams, int(steps) + 1)
        self.sgd_steps += 1
        self.saturations += sats
        self.step_cycles += cycles
        nets = [tp.unstream(streams[b], t.dims, self.kernel.shape.c)
                for b in ("master", "target", "m", "v")]
        return (outs["td"][:, 0].astype(np.int32), outs["q"].astype(np.int32),
                np.int32(sats), *nets)

    def q(self, params, target, m, v, steps, x) -> np.ndarray:
        """Q words (M, A) of act words x (M = infer_rows) on the operand words the kernel
        holds for this state: `agent.q_words(params, obs)[0]`, word for word."""
        if x.shape[0] != self.t.infer_rows:
            raise ValueError(f"env.num_envs: the FPGA learner's inference takes "
                             f"{self.t.infer_rows} rows, got {x.shape[0]}")
        self.hold(params, target, m, v, steps)
        self.inferences += 1
        return self.kernel.run(self._infer_prog, {"x": np.asarray(x)})["y"].astype(np.int32)

    def summary(self) -> dict:
        """The run's FPGA figures (`learner_summary`)."""
        return learner_summary(self)


def holds(held: tuple[dict, int] | None, streams: dict, steps: int) -> bool:
    """Whether a learner's kernel holds this state: `held` (the banks' streams and step
    counter it last loaded or stepped to, None when unknown) equals `streams` and `steps`
    word for word."""
    return held is not None and held[1] == steps and all(
        np.array_equal(streams[b], held[0][b]) for b in tp.BANKS)


def learner_summary(learner) -> dict:
    """The run's FPGA figures of a learner on a training kernel (`FpgaLearner` or
    `kernel_train_ddpg.FpgaDdpgLearner`): launches, SGD steps and inferences on the kernel,
    state loads, the saturations its steps counted, its cycles per SGD step (simulated)."""
    s = learner.kernel.shape
    step = "" if s.train == 1 else f" TRAIN{s.train}"  # DQN's kernel is the default one
    return {"kernel": f"hrl_learn_kernel{step} R{s.r} C{s.c} NMAX{s.nmax} NL{s.nl} "
                      f"BMAX{s.bmax}",
            "device": getattr(learner.kernel.device, "name", str(learner.kernel.device)),
            "launches": learner.kernel.runs, "sgd_steps": learner.sgd_steps,
            "inferences": learner.inferences, "state_loads": learner.inits,
            "step_saturations": learner.saturations,
            "cycles_per_sgd_step": learner.step_cycles / learner.sgd_steps
            if learner.sgd_steps else None}


def word_shapes(tree):
    """The int32 shape of every leaf of `tree` (a host callback's result type)."""
    return jax.tree.map(lambda a: jax.ShapeDtypeStruct(jnp.shape(a), jnp.int32), tree)


def make_fpga_train(agent: FixedDQN, learner: FpgaLearner):
    """The `train` primitive (`hrl.runtime.primitives`) on the kernel (module docstring)."""
    cfg, f = agent.cfg, agent.fmts

    def train(agent_state: AgentState, batch, weights):
        b = check_batch(agent.spec, batch, weights)
        (x, xn, reward, discount, w), n_in = agent._loss_inputs(agent_state, batch, weights)
        action = jnp.asarray(batch["action"], jnp.int32)
        rate = step_rate(cfg, "learning_rate", b, agent_state.train_steps, f)
        m, v = agent_state.opt_state
        params, target = agent_state.params, agent_state.target_params
        out = (jax.ShapeDtypeStruct((b,), jnp.int32),
               jax.ShapeDtypeStruct((b, agent.spec.action.n), jnp.int32),
               jax.ShapeDtypeStruct((), jnp.int32),
               word_shapes(params), word_shapes(target), word_shapes(m), word_shapes(v))
        td, q, sats, params, target, m, v = jax.pure_callback(
            learner.step, out, params, target, m, v, agent_state.train_steps, x, xn, action,
            reward, discount, w, rate)
        metrics = agent.step_metrics(td, w, q, sats + n_in)
        state = AgentState(params, target, (m, v), agent_state.train_steps + 1)
        return state, dequantize(td, f.value), metrics

    train.fpga_learner = learner
    return train


def make_fpga_learner_infer(agent: FixedDQN, learner: FpgaLearner):
    """The `infer` primitive on the same kernel: the Q words of the operand words the SGD
    steps left in its banks (`FpgaLearner.q`), then `FixedDQN.act_on_q`'s epsilon-greedy,
    as `kernel_host.make_fpga_infer` does on an inference-only kernel."""
    f = agent.fmts

    def infer(agent_state: AgentState, carry, obs, key, env_step, episode_start):
        del episode_start
        x, _ = quantize(jnp.reshape(obs, (jnp.shape(obs)[0], -1)), f.act)
        m, v = agent_state.opt_state
        out = jax.ShapeDtypeStruct((x.shape[0], agent.spec.action.n), jnp.int32)
        words = jax.pure_callback(learner.q, out, agent_state.params,
                                  agent_state.target_params, m, v, agent_state.train_steps, x)
        return carry, agent.act_on_q(words, key, env_step, True)

    infer.fpga_learner = learner
    return infer


__all__ = ["FpgaLearner", "make_fpga_learner_infer", "make_fpga_train"]
