"""The learning module's work as array products, and the cycle model of the array.

An inference or an SGD step is a list of *phases*; a phase is a list of products
(M, K, N) = X (M, K) @ W (K, N) that do not depend on each other, so the array streams their
tiles back to back; a phase starts when every product it reads is in the banks. A product
is tiled row block major (R rows by C columns per tile, K beats each).

`product_cycles` / `schedule_cycles` are the cycle model of hrl_learn_mac_array (its
in_ready rule: a tile's last beat waits until the previous tile's drain has at most 3 rows
left and no last beat is in flight; its first output row leaves 8 cycles after its last
beat). The array's testbench (`test_schedule_cycles`) streams schedules through the RTL and
checks this model against the simulated count cycle for cycle; the tables of
experiments/rtl/learner_cycles.py simulate some points and take the model for the rest.

`run_cycles` is the cycle model of the engine (hrl_learn_engine) running a table of ops: its
tiles stream back to back across ops, each op's beats waiting only by the engine's rules (a
chained op's beat for the tile of the previous op it reads, an independent op's very last
beat and any other op's first for the previous op written whole), plus the run's own
cycles. `dqn_forward_ops` / `dqn_backward_ops` are the step module's two engine runs (the
host's op table for hrl_learn_step, hrl.fixed_point.train_program.step_ops): the model of
`step_cycles`' array term for DQN. The engine's inference (`inference_cycles`) is the same
model on one net's forward ops.

`DEP_GAP` is the controller's cost between dependent phases (the activation unit's
register, the bank write, the bank's 4-cycle read) and `loss_cycles` / `update_cycles` /
`target_cycles` the loss unit's, the Adam lanes' and the target unit's passes. For DQN they
are what the step module (fpga_rtl/rtl/hrl_learn_step.v) runs, and its simulated phases set
their constants (experiments/results/fpga_learner/step_cycles.md): the loss unit reads three
Q rows per sample through the engine's host port (Q(s), the online net's Q(s') and the
target's Q'(s')), so a sample takes LOSS_READS cycles; the Adam walk takes a block of C
parameters a cycle, the operand words written back, and updates the target's masters
beside them when due (every `target_update_period` steps). The target net's operand words
are then written by a walk that runs while the next step's engine runs the online net's
forward ops, whose run the target's ops follow as a run of their own
(`dqn_target_cycles`: what that split costs the next step). For DDPG they are what its step module
(fpga_rtl/rtl/hrl_learn_step_ddpg.v) runs, in FixedDDPG.sgd_step's order, and its simulated
phases set their constants (experiments/results/fpga_learner/ddpg_step_cycles.md): seven
engine runs (`ddpg_runs`), the loss unit's critic rows (two Q rows read per sample) and
actor rows (none read), three clip passes (the actions into the critics' inputs, twice, and
the clip's backward pass) of CLIP_CYCLES a sample (pipelined) and CLIP_PIPE of tail, an Adam
walk per net and one target walk over both.
"""

from __future__ import annotations

import math

DEP_GAP = 6  # activation register + bank write + 4-cycle bank read before a dependent beat
OUT_LATENCY = 8  # a tile's last beat -> its first output row (hrl_learn_mac_array)
LOSS_READS = 3  # DQN's Q rows read per sample (hrl_learn_step: Q(s), Q(s') online, Q'(s'))
DQN_LOSS_PIPE = 26  # DQN's loss pass: the reads' 5 cycles, the loss unit's 20, the hand-off
DDPG_CRITIC_READS = 2  # DDPG's critic rows: Q(s, a) and Q'(s', mu'(s')) read per sample
DDPG_CRITIC_PIPE = 21  # ... the reads' 5 cycles, the loss unit's 15, the hand-off
DDPG_ACTOR_PIPE = 16  # DDPG's actor rows (the constant delta, nothing read): 15 + hand-off
CLIP_CYCLES = 2  # a sample of a DDPG clip pass: its reads and writes, two each at most
CLIP_PIPE = 8  # ... the pass's tail: the last reads' 5 cycles, their register, the last writes
CLIP_PASSES = 3  # mu'(s') and mu(s) into the critics' inputs, the clip's backward pass
ADAM_PIPE = 50  # an Adam walk: gradient read 5 + Adam 33 + operand 9 + counts 2 + hand-off
TARGET_PIPE = 14  # a target walk: reads 2 + target unit 9 + its counts' 2 + the hand-off
STEP_HANDOFF = 3  # hrl_learn_step: the command's start, its configuration's check, its end
DDPG_HANDOFF = 1  # hrl_learn_step_ddpg: its configuration's check (start and end are in its runs)
SPLIT_GAP = 3  # hrl_learn_step: the online net's run done -> the target's run started
# hrl_learn_engine's `done` waits a cycle after its last write for the activation unit's
# saturation count (hrl_learn_activation: a row's count is in two cycles after the row).
SAT_COUNT_LAG = 1
# hrl_learn_engine's run: the first op's load before the first beat and the last write's
# hand-off to `done`; then one cycle per further op to load it (RUN_FIXED + n_ops - 1 in all).
RUN_FIXED = 3 + SAT_COUNT_LAG
# A tile's way into its bank beyond OUT_LATENCY and its rows (hrl_learn_engine's schedule):
# the banks' 4-cycle read of its beats' operands before the array, the mask bank's 4-cycle
# read of each drained row, the activation register and the bank write. A tile's rows are
# written OUT_LATENCY + rows + WRITE_LAG cycles after its last beat's issue (the engine's
# simulated inferences, forward_cycles.md, check it cycle for cycle).
WRITE_LAG = 8
# A chained beat reads the write position registered (hrl_learn_engine's chained test), so
# it issues CHAIN_LAG cycles after the tile it reads is written; the previous op's last tile
# is seen at once (that op is then written whole, which the engine reads unregistered).
CHAIN_LAG = 1


def tiles(m: int, n: int, r: int, c: int) -> list[int]:
    """The rows each tile of an (M, N) output drains, in the array's order."""
    return [min(r, m - r0) for r0 in range(0, m, r) for _ in range(0, n, c)]


def phase_cycles(products, r: int, c: int) -> int:
    """Cycles from a phase's first beat to its last output row, inclusive."""
    last = None  # cycle of the previous tile's last beat
    rows_prev = 0
    rows_last = 0
    for m, k, n in products:
        for rows in tiles(m, n, r, c):
            if last is None:
                last = k - 1
            else:
                last += max(k, rows_prev, 3)
            rows_prev = rows_last = rows
    return last + OUT_LATENCY + rows_last


def product_cycles(m: int, k: int, n: int, r: int, c: int) -> int:
    return phase_cycles([(m, k, n)], r, c)


def schedule_cycles(phases, r: int, c: int) -> int:
    """Cycles of dependent phases run one after another (DEP_GAP between them)."""
    return sum(phase_cycles(p, r, c) for p in phases) + DEP_GAP * max(len(phases) - 1, 0)


def macs(phases) -> int:
    return sum(m * k * n for p in phases for m, k, n in p)


# ------------------------------------------------------------------ the learner's work
def forward_phases(dims, batches):
    """Forward passes of nets of one shape `dims` (d0, ..., dL) on `batches` rows each,
    layer by layer (each net's layer i waits for its layer i - 1)."""
    return [[(b, dims[i], dims[i + 1]) for b in batches] for i in range(len(dims) - 1)]


def backward_phases(dims, batch: int, input_delta: bool = False, weights: bool = True):
    """The backward pass: per layer, from the last, its weight gradient (with the bias
    gradient as one more row of A^T, a row of ones) and the delta of its input."""
    out = []
    for i in range(len(dims) - 2, -1, -1):
        p = []
        if weights:
            p.append((dims[i] + 1, batch, dims[i + 1]))
        if i > 0 or input_delta:
            p.append((batch, dims[i + 1], dims[i]))
        out.append(p)
    return out


def params(dims) -> int:
    return sum((dims[i] + 1) * dims[i + 1] for i in range(len(dims) - 1))


def blocks(dims, c: int) -> int:
    """The parameter stream's length: per layer, its weight rows and its bias row in blocks
    of C words."""
    return sum((dims[i] + 1) * math.ceil(dims[i + 1] / c) for i in range(len(dims) - 1))


def update_cycles(dims, c: int, pipe: int = ADAM_PIPE) -> int:
    """Optimizer (C Adam lanes: moments, root, step, the operand's rounding), one row block
    of C parameters per cycle; `pipe` the walk's latency and hand-offs."""
    return blocks(dims, c) + pipe


def target_cycles(dims, c: int) -> int:
    """A target walk (Polyak or a hard copy with the target's operand words, or the
    operand words alone): DDPG's step module runs one over both nets' streams after its
    Adam walks, when due (`step_cycles`); DQN's writes the target's operand words during
    the next step's forward run (`dqn_target_cycles`)."""
    return blocks(dims, c) + TARGET_PIPE


def loss_cycles(batch: int, reads: int, pipe: int) -> int:
    """The loss unit: `reads` bank reads per sample (one sample a cycle with none) and
    `pipe` cycles of latency (DQN's step module: LOSS_READS, DQN_LOSS_PIPE; DDPG's:
    DDPG_CRITIC_READS, DDPG_CRITIC_PIPE and 0, DDPG_ACTOR_PIPE)."""
    return max(reads, 1) * batch + pipe


def ddpg_loss_cycles(batch: int) -> int:
    """DDPG's passes between the engine's runs: the loss unit's critic rows and actor rows
    and the three clip passes (hrl_learn_step_ddpg)."""
    return (loss_cycles(batch, DDPG_CRITIC_READS, DDPG_CRITIC_PIPE)
            + loss_cycles(batch, 0, DDPG_ACTOR_PIPE)
            + CLIP_PASSES * (CLIP_CYCLES * batch + CLIP_PIPE))


def dqn_step(dims, batch: int):
    """Double DQN: online net on s and s' (2B rows), target net on s'; loss; backward."""
    return forward_phases(dims, [2 * batch, batch]), backward_phases(dims, batch)


def ddpg_runs(actor, critic, batch: int):
    """DDPG's step as hrl_learn_step_ddpg runs it: seven engine runs (each a list of
    dependent phases), in FixedDDPG.sgd_step's order. 0: the target actor on s', then the
    critic on (s, a) (its first layer independent of the actor's last, so streamed beside
    it); 2: the target critic on (s', mu'(s')); 4: the critic's backward pass and gradients;
    6: the actor on s; 8: the updated critic on (s, mu(s)); 10: the critic's backward pass to
    its input (dQ/da, no gradients); 12: the actor's backward pass and gradients."""
    ta = forward_phases(actor, [batch])
    c = forward_phases(critic, [batch])
    return [
        ta[:-1] + [ta[-1] + c[0]] + c[1:],
        forward_phases(critic, [batch]),
        backward_phases(critic, batch),
        forward_phases(actor, [batch]),
        forward_phases(critic, [batch]),
        backward_phases(critic, batch, input_delta=True, weights=False),
        backward_phases(actor, batch),
    ]


def ddpg_step(actor, critic, batch: int):
    """DDPG's products as (forward phases, backward phases): `ddpg_runs`' forward runs and
    backward runs, each concatenated."""
    runs = ddpg_runs(actor, critic, batch)
    fwd = [p for i in (0, 1, 3, 4) for p in runs[i]]
    bwd = [p for i in (2, 5, 6) for p in runs[i]]
    return fwd, bwd


def step_cycles(kind: str, dims, batch: int, r: int, c: int, critic=None,
                target_period: int = 1) -> dict:
    """Array, loss, update and target cycles of one SGD step (a dict), as the step modules
    run it (hrl_learn_step for DQN, hrl_learn_step_ddpg for DDPG: `dims` the actor's,
    `critic` the critic's; its 'loss' holds the loss unit's rows and the clip passes, its
    'update' both Adam walks, its 'target' the walk over both nets). 'total' is their sum
    with the target's cycles spread over `target_period` steps (the step modules update the
    target every `target_update_period` steps; 1, the configs' default, Polyak every step);
    'target' is what one update costs: DDPG's walk, DQN's split forward run in the next step
    (`dqn_target_cycles`). DQN's 'array' is the step module's two engine runs
    (`run_cycles` of `dqn_forward_ops` and `dqn_backward_ops`), its total with the
    module's STEP_HANDOFF. DDPG's 'array' is its seven runs' phases (`ddpg_runs`,
    `schedule_cycles`), DEP_GAP + SAT_COUNT_LAG between runs, its total with the module's
    DDPG_HANDOFF."""
    if not isinstance(target_period, int) or target_period < 1:
        raise ValueError(f"agent.target_update_period: {target_period!r} must be an int >= 1")
    if kind == "dqn":
        fwd, bwd = dqn_step(dims, batch)
        upd = update_cycles(dims, c, ADAM_PIPE)
        target = dqn_target_cycles(dims, batch, r, c)
        loss = loss_cycles(batch, LOSS_READS, DQN_LOSS_PIPE)
        # hrl_learn_step: the engine's two runs, the units' passes, its start and end
        array = run_cycles(dqn_forward_ops(dims, batch), r, c) \
            + run_cycles(dqn_backward_ops(dims, batch), r, c)
        work = macs(fwd) + macs(bwd)
        handoff = STEP_HANDOFF
    else:
        runs = ddpg_runs(dims, critic, batch)
        upd = update_cycles(dims, c, ADAM_PIPE) + update_cycles(critic, c, ADAM_PIPE)
        target = blocks(dims, c) + blocks(critic, c) + TARGET_PIPE
        loss = ddpg_loss_cycles(batch)
        array = sum(schedule_cycles(run, r, c) for run in runs) \
            + len(runs) * (DEP_GAP + SAT_COUNT_LAG)
        work = sum(macs(run) for run in runs)
        handoff = DDPG_HANDOFF
    total = array + loss + upd + -(-target // target_period) + handoff
    return {"array": array, "loss": loss, "update": upd, "target": target, "total": total,
            "macs": work}


# ------------------------------------------------------------------ the engine's runs
# An op of an engine run: (M, K, N, dep), dep how its beats wait on the op before it
# (hrl_learn_engine's schedule): FIRST the run's first op, CHAINED (reads the previous op's
# output: a beat waits for the previous op's tile that holds its column), INDEP (reads
# nothing the previous op writes, KIND + 8: only its very last beat waits for the previous
# op written whole), WHOLE (any other: its first beat waits for the previous op written whole).
FIRST, CHAINED, INDEP, WHOLE = "first", "chained", "indep", "whole"


def run_cycles(ops, r: int, c: int) -> int:
    """Cycles of one engine run of `ops` ((M, K, N, dep) each) on an R x C array, from
    `start` to `done`: every tile's last beat max(K, rows of the previous tile, 3) cycles
    after the previous one (the array's rule, as `phase_cycles`) unless an op's wait is
    later; a tile is written OUT_LATENCY + its rows + WRITE_LAG cycles after its last beat;
    the run ends when its last op is written whole, RUN_FIXED + n_ops - 1 cycles on top.
    Unlike `schedule_cycles` (phases one after another with DEP_GAP), consecutive ops
    overlap, as the engine runs them."""
    last = None  # the previous tile's last beat (the first beat of the run is cycle 0)
    rows_prev = 0
    prev = None  # the previous op: {(row block, column block): written}, whole, its C
    for m, k, n, dep in ops:
        tiles = [(r0 // r, c0 // c, min(r, m - r0)) for r0 in range(0, m, r)
                 for c0 in range(0, n, c)]
        written = {}
        for i, (rb, cb, rows) in enumerate(tiles):
            t = k - 1 if last is None else last + max(k, rows_prev, 3)
            if prev is not None and dep == WHOLE:
                t = max(t, prev["whole"] + k - 1)
            elif prev is not None and dep == CHAINED:
                # beat kk reads column kk: the previous op's tile (rb, kk // c) is written
                # (CHAIN_LAG later, but for its last tile: that op is then written whole)
                for j in range(-(-k // c)):
                    if (rb, j) in prev["tiles"]:
                        lag = 0 if (rb, j) == prev["last"] else CHAIN_LAG
                        t = max(t, prev["tiles"][(rb, j)] + lag + k - 1 - j * c)
            elif prev is not None and dep == INDEP and i == len(tiles) - 1:
                t = max(t, prev["whole"])
            last, rows_prev = t, rows
            written[(rb, cb)] = t + OUT_LATENCY + rows + WRITE_LAG
        prev = {"tiles": written, "whole": max(written.values()), "last": tiles[-1][:2]}
    return prev["whole"] + RUN_FIXED + len(ops) - 1


def net_forward_ops(dims, batch: int, first: str = FIRST):
    """One net's forward ops on `batch` rows: each layer reads the previous one's output."""
    return [(batch, dims[i], dims[i + 1], first if i == 0 else CHAINED)
            for i in range(len(dims) - 1)]


def dqn_forward_ops(dims, batch: int):
    """The step's forward run: the online net on s and s' stacked (2B rows), then the target
    net on s' (its first op independent of the online net's last)."""
    return net_forward_ops(dims, 2 * batch) + net_forward_ops(dims, batch, INDEP)


def dqn_target_cycles(dims, batch: int, r: int, c: int) -> int:
    """What a target update costs hrl_learn_step: the next step's forward is two engine
    runs instead of one, the online net's (beside it the walk of the target's operand words,
    which the target's run waits for) and the target net's, SPLIT_GAP cycles apart. The
    target's masters move inside Adam's walk, at no cost."""
    online = run_cycles(net_forward_ops(dims, 2 * batch), r, c)
    target = run_cycles(net_forward_ops(dims, batch), r, c)
    # the operand walk ends at its `done` (no walk's hand-off: SPLIT_GAP follows)
    split = max(online, target_cycles(dims, c) - 1) + SPLIT_GAP + target
    return split - run_cycles(dqn_forward_ops(dims, batch), r, c)


def dqn_backward_ops(dims, batch: int):
    """The step's backward run, per layer from the last: the delta of its input (kind 2,
    not for the first layer), its weight gradient (kind 3, M = its input width) and its
    bias gradient (kind 4, its own op of one row: 1^T @ delta). Each reads nothing its
    predecessor writes (the first follows the loss unit, another run), so all are
    independent."""
    ops = []
    for i in range(len(dims) - 2, -1, -1):
        if i > 0:
            ops.append((batch, dims[i + 1], dims[i], INDEP))
        ops += [(dims[i], batch, dims[i + 1], INDEP), (1, batch, dims[i + 1], INDEP)]
    return [(*ops[0][:3], FIRST), *ops[1:]]


def inference_cycles(dims, r: int, c: int, batch: int = 1) -> int:
    """The engine's run of one net's forward pass on `batch` states."""
    return run_cycles(net_forward_ops(dims, batch), r, c)


# ------------------------------------------------------------------ the engine's limits
def check_fits(dims, batch: int, *, max_width: int, max_layers: int, max_batch: int) -> None:
    """Refuse, in one line naming the key and the limit, a network or batch that an engine
    built with these parameters cannot run (the host driver calls this before it builds or
    simulates anything). `dims` = (inputs, hidden..., outputs); `max_width` bounds every
    layer's width (the banks' rows and columns and the array's K), `max_layers` the number
    of weight layers, `max_batch` the batch."""
    if len(dims) < 2:
        raise ValueError(f"network: needs at least an input and an output width, got {dims}")
    if len(dims) - 1 > max_layers:
        raise ValueError(f"network: {len(dims) - 1} layers exceed the engine's "
                         f"max_layers={max_layers}")
    for i, d in enumerate(dims):
        if not isinstance(d, int) or d < 1 or d > max_width:
            raise ValueError(f"network: width {d!r} of layer {i} outside the engine's "
                             f"1..max_width={max_width}")
    if not isinstance(batch, int) or batch < 1 or batch > max_batch:
        raise ValueError(f"train.batch_size: {batch!r} outside the engine's "
                         f"1..max_batch={max_batch}")
