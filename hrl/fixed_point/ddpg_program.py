"""The host's side of DDPG's SGD step on the FPGA learner (fpga_rtl/rtl/hrl_learn_step_ddpg.v):
where an actor and a critic live in the step's banks, the engine's op table of the step's
seven runs, the step's registers, and both nets' words as the parameter stream. Plain numpy,
as `train_program` is for DQN's step.

    banks = StepBanks.of(r, c, nmax, nl, bmax)      # the step module's bank depths
    lay = layout(banks, dims_a, dims_c, batch)      # bases and strides
    runs = step_runs(agent.fmts, dims_a, dims_c, lay)
    pairs = config_pairs(agent, lay, run_ends(runs), period=..., tau=...)
    words = stream({"actor": ..., "critic": ...}, c)  # master, m, v or target words
    # on the training kernel (hrl_learn_kernel, TRAIN = 2), through its OpenCL driver:
    kernel.run(init_program(shape, lay, runs, len(pairs)), {cfg, master, m, v, target})
    # (the arrays cut into the programs' descriptors by train_program.split)
    kernel.run(step_program(shape, lay), {x, xn, c0, tc0, batch, lr})

One definition for every driver of the step: its testbench (sim/hrl_learn_step_ddpg/), which
checks every word of whole steps against FixedDDPG.sgd_step, and the training kernel built
with the DDPG step (tests/rtl/test_rtl_learn_train.py checks its steps the same way), which
the training loop drives with `placement.train: fpga` (`kernel_train_ddpg`).

The seven runs (hrl_learn_step_ddpg's header): the target actor on s' and then the critic on
[s, a]; the target critic on [s', mu'(s')]; the critic's backward pass and gradients; the
actor on s; the critic on [s, mu(s)]; the critic's backward pass to its input (no
gradients); the actor's backward pass and gradients.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from hrl.fixed_point import kernel_program as kp
from hrl.fixed_point import optim
from hrl.fixed_point import train_program as tp
from hrl.fixed_point.formats import FxFormats

# hrl_learn_step_ddpg's registers (its header): the globals by address, a layer's fields at
# LAYER0 + 16 l + field (the actor's layers first, then the critic's), the action box's
# bounds at LOW0 + i and HIGH0 + i.
GLOBALS = ("NLA", "NLC", "S", "A", "B", "OP_F1", "OP_F2", "OP_B1", "OP_F3", "OP_F4", "OP_B2",
           "NOPS", "TA_BASE", "TA_SLOG", "TCI_BASE", "TCI_SLOG", "Q_BASE", "Q_SLOG",
           "QT_BASE", "QT_SLOG", "D_BASE", "D_SLOG", "MU_BASE", "MU_SLOG", "CI_BASE",
           "CI_SLOG", "DI_BASE", "DI_SLOG", "DA_BASE", "DA_SLOG", "FLAGS", "HUBER", "C1", "C2",
           "LR_C", "LR_A", "V_FLOOR", "TAU", "PERIOD", "STEPS", "PHASE")
G = {name: i for i, name in enumerate(GLOBALS)}
L = tp.L  # a layer's fields: the same as DQN's step
LAYER0, LOW0, HIGH0 = 64, 2048, 3072
# The ends of the runs the step's OP_* registers name (the seventh's end is NOPS).
RUN_ENDS = ("OP_F1", "OP_F2", "OP_B1", "OP_F3", "OP_F4", "OP_B2", "NOPS")


@dataclasses.dataclass(frozen=True)
class StepBanks:
    """The step module's bank lanes and depths for its parameters (R, C, NMAX, NL, BMAX):
    `la` lanes of the activation and delta banks, `c` of the weight banks; the depths as its
    header sizes them (activations of the four nets, both nets' online and target weights
    and biases, deltas and gradients)."""

    la: int
    c: int
    adepth: int
    wdepth: int
    bdepth: int
    ddepth: int

    @classmethod
    def of(cls, r: int, c: int, nmax: int, nl: int, bmax: int) -> StepBanks:
        la = max(r, c)
        sla = kp.clog2(-(-nmax // la))
        slc = kp.clog2(-(-nmax // c))
        return cls(la, c, adepth=2 * (nl + 1) * bmax << sla, wdepth=2 * nl * nmax << slc,
                   bdepth=2 * nl << slc, ddepth=((nl + 1) * bmax + nl * (nmax + 1)) << sla)


def layout(banks: StepBanks, dims_a, dims_c, batch: int) -> dict:
    """Bases and strides of everything the step reads and writes. Activations: the actor's
    input (s), the target actor's (s'), their hidden and output matrices (shared: the target
    actor's are dead once its output is clipped), the critic's and the target critic's.
    Deltas: the critic's (its input delta included), the actor's (none at its input).
    Global layer l: the actor's 0..NLA-1, the critic's NLA..; "pb" each layer's first block
    in the parameter stream, "blocks" the stream's length. AssertionError when the nets do
    not fit the banks (a driver refuses them first, naming the key)."""
    la, c = banks.la, banks.c
    na, nc = len(dims_a) - 1, len(dims_c) - 1
    sa = [kp.clog2(-(-d // la)) for d in dims_a]
    sc = [kp.clog2(-(-d // la)) for d in dims_c]
    lay, base = {"batch": batch}, 0

    def put(rows, slog):
        nonlocal base
        out = (base, slog)
        base += rows << slog
        return out

    lay["a"] = [None] + [put(batch, sa[i]) for i in range(1, na + 1)]
    lay["x"], lay["xn"] = put(batch, sa[0]), put(batch, sa[0])
    lay["c"] = [put(batch, sc[i]) for i in range(nc + 1)]
    lay["tc"] = [put(batch, sc[i]) for i in range(nc + 1)]
    assert base <= banks.adepth, f"activations need {base} > {banks.adepth}"
    dims = [*zip(dims_a[:-1], dims_a[1:], strict=True),
            *zip(dims_c[:-1], dims_c[1:], strict=True)]
    wb, bb = 0, 0
    lay["w_on"], lay["w_tg"], lay["b_on"], lay["b_tg"] = [], [], [], []
    for net in ("on", "tg"):
        for k, n in dims:
            slog = kp.clog2(-(-n // c))
            lay[f"w_{net}"].append((wb, slog))
            lay[f"b_{net}"].append(bb)
            wb += k << slog
            bb += 1 << slog
    assert wb <= banks.wdepth and bb <= banks.bdepth, "weights do not fit the banks"
    base = 0
    lay["dc"] = [put(batch, sc[i]) for i in range(nc + 1)]
    lay["da"] = [None] + [put(batch, sa[i]) for i in range(1, na + 1)]
    lay["gw"], lay["gb"] = [], []
    for k, n in dims:
        slog = kp.clog2(-(-n // la))
        lay["gw"].append(put(k, slog))
        lay["gb"].append(put(1, slog))
    assert base <= banks.ddepth, f"deltas need {base} > {banks.ddepth}"
    pb, p = [], 0
    for k, n in dims:
        pb.append(p)
        p += (k + 1) * -(-n // c)
    lay["pb"], lay["blocks"], lay["dims"] = pb, p, dims
    return lay


def step_runs(f: FxFormats, dims_a, dims_c, lay: dict) -> list[list[dict]]:
    """The engine's op table: the step's seven runs (the module docstring), each a list of
    ops; an op that reads nothing its predecessor writes is marked independent (KIND + 8,
    the engine overlaps it with that one)."""
    na, batch = len(dims_a) - 1, lay["batch"]

    def forward(acts, x0, dims, wkey, g0, out_last):
        ops = []
        depth = len(dims) - 1
        for i in range(depth):
            last = i == depth - 1
            out = out_last if last else f.act
            x = x0 if i == 0 else acts[i]
            ops.append({
                "x_base": x[0], "x_slog": x[1], "m": batch, "k": dims[i],
                "n": dims[i + 1], "w_base": lay[wkey][g0 + i][0],
                "w_slog": lay[wkey][g0 + i][1], "b_base": lay["b" + wkey[1:]][g0 + i],
                "y_base": acts[i + 1][0], "y_slog": acts[i + 1][1], "relu": int(not last),
                "shift": f.act.frac + f.weight.frac - out.frac, "width": out.width,
                "bshift": f.act.frac, "kind": 0})
        return ops

    def backward(dl, acts, x0, dims, g0, grads=True, to_input=False):
        ops = []
        for i in range(len(dims) - 2, -1, -1):
            d = dl[i + 1]
            x = x0 if i == 0 else acts[i]
            w = lay["w_on"][g0 + i]
            if i > 0 or to_input:
                op = {"kind": 2 if i > 0 else 1, "x_base": d[0], "x_slog": d[1],
                      "m": batch, "k": dims[i + 1], "n": dims[i], "w_base": w[0],
                      "w_slog": w[1], "y_base": dl[i][0], "y_slog": dl[i][1],
                      "width": f.delta.width, "shift": f.weight.frac}
                if i > 0:
                    op["m_base"] = acts[i][0]
                ops.append(op)
            if grads:
                gw, gb = lay["gw"][g0 + i], lay["gb"][g0 + i]
                ops.append({"kind": 3, "x_base": x[0], "x_slog": x[1], "m": dims[i],
                            "k": batch, "n": dims[i + 1], "w_base": d[0], "w_slog": d[1],
                            "y_base": gw[0], "y_slog": gw[1], "width": f.grad.width,
                            "shift": f.act.frac + f.delta.frac - f.grad.frac})
                ops.append({"kind": 4, "m": 1, "k": batch, "n": dims[i + 1],
                            "w_base": d[0], "w_slog": d[1], "y_base": gb[0], "y_slog": 0,
                            "width": f.grad.width, "shift": f.delta.frac - f.grad.frac})
        return ops

    a, c, tc = lay["a"], lay["c"], lay["tc"]
    critic_f = forward(c, c[0], dims_c, "w_on", na, f.value)
    critic_f[0]["kind"] = 8  # after the target actor's ops, reads none of their words
    runs = [
        forward(a, lay["xn"], dims_a, "w_tg", 0, f.act) + critic_f,
        forward(tc, tc[0], dims_c, "w_tg", na, f.value),
        backward(lay["dc"], c, c[0], dims_c, na),
        forward(a, lay["x"], dims_a, "w_on", 0, f.act),
        forward(c, c[0], dims_c, "w_on", na, f.value),
        backward(lay["dc"], c, c[0], dims_c, na, grads=False, to_input=True),
        backward(lay["da"], a, lay["x"], dims_a, 0),
    ]
    reads = {1: lambda o: {("d", o["x_base"])},
             2: lambda o: {("d", o["x_base"]), ("a", o["m_base"])},
             3: lambda o: {("a", o["x_base"]), ("d", o["w_base"])},
             4: lambda o: {("d", o["w_base"])}}
    for run in runs[2:3] + runs[5:]:
        prev = None  # a run's first op follows another run (or the sequencer's writes)
        for op in run:
            if prev is not None and prev not in reads[op["kind"]](op):
                op["kind"] += 8
            prev = ("d", op["y_base"])
    return runs


def run_ends(runs) -> list[int]:
    """Each run's end in the op table written run after run (the OP_* registers)."""
    return [int(e) for e in np.cumsum([len(run) for run in runs])]


def config_pairs(agent, lay: dict, ends, *, period: int, tau: float) -> list[tuple[int, int]]:
    """The step's registers as (address, value) pairs, but the two rate words (LR_C, LR_A,
    written per step: `common.step_rate`): the nets' shapes and places, the runs' ends
    (`run_ends`), the loss's and the optimizer's constants as `agent` (a FixedDDPG) makes
    them, the target update (a hard copy every `period` steps, or Polyak with `tau` < 1)
    and the action box's bounds. The step counter and its phase start at 0."""
    f, fp = agent.fmts, agent.cfg.fixed_point
    dims = lay["dims"]
    na = len(lay["a"]) - 1  # the actor's layers ([None] at its input)
    nc = len(dims) - na
    a, c, tc, dc = lay["a"], lay["c"], lay["tc"], lay["dc"]
    c1 = optim.unit_word(1.0 - fp.beta1, f, "beta1")
    c2 = optim.unit_word(1.0 - fp.beta2, f, "beta2")
    polyak = tau != 1.0
    huber = agent._huber()
    g = [("NLA", na), ("NLC", nc), ("S", dims[0][0]), ("A", dims[na - 1][1]),
         ("B", lay["batch"]), *zip(RUN_ENDS, ends, strict=True),
         ("TA_BASE", a[na][0]), ("TA_SLOG", a[na][1]), ("TCI_BASE", tc[0][0]),
         ("TCI_SLOG", tc[0][1]), ("Q_BASE", c[nc][0]), ("Q_SLOG", c[nc][1]),
         ("QT_BASE", tc[nc][0]), ("QT_SLOG", tc[nc][1]), ("D_BASE", dc[nc][0]),
         ("D_SLOG", dc[nc][1]), ("MU_BASE", a[na][0]), ("MU_SLOG", a[na][1]),
         ("CI_BASE", c[0][0]), ("CI_SLOG", c[0][1]), ("DI_BASE", dc[0][0]),
         ("DI_SLOG", dc[0][1]), ("DA_BASE", lay["da"][na][0]), ("DA_SLOG", lay["da"][na][1]),
         ("FLAGS", (2 if huber is not None else 0) | (4 if polyak else 0)),
         ("HUBER", huber or 0), ("C1", c1), ("C2", c2), ("V_FLOOR", optim.second_floor(c2, f)),
         ("TAU", optim.unit_word(tau, f, "tau") if polyak else 0), ("PERIOD", period),
         ("STEPS", 0), ("PHASE", 0)]
    items = [(G[k], int(v)) for k, v in g]
    for gl, (k, n) in enumerate(dims):
        fields = {"K": k, "N": n, "W_BASE": lay["w_on"][gl][0], "W_SLOG": lay["w_on"][gl][1],
                  "B_BASE": lay["b_on"][gl], "TW_BASE": lay["w_tg"][gl][0],
                  "TB_BASE": lay["b_tg"][gl], "GW_BASE": lay["gw"][gl][0],
                  "G_SLOG": lay["gw"][gl][1], "GB_BASE": lay["gb"][gl][0],
                  "P_BASE": lay["pb"][gl]}
        items += [(LAYER0 + 16 * gl + L[k], int(v)) for k, v in fields.items()]
    low, high = agent._bounds()
    items += [(LOW0 + i, int(v)) for i, v in enumerate(np.asarray(low))]
    items += [(HIGH0 + i, int(v)) for i, v in enumerate(np.asarray(high))]
    return items


def stream(params, c: int) -> np.ndarray:
    """Both nets' words ({"actor": [...], "critic": [...]}, each [{'w', 'b'}, ...]) as the
    parameter stream: the actor's layers, then the critic's (`train_program.stream`).
    (blocks, C) int64."""
    return tp.stream([*params["actor"], *params["critic"]], c)


# --------------------------------------------------------------------------- the kernel
def kernel_banks(shape: kp.KernelShape) -> StepBanks:
    """The bank depths of a training kernel of `shape` (its engine's: `KernelShape.depths`)."""
    d = shape.depths
    return StepBanks(shape.la, shape.c, d[kp.LOAD_ACT], d[kp.LOAD_WEIGHT], d[kp.LOAD_BIAS],
                     d[kp.LOAD_DELTA])


def op_table(runs) -> np.ndarray:
    """The runs' ops, one after the other, as the kernel's op table (n, 16)."""
    return np.array([[op.get(f, 0) for f in kp.FIELDS] for run in runs for op in run],
                    np.int64)


def init_program(shape: kp.KernelShape, lay: dict, runs, n_pairs: int) -> kp.Program:
    """Loads the step's registers ('cfg', n_pairs rows of `config_pairs`), both nets' four
    parameter banks ('master', 'm', 'v', 'target' streams, cut by `train_program.split`) and
    the op table of `runs`; runs the step's init (the operand words of all four nets);
    stores the status row. ValueError when the kernel is not DDPG's or the table is too long."""
    if shape.train != 2:
        raise ValueError(f"DDPG's step needs a training kernel with TRAIN=2, this one has "
                         f"TRAIN={shape.train}")
    ops = op_table(runs)
    if len(ops) > shape.max_ops:
        raise ValueError(f"the step's {len(ops)} ops exceed the kernel's {shape.max_ops}")
    cfg = tp.chunks(shape, kp.LOAD_CFG, n_pairs, 2, "cfg")
    return kp.Program((*cfg, *tp.param_matrices(shape, lay["blocks"], True)), ops,
                      (tp.status_matrix(),), first=0, cmd=kp.CMD_INIT)


def step_program(shape: kp.KernelShape, lay: dict, dims_a, sync: bool = True) -> kp.Program:
    """One SGD step: loads 'x' (s) and 'xn' (s') for the actor and the target actor, 'c0'
    ([s, a]) for the critic, 'tc0' (s', the target critic's input but for the target
    actor's actions, which the step writes) as act words, 'batch' (B rows of (0, reward,
    discount, IS weight): the action word is unused) and 'lr' (two (address, value) rows,
    LR_C and LR_A); runs the step on the op table the kernel holds; stores 'td' (B x 2: td,
    |td|), the status row and (sync) the four parameter banks."""
    b, s, a = lay["batch"], dims_a[0], dims_a[-1]
    loads = (kp.Matrix(kp.LOAD_ACT, *lay["x"], b, s, "x"),
             kp.Matrix(kp.LOAD_ACT, *lay["xn"], b, s, "xn"),
             kp.Matrix(kp.LOAD_ACT, *lay["c"][0], b, s + a, "c0"),
             kp.Matrix(kp.LOAD_ACT, *lay["tc"][0], b, s, "tc0"),
             kp.Matrix(kp.LOAD_BATCH, 0, 0, b, 4, "batch"),
             kp.Matrix(kp.LOAD_CFG, 0, 0, 2, 2, "lr"))
    stores = (kp.Matrix(kp.STORE_TD, 0, 0, b, 2, "td"),
              tp.status_matrix(),
              *(tp.param_matrices(shape, lay["blocks"], False) if sync else ()))
    return kp.Program(loads, np.zeros((0, len(kp.FIELDS)), np.int64), stores,
                      cmd=kp.CMD_STEP)
