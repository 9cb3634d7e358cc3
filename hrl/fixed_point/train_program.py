"""Programs of the training kernel (`hrl_learn_kernel` with TRAIN = 1, whose engine is
`hrl_learn_step`'s): DQN's SGD step, its init, and an inference on the operand words the
step keeps in the engine's banks. The host's side, plain numpy like `kernel_program`.

    lay = TrainLayout.of(shape, dims, batch, infer_rows, fmts)  # refuses what the kernel lacks
    init = init_program(lay, config_pairs(lay, agent_cfg, fmts, train_steps))
    words = {**stream_arrays(lay, state), **init_arrays(...)}
    step = step_program(lay, sync=True)      # loads the batch, one step, stores |TD|, status

The banks hold one network's state from run to run: the master weights, Adam's moments, the
target masters (the step's parameter banks, in its parameter stream: per layer its weight
rows then its bias row, each row in blocks of C words), the online and target operand words
(the engine's weight and bias banks, written by every step). A step's program moves only the
batch in (s and s' stacked for the online net, s' for the target, the per-sample words and the
step's rate word) and its |TD| words, Q(s) rows and status row out; `sync` adds the four
parameter banks (what the host needs to hold the state as data). The op table, written once
by `init_program`, holds the step's ops (forward, then backward and gradients) and after them
an inference's ops (the online net on `infer_rows` rows), which `infer_program` runs with
op_first, so training and inference share one table and one set of operand words.

The layout and the op table are those of the step module's testbench
(`sim/hrl_learn_step/`), which checks the step word for word against FixedDQN.sgd_step.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point.formats import FixedPointConfig, FxFormats

# hrl_learn_step's registers (its header): the globals by address, a layer's fields at
# 32 + 16 l + field.
GLOBALS = ("NLAY", "NF", "NOPS", "A", "B", "Q_BASE", "Q_SLOG", "QT_BASE", "QT_SLOG", "D_BASE",
           "D_SLOG", "FLAGS", "HUBER", "C1", "C2", "LR", "V_FLOOR", "TAU", "PERIOD", "STEPS",
           "PHASE")
G = {name: i for i, name in enumerate(GLOBALS)}
LAYER = ("K", "N", "W_BASE", "W_SLOG", "B_BASE", "TW_BASE", "TB_BASE", "GW_BASE", "G_SLOG",
         "GB_BASE", "P_BASE")
L = {name: i for i, name in enumerate(LAYER)}
BANKS = ("master", "m", "v", "target")  # the parameter banks, in kp.P_* order
# The step's word formats: its Verilog parameters' defaults, the DQN Adam formats.
STEP_FORMATS = FixedPointConfig().formats("adam", "dqn")


def _row_ops(fmt: FxFormats, dims, rows: int, acts, ws, bs, kind0: int = 0) -> list[dict]:
    """The forward ops of a ReLU MLP on `rows` rows (inputs acts[i], weights ws[i], bs[i])."""
    depth, ops = len(dims) - 1, []
    for i in range(depth):
        last = i == depth - 1
        out = fmt.value if last else fmt.act
        ops.append({"x_base": acts[i][0], "x_slog": acts[i][1], "m": rows, "k": dims[i],
                    "n": dims[i + 1], "w_base": ws[i][0], "w_slog": ws[i][1],
                    "b_base": bs[i], "y_base": acts[i + 1][0], "y_slog": acts[i + 1][1],
                    "relu": int(not last), "shift": fmt.act.frac + fmt.weight.frac - out.frac,
                    "width": out.width, "bshift": fmt.act.frac,
                    "kind": kind0 if i == 0 else 0})
    return ops


@dataclasses.dataclass(frozen=True)
class TrainLayout:
    """Where a network of widths `dims`, trained on batches of `batch`, lives in the kernel's
    banks, and its op table (`ops`: the step's n_train ops, then the inference's)."""

    shape: kp.KernelShape
    dims: tuple
    batch: int
    infer_rows: int
    fmts: FxFormats
    lay: dict
    ops: np.ndarray
    n_fwd: int
    n_train: int

    @classmethod
    def of(cls, shape: kp.KernelShape, dims, batch: int, infer_rows: int, fmts: FxFormats,
           net_key: str = "agent.hidden_sizes", batch_key: str = "train.batch_size",
           rows_key: str = "env.num_envs") -> TrainLayout:
        """The layout, after refusing (one line naming the key and the limit) a network, a
        batch or formats that the kernel does not hold."""
        dims = tuple(int(d) for d in dims)
        if not shape.train:
            raise ValueError("placement.train: fpga needs a training kernel (TRAIN=1); this "
                             "one runs inference only")
        if shape.train != 1:
            raise ValueError(f"placement.train: fpga with DQN needs DQN's training kernel "
                             f"(TRAIN=1); this one has TRAIN={shape.train}")
        if not 1 <= 2 * batch <= shape.bmax:
            raise ValueError(f"{batch_key}: {batch} is outside the FPGA learner's "
                             f"1..BMAX/2={shape.bmax // 2} (a step holds s and s')")
        shape.refuse(dims, 2 * batch, fmts, key=net_key, batch_key=batch_key)
        if dims[-1] > shape.amax:
            raise ValueError(f"{net_key}: {dims[-1]} actions exceed the FPGA learner's "
                             f"AMAX={shape.amax}")
        if not 1 <= infer_rows <= 2 * batch:
            raise ValueError(f"{rows_key}: {infer_rows} rows of an inference must be within "
                             f"1..2 x {batch_key} = {2 * batch} on the training kernel")
        for name in ("act", "weight", "value", "prob", "delta", "grad", "master", "moment",
                     "second", "rsqrt", "step", "unit", "lr"):
            got, want = getattr(fmts, name), getattr(STEP_FORMATS, name)
            if got != want:
                raise ValueError(f"agent.fixed_point: the FPGA learner's {name} format is "
                                 f"{want}, the config's {got}")
        lay = _layout(shape, dims, batch)
        if lay["pdepth"] > shape.param_depth:
            raise ValueError(f"{net_key}: {lay['pdepth']} parameter blocks exceed the FPGA "
                             f"learner's {shape.param_depth}")
        fwd, bwd = step_ops(fmts, dims, batch, lay)
        infer = _row_ops(fmts, dims, infer_rows, lay["on"], lay["w_on"], lay["b_on"])
        rows = fwd + bwd + infer
        assert len(rows) <= shape.max_ops
        ops = np.array([[r.get(f, 0) for f in kp.FIELDS] for r in rows], np.int64)
        return cls(shape, dims, batch, infer_rows, fmts, lay, ops, len(fwd),
                   len(fwd) + len(bwd))

    @property
    def depth(self) -> int:
        return len(self.dims) - 1


def _layout(shape: kp.KernelShape, dims, batch: int) -> dict:
    """Bases and strides of everything the step reads and writes (hrl_learn_step's header):
    activations of the online net (2 B rows: s and s') and the target's (B rows: s') per
    layer, last layer first; both nets' weights and biases; the deltas per layer, then each
    layer's weight and bias gradients; the parameter stream's first block per layer."""
    la, c, depth = shape.la, shape.c, len(dims) - 1
    slog_a = [kp.clog2(-(-d // la)) for d in dims]
    lay = {"on": [None] * (depth + 1), "tg": [None] * (depth + 1)}
    base = 0
    for net, rows in (("on", 2 * batch), ("tg", batch)):
        for i in range(depth, -1, -1):
            lay[net][i] = (base, slog_a[i])
            base += rows << slog_a[i]
    depths = shape.depths
    assert base <= depths[kp.LOAD_ACT], "refuse() first"
    wb, bb = 0, 0
    lay["w_on"], lay["w_tg"], lay["b_on"], lay["b_tg"] = [], [], [], []
    for net in ("on", "tg"):
        for i in range(depth):
            slog = kp.clog2(-(-dims[i + 1] // c))
            lay[f"w_{net}"].append((wb, slog))
            lay[f"b_{net}"].append(bb)
            wb += dims[i] << slog
            bb += 1 << slog
    assert wb <= depths[kp.LOAD_WEIGHT] and bb <= depths[kp.LOAD_BIAS], "refuse() first"
    base, dl = 0, [None] * (depth + 1)
    for i in range(depth, -1, -1):
        dl[i] = (base, slog_a[i])
        base += batch << slog_a[i]
    gw, gb = [], []
    for i in range(depth):
        gw.append((base, slog_a[i + 1]))
        base += dims[i] << slog_a[i + 1]
        gb.append((base, 0))
        base += 1 << slog_a[i + 1]
    assert base <= depths[kp.LOAD_DELTA], "refuse() first"
    lay["dl"], lay["gw"], lay["gb"] = dl, gw, gb
    pb, p = [], 0
    for i in range(depth):
        pb.append(p)
        p += (dims[i] + 1) * -(-dims[i + 1] // c)
    lay["pb"], lay["pdepth"] = pb, p
    return lay


def step_ops(fmt: FxFormats, dims, batch: int, lay: dict) -> tuple[list, list]:
    """The step's op table: forward ops (online on 2B rows, target on B), then per layer
    (last first) the backward op and the two gradients; ops that read nothing their
    predecessor writes are marked independent (kind + 8, the engine overlaps them). `lay`:
    the banks' places ("on", "tg", "w_on", "w_tg", "b_on", "b_tg", "dl", "gw", "gb"), as
    the kernel's layout or hrl_learn_step's testbench lays them out."""
    depth = len(dims) - 1
    fwd = (_row_ops(fmt, dims, 2 * batch, lay["on"], lay["w_on"], lay["b_on"])
           + _row_ops(fmt, dims, batch, lay["tg"], lay["w_tg"], lay["b_tg"], kind0=8))
    bwd = []
    dl, acts, ws = lay["dl"], lay["on"], lay["w_on"]
    for i in range(depth - 1, -1, -1):
        d = dl[i + 1]
        if i > 0:
            bwd.append({"kind": 2, "x_base": d[0], "x_slog": d[1], "m": batch,
                        "k": dims[i + 1], "n": dims[i], "w_base": ws[i][0],
                        "w_slog": ws[i][1], "y_base": dl[i][0], "y_slog": dl[i][1],
                        "m_base": acts[i][0], "width": fmt.delta.width,
                        "shift": fmt.weight.frac})
        bwd.append({"kind": 3, "x_base": acts[i][0], "x_slog": acts[i][1], "m": dims[i],
                    "k": batch, "n": dims[i + 1], "w_base": d[0], "w_slog": d[1],
                    "y_base": lay["gw"][i][0], "y_slog": lay["gw"][i][1],
                    "width": fmt.grad.width,
                    "shift": fmt.act.frac + fmt.delta.frac - fmt.grad.frac})
        bwd.append({"kind": 4, "m": 1, "k": batch, "n": dims[i + 1], "w_base": d[0],
                    "w_slog": d[1], "y_base": lay["gb"][i][0], "y_slog": 0,
                    "width": fmt.grad.width, "shift": fmt.delta.frac - fmt.grad.frac})
    reads = {2: lambda o: {("d", o["x_base"]), ("a", o["m_base"])},
             3: lambda o: {("a", o["x_base"]), ("d", o["w_base"])},
             4: lambda o: {("d", o["w_base"])}}
    prev = None  # the first backward op follows the loss unit's writes (another run)
    for op in bwd:
        if prev is not None and prev not in reads[op["kind"]](op):
            op["kind"] += 8
        prev = ("d", op["y_base"])
    return fwd, bwd


# --------------------------------------------------------------------------- words

def config_pairs(t: TrainLayout, *, flags: int, huber: int, c1: int, c2: int, v_floor: int,
                 tau: int, period: int, train_steps: int) -> np.ndarray:
    """The step's registers as (address, value) rows (LR is the step program's)."""
    lay, depth = t.lay, t.depth
    g = {"NLAY": depth, "NF": t.n_fwd, "NOPS": t.n_train, "A": t.dims[-1], "B": t.batch,
         "Q_BASE": lay["on"][depth][0], "Q_SLOG": lay["on"][depth][1],
         "QT_BASE": lay["tg"][depth][0], "QT_SLOG": lay["tg"][depth][1],
         "D_BASE": lay["dl"][depth][0], "D_SLOG": lay["dl"][depth][1], "FLAGS": flags,
         "HUBER": huber, "C1": c1, "C2": c2, "V_FLOOR": v_floor, "TAU": tau,
         "PERIOD": period, "STEPS": train_steps, "PHASE": train_steps % period}
    pairs = [(G[k], v) for k, v in g.items()]
    for i in range(depth):
        f = {"K": t.dims[i], "N": t.dims[i + 1], "W_BASE": lay["w_on"][i][0],
             "W_SLOG": lay["w_on"][i][1], "B_BASE": lay["b_on"][i],
             "TW_BASE": lay["w_tg"][i][0], "TB_BASE": lay["b_tg"][i],
             "GW_BASE": lay["gw"][i][0], "G_SLOG": lay["gw"][i][1],
             "GB_BASE": lay["gb"][i][0], "P_BASE": lay["pb"][i]}
        pairs += [(32 + 16 * i + L[k], v) for k, v in f.items()]
    return np.array(pairs, np.int64)


def stream(layers, c: int) -> np.ndarray:
    """A network's words ([{'w', 'b'}, ...]) as the parameter stream: per layer its weight
    rows, then its bias, in blocks of C words (zeros past N). (blocks, C) int64."""
    blocks = []
    for layer in layers:
        w, b = np.asarray(layer["w"]), np.asarray(layer["b"])
        n = w.shape[1]
        nb = -(-n // c)
        rows = np.zeros((w.shape[0] + 1, nb * c), np.int64)
        rows[:-1, :n] = w
        rows[-1, :n] = b
        blocks.append(rows.reshape(-1, c))
    return np.concatenate(blocks)


def unstream(blocks: np.ndarray, dims, c: int) -> list[dict]:
    """The inverse of `stream`: [{'w': (K, N), 'b': (N,)}, ...] int32."""
    out, p = [], 0
    for k, n in zip(dims[:-1], dims[1:], strict=True):
        nb = -(-n // c)
        rows = np.asarray(blocks[p:p + (k + 1) * nb]).reshape(k + 1, nb * c)[:, :n]
        out.append({"w": rows[:-1].astype(np.int32), "b": rows[-1].astype(np.int32)})
        p += (k + 1) * nb
    return out


def chunks(shape: kp.KernelShape, sel: int, rows: int, cols: int, name: str):
    """A matrix of `rows` rows from base 0 as descriptors of at most max(NMAX, BMAX) rows
    each (a descriptor's limit); names name:0, name:<r0>, ... (`split` cuts its words)."""
    step = max(shape.nmax, shape.bmax)
    return tuple(kp.Matrix(sel, r0, 0, min(step, rows - r0), cols, f"{name}:{r0}")
                 for r0 in range(0, rows, step))


def split(name: str, array: np.ndarray, shape: kp.KernelShape) -> dict:
    """`array`'s rows under the chunk names `chunks` gives `name`."""
    step = max(shape.nmax, shape.bmax)
    return {f"{name}:{r0}": array[r0:r0 + step] for r0 in range(0, len(array), step)}


def join(outs: dict, name: str) -> np.ndarray:
    """The chunks of store `name` back in one array."""
    parts = sorted((int(k.split(":")[1]), v) for k, v in outs.items()
                   if k.split(":")[0] == name)
    return np.concatenate([v for _, v in parts])


def param_matrices(shape: kp.KernelShape, blocks: int, load: bool) -> tuple:
    """The four parameter banks' first `blocks` blocks (BANKS order), loaded or stored."""
    sel0 = kp.LOAD_PARAM if load else kp.STORE_PARAM
    return tuple(m for i, bank in enumerate(BANKS)
                 for m in chunks(shape, sel0 + i, blocks, shape.c, bank))


def status_matrix(name: str = "status") -> kp.Matrix:
    """The status row a run stores (kp.STATUS_WORDS; `check_status` reads it)."""
    return kp.Matrix(kp.STORE_STATUS, 0, 0, 1, len(kp.STATUS_WORDS), name)


def init_program(t: TrainLayout, n_pairs: int) -> kp.Program:
    """Loads the step's registers ('cfg', n_pairs rows), the four parameter banks ('master',
    'm', 'v', 'target' streams) and the whole op table; runs the step's init (both nets'
    operand words); stores the status row."""
    cfg = chunks(t.shape, kp.LOAD_CFG, n_pairs, 2, "cfg")
    return kp.Program((*cfg, *param_matrices(t.shape, t.lay["pdepth"], True)), t.ops,
                      (status_matrix(),), first=0,
                      cmd=kp.CMD_INIT)


def step_program(t: TrainLayout, sync: bool) -> kp.Program:
    """One SGD step: loads 'x' (s then s', 2B x K act words) for the online net, 'xn' (s')
    for the target, 'batch' (B x 4) and 'lr' (one (address, value) row); runs the step on
    the op table the kernel holds; stores 'td' (B x 2: td, |td|), 'q' (Q(s), B x A value
    words), the status row and (sync) the four parameter banks."""
    lay, b, k, a = t.lay, t.batch, t.dims[0], t.dims[-1]
    loads = (kp.Matrix(kp.LOAD_ACT, lay["on"][0][0], lay["on"][0][1], 2 * b, k, "x"),
             kp.Matrix(kp.LOAD_ACT, lay["tg"][0][0], lay["tg"][0][1], b, k, "xn"),
             kp.Matrix(kp.LOAD_BATCH, 0, 0, b, 4, "batch"),
             kp.Matrix(kp.LOAD_CFG, 0, 0, 1, 2, "lr"))
    q = lay["on"][t.depth]
    stores = (kp.Matrix(kp.STORE_TD, 0, 0, b, 2, "td"),
              kp.Matrix(kp.STORE_ACT, q[0], q[1], b, a, "q"), status_matrix(),
              *(param_matrices(t.shape, t.lay["pdepth"], False) if sync else ()))
    return kp.Program(loads, np.zeros((0, len(kp.FIELDS)), np.int64), stores,
                      cmd=kp.CMD_STEP)


def infer_program(t: TrainLayout) -> kp.Program:
    """An inference on the step's online operand words: loads 'x' (infer_rows x K act
    words), runs the table's inference ops (op_first = n_train), stores 'y' (value words)."""
    lay = t.lay
    x = kp.Matrix(kp.LOAD_ACT, lay["on"][0][0], lay["on"][0][1], t.infer_rows, t.dims[0], "x")
    q = lay["on"][t.depth]
    y = kp.Matrix(kp.STORE_ACT, q[0], q[1], t.infer_rows, t.dims[-1], "y")
    return kp.Program((x,), t.ops[t.n_train:], (y,), first=t.n_train)


def check_status(row: np.ndarray, steps: int, what: str) -> tuple[int, int]:
    """A status row read back (STATUS_WORDS): raises a one-line RuntimeError if the kernel
    stopped early or the step counter is not `steps`; returns (saturations, cycles)."""
    words = np.asarray(row, np.int64).reshape(-1) & 0xFFFFFFFF
    status, sats, cycles, got = (int(v) for v in words)
    if status == kp.STATUS_UNSET:
        raise RuntimeError(f"FPGA learner: the {what} stopped before its stores (no status "
                           f"row written)")
    if status:
        bits = [v for k, v in kp.STATUS.items() if status & k]
        raise RuntimeError(f"FPGA learner: the {what} failed: {', '.join(bits)}")
    if got != steps & 0xFFFFFFFF:
        raise RuntimeError(f"FPGA learner: after the {what} the kernel's step counter is "
                           f"{got}, the host expected {steps}")
    return sats, cycles
