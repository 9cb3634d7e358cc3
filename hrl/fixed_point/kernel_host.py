"""OpenCL host driver of the FPGA learner's kernel `hrl_learn_kernel`, and DQN's `infer` on it.

One driver, two devices, as the replay kernel's (`hrl.replay.backends.rtl_kernel`): on a card
it runs on pyopencl over XRT with an xclbin holding `hrl_learn_kernel`; here the same code runs
on `hrl.replay.backends.rtl_sim`, which executes every call on the kernel in a Verilog
simulation (`hrl_learn_kernel_sim`: the kernel and a Verilog memory model). Per run, as a
board's host program does it: the program (`kernel_program.Program.image`: descriptors, op
table, matrices; one buffer) by `enqueue_copy`, `set_args` of the six arguments in the order
of `fpga_rtl/vitis/hrl_learn_kernel.xml`, `enqueue_nd_range_kernel(queue, kernel, (1,),
(1,))`, a blocking `enqueue_copy` of each store.

An OpenCL host cannot read the kernel's status registers (saturations, a refused op), so
nothing reaches the kernel that `KernelShape.refuse` did not accept first.

`FpgaQ` computes DQN's Q words on the kernel: the observations quantized to act words and the
master weights rounded to weight words in JAX (`optim.operand`, as `FixedDQN.q_words` does),
the forward pass on the kernel. The weights are loaded only when they changed since the last
run (compared word for word on the host): between two SGD steps an inference moves only its
observations and its Q values. `make_fpga_infer` makes the `infer` primitive of it for the
host executors (`placement.infer: fpga`): the same epsilon-greedy as `FixedDQN.act` on the
kernel's Q words, which equal `q_words`' bit for bit, so a run gives the same actions.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point import optim
from hrl.fixed_point.dqn import FixedDQN
from hrl.fixed_point.numerics import quantize
from hrl.replay.backends import rtl_sim

KERNEL_NAME = "hrl_learn_kernel"
# The kernel's arguments in hrl_learn_kernel.xml order (tests check the two agree).
ARG_NAMES = ("n_loads", "n_ops", "n_stores", "ops_at", "st_at", "prog", "op_first", "cmd")
# The kernel the rtl-sim device builds for `placement.infer: fpga` and `placement.train:
# fpga` (one kernel for both): a 4 x 4 array, layers up to 64 wide, 3 layers (DQN CartPole's
# 4-64-64-2), 64 rows (a training batch of 32: s and s' stacked), the SGD step's module
# (TRAIN = 1, up to 4 actions) in its default formats; the array's operands 18 bits wide,
# as the backward pass reads delta words (Q18.12) where the forward reads act words (Q16.8).
DEFAULT_SHAPE = kp.KernelShape(r=4, c=4, aw=18, bw=18, ow=24, nmax=64, nl=3, bmax=64, bsmax=24,
                               train=1, amax=4)
# The kernel it builds for `placement.train: fpga` with `algo: ddpg`: DDPG's step module
# (TRAIN = 2) on the same array, six layers (Pendulum's 3-64-64-1 actor and 4-64-64-1 critic
# share them), batches up to 128 (Pendulum's config), up to 4 action dimensions.
DEFAULT_DDPG_SHAPE = dataclasses.replace(DEFAULT_SHAPE, nl=6, bmax=128, train=2)


class LearnerKernel:
    """`hrl_learn_kernel` on an OpenCL device (a card, or `rtl_sim`).

    `cl`: the OpenCL module (pyopencl, or `hrl.replay.backends.rtl_sim`); `device`: its
    device; `binary`: the program binary (an xclbin, or `rtl_sim.kernel_binary(...)`);
    `shape`: the parameters it was built with (an OpenCL host cannot read them back)."""

    def __init__(self, shape: kp.KernelShape, *, cl, device, binary: bytes):
        self.shape, self._cl, self.device = shape, cl, device
        self.context = cl.Context([device])
        try:
            self.queue = cl.CommandQueue(
                self.context, device, properties=cl.command_queue_properties.PROFILING_ENABLE)
            self.program = cl.Program(self.context, [device], [binary]).build()
            names = self.program.get_info(cl.program_info.KERNEL_NAMES).split(";")
            if KERNEL_NAME not in names:
                raise ValueError(f"the program binary has kernels {names}, not {KERNEL_NAME!r}")
            self.kernel = cl.Kernel(self.program, KERNEL_NAME)
            self._buf, self._size = None, 0
            self._table: dict[int, np.ndarray] = {}  # the op table the kernel holds, by row
            self.runs = 0  # launches so far
        except BaseException:
            self.close()  # a started simulation ends with the failed driver
            raise

    def run(self, program: kp.Program, arrays: dict) -> dict[str, np.ndarray]:
        """One launch of `program` on `arrays`; its stores by name (int32 rows x cols). The
        op table's rows move only when they differ from those the kernel holds (it keeps
        them: rows op_first.. of one table serve several programs)."""
        cl = self._cl
        keep = all(np.array_equal(row, self._table.get(program.first + i))
                   for i, row in enumerate(program.ops))
        words, regs, outs = program.image(arrays, keep_ops=keep)
        if words.nbytes > self._size:  # the program buffer grows to the largest program
            self._size = max(words.nbytes, 2 * self._size)
            self._buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE, self._size)
        cl.enqueue_copy(self.queue, self._buf, words, is_blocking=False)
        self.kernel.set_args(*(self._buf if n == "prog" else np.uint32(regs[n])
                               for n in ARG_NAMES))
        cl.enqueue_nd_range_kernel(self.queue, self.kernel, (1,), (1,))
        self.runs += 1
        for i, row in enumerate(program.ops):
            self._table[program.first + i] = np.array(row)
        out = {}
        for name, (offset, rows, cols) in outs.items():
            host = np.empty(rows * cols, np.uint32)
            cl.enqueue_copy(self.queue, host, self._buf, src_offset=offset, is_blocking=False)
            out[name] = host
        self.queue.finish()
        return {name: kp.read_store(host).reshape(outs[name][1:]) for name, host in out.items()}

    def close(self) -> None:
        release = getattr(self.context, "release", None)  # rtl_sim: end the simulation
        if release is not None:
            release()


def open_rtl_sim(shape: kp.KernelShape = DEFAULT_SHAPE,
                 simulator: str | None = None) -> LearnerKernel:
    """The kernel built with `shape` in a Verilog simulation (`rtl_sim`; `simulator` None:
    HRL_RTL_SIMULATOR, else Verilator if installed, else Icarus)."""
    device = rtl_sim.Device(simulator)
    binary = rtl_sim.kernel_binary(KERNEL_NAME, kp.hdl_params(shape))
    return LearnerKernel(shape, cl=rtl_sim, device=device, binary=binary)


class FpgaQ:
    """DQN's Q words (M, A) on the kernel: `q(params, obs)` equals
    `agent.q_words(params, obs)[0]` word for word. Refuses (one line, naming the key) a
    network or a batch the kernel does not hold."""

    def __init__(self, kernel: LearnerKernel, agent: FixedDQN, batch: int):
        self.kernel, self.agent = kernel, agent
        f = agent.fmts
        obs_size = int(np.prod(agent.spec.obs_shape))
        self.dims = (obs_size, *agent.cfg.hidden_sizes, agent.spec.action.n)
        kernel.shape.refuse(self.dims, batch, f, key="agent.hidden_sizes",
                            batch_key="env.num_envs")
        self._operand = jax.jit(lambda params: optim.operand(params, f)[0])
        self._quantize = jax.jit(
            lambda obs: quantize(jnp.reshape(obs, (jnp.shape(obs)[0], -1)), f.act)[0])
        self._loaded: dict | None = None  # the weight words in the kernel's banks
        self._programs: dict = {}

    def _program(self, batch: int, load_weights: bool) -> kp.Program:
        key = (batch, load_weights)
        if key not in self._programs:
            self._programs[key] = kp.forward_program(self.kernel.shape, self.dims, batch,
                                                     self.agent.fmts, load_weights)
        return self._programs[key]

    def __call__(self, params, obs) -> np.ndarray:
        """From the master weights and the observations (floats)."""
        return self.run(jax.device_get(self._operand(params)), np.asarray(self._quantize(obs)))

    def run(self, operand, x) -> np.ndarray:
        """From the weight words ([{'w', 'b'}], `optim.operand`) and the act words (M, K)."""
        weights = kp.weight_arrays(operand)
        stale = self._loaded is None or any(
            not np.array_equal(weights[k], self._loaded[k]) for k in weights)
        prog = self._program(x.shape[0], stale)
        q = self.kernel.run(prog, {**weights, "x": x} if stale else {"x": x})["y"]
        self._loaded = weights
        return q


    def summary(self) -> dict:
        """The run's FPGA figures: the kernel and its launches (one per inference)."""
        s = self.kernel.shape
        return {"kernel": f"hrl_learn_kernel R{s.r} C{s.c} NMAX{s.nmax} NL{s.nl} BMAX{s.bmax}",
                "device": getattr(self.kernel.device, "name", str(self.kernel.device)),
                "launches": self.kernel.runs}


def make_fpga_infer(agent: FixedDQN, q: FpgaQ):
    """The `infer` primitive (`hrl.runtime.primitives`) with the Q words from the kernel. It
    stays a JAX function (jittable, as every executor and the first state's warm-up steps
    trace it): the weight and observation words are computed in it, the kernel's run is a
    host callback (`jax.pure_callback`) on them, the exploration is `FixedDQN.act_on_q`. One
    seed at a time (the callback takes one batch of observations)."""
    f = agent.fmts

    def kernel_q(weights, x):
        return q.run(weights, np.asarray(x))

    def infer(agent_state, carry, obs, key, env_step, episode_start):
        del episode_start
        x, _ = quantize(jnp.reshape(obs, (jnp.shape(obs)[0], -1)), f.act)
        weights, _ = optim.operand(agent_state.params, f)
        out = jax.ShapeDtypeStruct((x.shape[0], agent.spec.action.n), jnp.int32)
        words = jax.pure_callback(kernel_q, out, weights, x)
        return carry, agent.act_on_q(words, key, env_step, True)

    infer.fpga_q = q  # the kernel and its launches, for a run's report and the tests
    return infer
