"""Programs of the FPGA learner's kernel (`fpga_rtl/rtl/hrl_learn_kernel.v`): the host's side.

The kernel knows no network: a run copies matrices from device memory into the engine's banks
(load descriptors), writes an op table into the engine (`hrl_learn_engine`'s fields, one row
of 16 words per op), runs it and copies matrices back out (store descriptors). This module
writes those programs for the fixed-point network of `hrl.fixed_point.layers`, so that the
kernel computes `mlp_forward` word for word, and lays a program out as one block of u32
words for device memory. It is plain numpy (no simulator, no JAX): the kernel's testbench
and a host driver use the same code.

    shape = KernelShape.from_config(config0, config1, config2)  # the kernel's registers
    shape.refuse(dims, batch, fmt)                               # a one-line ValueError
    prog = forward_program(shape, dims, batch, fmt)              # loads x, w_i, b_i; stores y
    words, regs, outs = prog.image({"x": x, "w0": w0, "b0": b0, ...})

Layout of a forward pass in the banks (each matrix at the narrowest row stride the bank's
lanes allow): the activation bank holds the input and every layer's output in order, the
weight bank every layer's W (K x N), the bias bank every layer's b (one row each). Splitting
a pass into a weights program (`weights_program`, loads only) and a forward program without
the weights (`load_weights=False`) keeps the weights in the banks across runs: an inference
then moves only its input and its Q values.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hrl.fixed_point.formats import FxFormats

# The op table's fields, in hrl_learn_engine's order (field f of op o is word 16 o + f).
FIELDS = ("x_base", "x_slog", "m", "k", "n", "w_base", "w_slog", "b_base", "y_base",
          "y_slog", "relu", "shift", "width", "bshift", "kind", "m_base")
# Banks of a load (the engine's h_wr_sel) and of a store (its h_rd_sel).
LOAD_ACT, LOAD_WEIGHT, LOAD_BIAS, LOAD_DELTA = 0, 1, 2, 3
STORE_ACT, STORE_DELTA = 0, 1
# A training kernel's (TRAIN = 1) other banks: hrl_learn_step's parameter banks (+ P_MASTER,
# P_M, P_V, P_TARGET), its registers ((address, value) rows), the batch ((action, reward,
# discount, IS weight) rows); stores: the parameter banks, the TD rows (td, |td|), the
# status row (STATUS_WORDS).
LOAD_PARAM, LOAD_CFG, LOAD_BATCH = 4, 8, 9
STORE_PARAM, STORE_TD, STORE_STATUS = 2, 6, 7
P_MASTER, P_M, P_V, P_TARGET = 0, 1, 2, 3
STATUS_WORDS = ("status", "saturations", "cycles", "steps")
STATUS_UNSET = 0xFFFFFFFF  # a status row's words before the kernel writes them
# The run's command (register cmd): the engine's ops, one SGD step, the step's init.
CMD_ENGINE, CMD_STEP, CMD_INIT = 0, 1, 2
DESC_WORDS = 16  # a descriptor: 64 bytes, a beat boundary for buses up to 512 bits
ALIGN_WORDS = 16  # every block of the image starts on a 64-byte boundary
# Register offsets (bytes) of the kernel's s_axi_control.
REG = {"control": 0x00, "gie": 0x04, "ier": 0x08, "isr": 0x0C, "n_loads": 0x10, "n_ops": 0x18,
       "n_stores": 0x20, "ops_at": 0x28, "st_at": 0x30, "prog": 0x38, "cycles": 0x40,
       "engine_cycles": 0x44, "sat": 0x48, "status": 0x4C, "config0": 0x50, "config1": 0x54,
       "config2": 0x58, "config3": 0x5C, "op_first": 0x60, "cmd": 0x68}
KEEP_OPS = 0xFFFFFFFF  # ops_at: run the op table the engine holds, read none
STATUS = {1: "an op out of range", 2: "the array refused a beat", 4: "a descriptor out of range",
          8: "n_ops, op_first or cmd out of range"}


def clog2(x: int) -> int:
    return max(0, (int(x) - 1).bit_length())


@dataclasses.dataclass(frozen=True)
class KernelShape:
    """The kernel's parameters (hrl_learn_kernel / hrl_learn_engine) and its banks' depths."""

    r: int
    c: int
    aw: int
    bw: int
    ow: int
    nmax: int
    nl: int
    bmax: int
    bsmax: int
    train: int = 0  # 1: the engine is hrl_learn_step's (DQN's SGD steps), 2: DDPG's; 0: alone
    amax: int = 4  # the step's loss unit's actions (TRAIN only)

    @classmethod
    def from_config(cls, config0: int, config1: int, config2: int,
                    config3: int = 4) -> KernelShape:
        """From the read-only registers 0x50, 0x54, 0x58, 0x5c."""
        return cls(r=config0 & 0xFF, c=config0 >> 8 & 0xFF, nl=config0 >> 16 & 0xFF,
                   ow=config0 >> 24 & 0xFF, nmax=config1 & 0xFFFF, bmax=config1 >> 16,
                   aw=config2 & 0xFF, bw=config2 >> 8 & 0xFF, bsmax=config2 >> 16 & 0xFF,
                   train=config3 >> 8 & 3, amax=config3 & 0xFF)

    @property
    def param_depth(self) -> int:
        """Blocks of C words of each of the step's parameter banks (hrl_learn_step PDEPTH)."""
        return self.nl * (self.nmax + 1) * -(-self.nmax // self.c)

    @property
    def la(self) -> int:
        """Lanes of the activation and delta banks."""
        return max(self.r, self.c)

    def lanes(self, sel: int) -> int:
        return self.c if sel in (LOAD_WEIGHT, LOAD_BIAS) else self.la

    def slog(self, cols: int, sel: int) -> int:
        """The narrowest row stride (log2 words of one bank) of a matrix `cols` wide."""
        return clog2(-(-cols // self.lanes(sel)))

    @property
    def depths(self) -> dict[int, int]:
        """Words per bank lane (hrl_learn_engine's localparams), by load bank."""
        sla = clog2(-(-self.nmax // self.la))
        slc = clog2(-(-self.nmax // self.c))
        return {LOAD_ACT: 2 * (self.nl + 1) * self.bmax << sla,
                LOAD_WEIGHT: 2 * self.nl * self.nmax << slc,
                LOAD_BIAS: 2 * self.nl << slc,
                LOAD_DELTA: ((self.nl + 1) * self.bmax + self.nl * (self.nmax + 1)) << sla}

    @property
    def max_ops(self) -> int:
        return 6 * self.nl

    def refuse(self, dims, batch: int, fmt: FxFormats, key: str = "agent.network",
               batch_key: str = "batch") -> None:
        """A one-line ValueError if the kernel cannot run this network's forward pass on
        `batch` rows in these formats (naming the key and the limit); None if it can."""
        dims = tuple(int(d) for d in dims)
        shape = "-".join(map(str, dims))
        if len(dims) - 1 > self.nl:
            raise ValueError(f"{key}: {shape} has {len(dims) - 1} layers; the FPGA learner "
                             f"holds at most NL={self.nl}")
        if max(dims) > self.nmax:
            raise ValueError(f"{key}: {shape} has a layer {max(dims)} wide; the FPGA learner's "
                             f"widest is NMAX={self.nmax}")
        if not 1 <= batch <= self.bmax:
            raise ValueError(f"{batch_key}: {batch} is outside the FPGA learner's "
                             f"1..BMAX={self.bmax}")
        for name, f, limit, what in (("act", fmt.act, self.aw, "AW"),
                                     ("weight", fmt.weight, self.bw, "BW"),
                                     ("value", fmt.value, self.ow, "OW"),
                                     ("act", fmt.act, self.ow, "OW")):
            if f.width > limit:
                raise ValueError(f"agent.fixed_point.{name}: {f.width} bits exceed the FPGA "
                                 f"learner's {what}={limit}")
        if fmt.act.frac > self.bsmax:
            raise ValueError(f"agent.fixed_point.act: a bias shift of {fmt.act.frac} exceeds "
                             f"the FPGA learner's BSMAX={self.bsmax}")


HDL_NAMES = {"r": "R", "c": "C", "aw": "AW", "bw": "BW", "ow": "OW", "nmax": "NMAX", "nl": "NL",
             "bmax": "BMAX", "bsmax": "BSMAX", "train": "TRAIN", "amax": "AMAX"}


def hdl_params(shape: KernelShape) -> dict[str, int]:
    """The kernel's HDL parameters by their Verilog names (an rtl-sim binary's)."""
    return {v: getattr(shape, k) for k, v in HDL_NAMES.items()}


async def read_params(read_dword) -> dict[str, int]:
    """The HDL parameters from a running kernel's config registers (`read_dword(offset)`,
    awaitable: a simulator's host side)."""
    words = [await read_dword(REG[f"config{i}"]) for i in range(4)]
    return hdl_params(KernelShape.from_config(*words))


@dataclasses.dataclass(frozen=True)
class Matrix:
    """A matrix of a bank: its bank (a load's or a store's numbering), base, row stride
    (log2), rows, columns, and the name of its words in a program's image."""

    sel: int
    base: int
    slog: int
    rows: int
    cols: int
    name: str


@dataclasses.dataclass(frozen=True)
class Program:
    """One kernel run: matrices loaded, ops (an (n, 16) table of field words), matrices
    stored. Any op kind of the engine is a row of `ops`; the kernel needs no change."""

    loads: tuple[Matrix, ...]
    ops: np.ndarray
    stores: tuple[Matrix, ...]
    first: int = 0  # op_first: the table's rows are ops first.., the engine runs those
    cmd: int = CMD_ENGINE  # what the run starts after its loads (register cmd)

    def image(self, arrays: dict, keep_ops: bool = False) -> tuple[np.ndarray, dict, dict]:
        """The program as one block of u32 words for device memory (the kernel's `prog`
        argument, aligned to 64 bytes): the load descriptors, the op table, the store
        descriptors, each load's words (arrays[name], rows x cols, in its format's words)
        and room for each store's, every address an offset into the block. keep_ops: the
        kernel runs the op table it holds (the last one written, which must be this
        program's) and the image carries none. Returns (words, the scalar registers {name:
        value}, {store name: (byte offset, rows, cols)})."""

        def up(n: int) -> int:
            return -(-n // ALIGN_WORDS) * ALIGN_WORDS

        at = {"loads": 0}
        at["ops"] = up(DESC_WORDS * len(self.loads))
        at["stores"] = at["ops"] + (0 if keep_ops else up(DESC_WORDS * len(self.ops)))
        pos = at["stores"] + up(DESC_WORDS * len(self.stores))
        data = {}
        for m in (*self.loads, *self.stores):
            data[m.name] = pos
            pos += up(m.rows * m.cols)
        words = np.zeros(pos, np.uint32)

        def describe(i0: int, m: Matrix) -> None:
            words[i0:i0 + 7] = [m.sel, m.base, m.slog, m.rows, m.cols, 4 * data[m.name], 0]

        for i, m in enumerate(self.loads):
            describe(at["loads"] + DESC_WORDS * i, m)
            a = np.asarray(arrays[m.name]).reshape(m.rows, m.cols).astype(np.int64)
            words[data[m.name]:data[m.name] + a.size] = (a & 0xFFFFFFFF).ravel()
        if not keep_ops:
            words[at["ops"]:at["ops"] + self.ops.size] = (
                self.ops.astype(np.int64) & 0xFFFFFFFF).ravel()
        for i, m in enumerate(self.stores):
            describe(at["stores"] + DESC_WORDS * i, m)
            if m.sel == STORE_STATUS:  # a run that stopped early leaves these
                words[data[m.name]:data[m.name] + m.rows * m.cols] = STATUS_UNSET
        n_ops = self.first + len(self.ops) if len(self.ops) else 0
        regs = {"n_loads": len(self.loads), "n_ops": n_ops, "op_first": self.first,
                "cmd": self.cmd,
                "n_stores": len(self.stores),
                "ops_at": KEEP_OPS if keep_ops else 4 * at["ops"],
                "st_at": 4 * at["stores"]}
        outs = {m.name: (4 * data[m.name], m.rows, m.cols) for m in self.stores}
        return words, regs, outs


def read_store(words: np.ndarray) -> np.ndarray:
    """A store's u32 words (sign-extended by the kernel) as int32."""
    return np.asarray(words, np.uint32).view(np.int32)


# --------------------------------------------------------------------------- forward pass

def _weights_layout(shape: KernelShape, dims) -> tuple[list[Matrix], list[Matrix]]:
    ws, bs, wbase, bbase = [], [], 0, 0
    for i in range(len(dims) - 1):
        slog = shape.slog(dims[i + 1], LOAD_WEIGHT)
        ws.append(Matrix(LOAD_WEIGHT, wbase, slog, dims[i], dims[i + 1], f"w{i}"))
        bs.append(Matrix(LOAD_BIAS, bbase, 0, 1, dims[i + 1], f"b{i}"))
        wbase += dims[i] << slog
        bbase += 1 << slog
    depth = shape.depths
    assert wbase <= depth[LOAD_WEIGHT] and bbase <= depth[LOAD_BIAS], "refuse() first"
    return ws, bs


def weights_program(shape: KernelShape, dims) -> Program:
    """Loads every layer's W and b (arrays 'w0', 'b0', ...); no op, no store."""
    ws, bs = _weights_layout(shape, dims)
    loads = tuple(m for pair in zip(ws, bs, strict=True) for m in pair)
    return Program(loads, np.zeros((0, len(FIELDS)), np.int64), ())


def forward_program(shape: KernelShape, dims, batch: int, fmt: FxFormats,
                    load_weights: bool = True) -> Program:
    """`layers.mlp_forward` of a ReLU MLP of widths `dims` on `batch` rows: loads the input
    'x' (batch x dims[0], act words) and (load_weights) every 'w<i>' (K x N) and 'b<i>' (N,)
    in weight words; one forward op per layer (ReLU layers in act, the last linear in
    value); stores 'y' (batch x dims[-1], value words). Call shape.refuse first."""
    dims = tuple(int(d) for d in dims)
    ws, bs = _weights_layout(shape, dims)
    acts, abase = [], 0
    for d in dims:
        slog = shape.slog(d, LOAD_ACT)
        acts.append((abase, slog))
        abase += batch << slog
    assert abase <= shape.depths[LOAD_ACT], "refuse() first"
    ops = np.zeros((len(dims) - 1, len(FIELDS)), np.int64)
    for i in range(len(dims) - 1):
        last = i == len(dims) - 2
        out = fmt.value if last else fmt.act
        row = {"x_base": acts[i][0], "x_slog": acts[i][1], "m": batch, "k": dims[i],
               "n": dims[i + 1], "w_base": ws[i].base, "w_slog": ws[i].slog,
               "b_base": bs[i].base, "y_base": acts[i + 1][0], "y_slog": acts[i + 1][1],
               "relu": int(not last), "shift": fmt.act.frac + fmt.weight.frac - out.frac,
               "width": out.width, "bshift": fmt.act.frac, "kind": 0, "m_base": 0}
        ops[i] = [row[f] for f in FIELDS]
    x = Matrix(LOAD_ACT, acts[0][0], acts[0][1], batch, dims[0], "x")
    wl = tuple(m for pair in zip(ws, bs, strict=True) for m in pair) if load_weights else ()
    y = Matrix(STORE_ACT, acts[-1][0], acts[-1][1], batch, dims[-1], "y")
    return Program((*wl, x), ops, (y,))


def weight_arrays(params) -> dict:
    """{'w0': ..., 'b0': ..., ...} from a network as [{'w', 'b'}, ...] of weight words."""
    out = {}
    for i, layer in enumerate(params):
        out[f"w{i}"] = np.asarray(layer["w"])
        out[f"b{i}"] = np.asarray(layer["b"]).reshape(1, -1)
    return out
