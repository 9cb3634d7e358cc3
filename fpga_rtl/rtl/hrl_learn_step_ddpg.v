// hrl_learn_step_ddpg: the learning module's whole DDPG SGD step, a thin sequencer above
// hrl_learn_engine that owns the loss and clip units and the parameter walks
// (hrl_learn_walk: the optimizer's banks, the Adam and target lanes). Bit for bit
// hrl.fixed_point.ddpg.FixedDDPG.sgd_step (Adam), given the batch words,
// with both networks' state (actor and critic master weights, Adam's moments, both target
// masters, the step counter) carried in its banks from step to step. The engine holds the
// four networks: layers 0..NLA-1 of its layer registers are the actor's, NLA..NLA+NLC-1 the
// critic's, each with an online and a target copy of its operand words (so NL, the engine's
// layer count, is at least NLA + NLC), and one op table holds the step's seven engine runs,
// split by the OP_* registers. One step, from `st_start` with st_cmd 0, in sgd_step's order:
//    0 run   ops 0..OP_F1-1: the target actor on s', the critic on (s, a) (the host writes
//            s' into the target actor's input and [s, a] into the critic's);
//    1 clip  per sample, the target actor's output row (act words) read, clipped into the
//            action box (layers.clip_output: LOW, HIGH per action) and written into columns
//            S..S+A-1 of the target critic's input (the host wrote s' into columns 0..S-1);
//    2 run   ops OP_F1..OP_F2-1: the target critic on (s', mu'(s'));
//    3 loss  the loss unit's critic rows (hrl_learn_loss_ddpg): per sample, Q(s, a) and
//            Q'(s', mu'(s')) read, the output delta written into the critic's output delta
//            (D_BASE), td and |td| into the TD registers (the replay's priorities);
//    4 run   ops OP_F2..OP_B1-1: the critic's backward pass and gradients;
//    5 walk  the critic's Adam walk (below, rate LR_C): its new masters, moments and operand
//            words, so what follows reads the updated critic, as the reference does;
//    6 run   ops OP_B1..OP_F3-1: the actor on s;
//    7 clip  as 1, the actor's output into columns S.. of the critic's input (the host wrote
//            s into columns 0..S-1), the clip's masks (z <= low, z >= high) kept per sample;
//    8 run   ops OP_F3..OP_F4-1: the updated critic on (s, mu(s)) (its ReLU masks);
//    9 rows  the loss unit's actor rows: the delta -1 into D_BASE for every sample;
//   10 run   ops OP_F4..OP_B2-1: the critic's backward pass to its input (no gradients),
//            the input delta (B x (S + A)) at DI_BASE;
//   11 clip  per sample, columns S..S+A-1 of the input delta read, the clip's backward
//            (layers.clip_output_backward, with the masks of 7) written into the actor's
//            output delta (DA_BASE);
//   12 run   ops OP_B2..NOPS-1: the actor's backward pass and gradients;
//   13 walk  the actor's Adam walk (rate LR_A);
//   14 walk  when (train_steps + 1) mod PERIOD is 0 (optim.update_target): both targets,
//            Polyak with TAU or a hard copy, the target operand words written back.
// st_cmd 1 (init) computes every net's operand words from the master and target banks (the
// host's initial words), as the step's write-back does.
//
// The parameter stream (hrl_learn_walk's): layer by layer (the actor's, then the critic's,
// each at its layer's P_BASE), per layer its weight rows then its bias as row K, per row
// blocks of C words (lanes past N hold zeros); block p at address p of the master, m, v and
// target banks, which the host reads and writes in that order through st_p_*. The critic's
// Adam walk runs over layers NLA..NLA+NLC-1, the actor's over 0..NLA-1, the target and init
// walks over all.
//
// Saturations (st_sat, per step): the engine's seven runs, the loss unit's, the Adam lanes',
// the Polyak step's, and the operand roundings the step reads: the target actor's, the
// target critic's, the actor's and the critic's (computed by the previous write-back or
// init, kept in registers) and the updated critic's (its walk in phase 5): the sum
// FixedDDPG.sgd_step's metrics['saturations'] counts less the host's quantization of the
// batch. The clips saturate nothing.
//
// The host, while st_busy is low, has the engine's whole interface (passed through as in
// hrl_learn_step), writes the step's registers (st_cfg_*), the batch's per-sample words
// (st_bt_*: reward (value), discount and IS weight (prob)), the parameter banks (st_p_*),
// reads the TD words (st_td_*) and the results. The rate words are the host's each step
// (common.step_rate).
//   st_cfg addresses, globals:  0 NLA 1 NLC the actor's and the critic's layers (each >= 1,
//     NLA + NLC <= NL)   2 S observation words (1.., S + A <= NMAX)   3 A actions
//     (1..AMAX)   4 B batch (1..BMAX)   5 OP_F1 6 OP_F2 7 OP_B1 8 OP_F3 9 OP_F4 10 OP_B2
//     11 NOPS the runs' ends (0 < OP_F1 < ... < OP_B2 < NOPS <= 6 NL)
//     12 TA_BASE 13 TA_SLOG the target actor's output (B x A, activation bank)
//     14 TCI_BASE 15 TCI_SLOG the target critic's input (B x (S + A))
//     16 Q_BASE 17 Q_SLOG the critic's output (B x 1)   18 QT_BASE 19 QT_SLOG the target
//     critic's   20 D_BASE 21 D_SLOG the critic's output delta (B x 1, delta bank)
//     22 MU_BASE 23 MU_SLOG the actor's output (B x A)   24 CI_BASE 25 CI_SLOG the critic's
//     input   26 DI_BASE 27 DI_SLOG the critic's input delta (delta bank)   28 DA_BASE
//     29 DA_SLOG the actor's output delta (delta bank)   30 FLAGS bit 1 Huber clip, bit 2
//     Polyak (else a hard copy)   31 HUBER (value word)
//     32 C1 = 1 - beta1 33 C2 = 1 - beta2 (unit words)   34 LR_C 35 LR_A (rate words)
//     36 V_FLOOR (second-moment word)   37 TAU (unit word)   38 PERIOD (>= 1)
//     39 STEPS (train_steps)   40 PHASE (train_steps mod PERIOD)
//   per layer l (0..NL-1), address 64 + 16 l + f: hrl_learn_step's fields (0 K 1 N 2 W_BASE
//     3 W_SLOG 4 B_BASE 5 TW_BASE 6 TB_BASE 7 GW_BASE 8 G_SLOG 9 GB_BASE 10 P_BASE)
//   per action a (0..AMAX-1): 2048 + a LOW, 3072 + a HIGH (act words, the action box)
// `st_error`: the configuration out of range (nothing runs) or an engine run stopped at a
// bad op (the step stops there).
//
// Cost above the engine: the walk (hrl_learn_walk: C Adam lanes, C target lanes, four banks
// of C words per block), one DDPG loss unit, AMAX clip comparator pairs and an LA-word
// rotator (the action's columns start at S, not at a multiple of LA), the batch, TD and
// clip-mask registers (BMAX words each), counters. Cycles (st_cyc_*): the engine's seven
// runs (each with its start and end cycles), 2 B + 21 for the critic rows and B + 16 for
// the actor rows, 2 B + 8 for each of the three clip passes (pipelined: a sample every two
// cycles), blocks + 50 for each Adam walk (its net's blocks), blocks + 14 for the target
// walk when due (both nets' blocks), three for the command's start, its configuration's
// check and its end (hrl.mapping.learner_schedule's DDPG terms, which the testbench checks
// cycle for cycle).
`default_nettype none

module hrl_learn_step_ddpg #(
    // The engine's parameters (hrl_learn_engine's header): the array's rows and columns.
    parameter R = 4,
    parameter C = 4,
    // Activation-word, weight-word and widest output-word widths.
    parameter AW = 18,
    parameter BW = 18,
    parameter OW = 24,
    // Largest layer width, layer count (of both nets: NLA + NLC <= NL) and batch.
    parameter NMAX = 64,
    parameter NL = 4,
    parameter BMAX = 32,
    // Largest bias shift, counter width.
    parameter BSMAX = 24,
    parameter SW = 32,
    // Largest action size (the clip lanes); at most max(R, C).
    parameter AMAX = 4,
    // Weight format (the operand words the array reads, sign-extended to BW): width (at most
    // BW) and fractional bits.
    parameter WWID = 16,
    parameter WF = 12,
    // Value format (Q values, rewards, TD words): width, fractional bits.
    parameter VW = 24,
    parameter VF = 8,
    // Probability format (discounts, IS weights).
    parameter PW = 17,
    parameter PF = 15,
    // Delta format.
    parameter DLW = 18,
    parameter DLF = 12,
    // Gradient format.
    parameter GW = 24,
    parameter GF = 12,
    // Master format (master and target weights).
    parameter MW = 28,
    parameter MF = 24,
    // Adam's first moment.
    parameter OMW = 28,
    parameter OMF = 16,
    // Adam's second moment (DDPG's formats: FixedPointConfig.formats(.., 'ddpg')).
    parameter QW = 29,
    parameter QF = 14,
    // Reciprocal square root.
    parameter RW = 24,
    parameter RF = 18,
    // Adam's normalized step.
    parameter TW = 20,
    parameter TF = 16,
    // Unit words (1 - beta1, 1 - beta2, tau).
    parameter UW = 16,
    parameter UF = 15,
    // Rate word.
    parameter LW = 24,
    parameter LF = 24
) (
    input  wire                 clk,
    input  wire                 rst,
    // ---- the engine's interface (hrl_learn_engine), the host's while st_busy is low
    input  wire                 start,
    input  wire [OPB:0]         n_ops,
    input  wire [OPB-1:0]       op_first,
    output wire                 busy,       // the engine or the step runs
    output wire                 done,       // the engine's, for the host's own runs
    output wire                 error,
    output wire                 fault,
    output wire [SW-1:0]        cycles,
    output wire [SW-1:0]        sat_count,
    input  wire                 op_wr_en,
    input  wire [OPB-1:0]       op_wr_op,
    input  wire [3:0]           op_wr_field,
    input  wire [FW-1:0]        op_wr_data,
    input  wire                 h_wr_en,
    input  wire [1:0]           h_wr_sel,
    input  wire [HAB-1:0]       h_wr_base,
    input  wire [4:0]           h_wr_slog,
    input  wire [IW-1:0]        h_wr_i,
    input  wire [IW-1:0]        h_wr_j,
    input  wire [LA-1:0]        h_wr_mask,
    input  wire [LA*HW-1:0]     h_wr_data,
    input  wire                 h_rd_en,
    input  wire                 h_rd_sel,
    input  wire [HAB-1:0]       h_rd_base,
    input  wire [4:0]           h_rd_slog,
    input  wire [IW-1:0]        h_rd_i,
    input  wire [IW-1:0]        h_rd_j,
    input  wire [IW-1:0]        h_rd_rows,
    input  wire [IW-1:0]        h_rd_cols,
    output wire [LA*OW-1:0]     h_rd_data,
    // ---- the step
    input  wire                 st_start,   // with st_busy low: run st_cmd
    input  wire                 st_cmd,     // 0 one SGD step, 1 init (all nets' operands)
    output reg                  st_busy,
    output reg                  st_done,    // one cycle
    output reg                  st_error,
    output reg  [SW-1:0]        st_sat,     // the last step's saturations
    output reg  [SW-1:0]        st_cycles,  // the last command's cycles
    output reg  [SW-1:0]        st_cyc_fwd, // ... of its phases: the forward runs (0 2 6 8),
    output reg  [SW-1:0]        st_cyc_loss,//     the loss unit's rows (3 9), the clips
    output reg  [SW-1:0]        st_cyc_clip,//     (1 7 11), the backward runs (4 10 12),
    output reg  [SW-1:0]        st_cyc_bwd, //     the Adam walks (5 13), the target walk
    output reg  [SW-1:0]        st_cyc_upd, //     (14), each with its hand-off cycle
    output reg  [SW-1:0]        st_cyc_tgt,
    output reg  [31:0]          st_steps,   // train_steps
    input  wire                 st_cfg_en,
    input  wire [11:0]          st_cfg_addr,
    input  wire [31:0]          st_cfg_data,
    input  wire                 st_bt_en,   // sample st_bt_i's words
    input  wire [IW-1:0]        st_bt_i,
    input  wire [VW-1:0]        st_bt_reward,
    input  wire [PW-1:0]        st_bt_discount,
    input  wire [PW-1:0]        st_bt_weight,
    // the parameter banks: 0 master, 1 m, 2 v, 3 target; block st_p_*_addr, lane c at
    // [c*32 +: 32] (the low bits written; read sign-extended, 2 cycles after st_p_rd_en)
    input  wire                 st_p_wr_en,
    input  wire [1:0]           st_p_wr_sel,
    input  wire [PAB-1:0]       st_p_wr_addr,
    input  wire [C*32-1:0]      st_p_wr_data,
    input  wire                 st_p_rd_en,
    input  wire [1:0]           st_p_rd_sel,
    input  wire [PAB-1:0]       st_p_rd_addr,
    output wire [C*32-1:0]      st_p_rd_data,
    // the last step's TD error and |TD| of sample st_td_i (value words, the next cycle)
    input  wire [IW-1:0]        st_td_i,
    output reg  [VW-1:0]        st_td,
    output reg  [VW-1:0]        st_abs_td
);
    // ------------------------------------------------------------------ sizes (the engine's)
    localparam LA = (R > C) ? R : C;
    localparam LGA = $clog2(LA);
    localparam DMAX = (NMAX > BMAX) ? NMAX : BMAX;
    localparam IW = $clog2(DMAX + 1);
    localparam SLA = $clog2((NMAX + LA - 1) / LA);
    localparam SLC = $clog2((NMAX + C - 1) / C);
    localparam ADEPTH = 2 * (NL + 1) * BMAX * (1 << SLA);
    localparam DDEPTH = ((NL + 1) * BMAX + NL * (NMAX + 1)) * (1 << SLA);
    localparam WDEPTH = 2 * NL * NMAX * (1 << SLC);
    localparam BDEPTH = 2 * NL * (1 << SLC);
    localparam AAB = (ADEPTH > 1) ? $clog2(ADEPTH) : 1;
    localparam DAB = (DDEPTH > 1) ? $clog2(DDEPTH) : 1;
    localparam WAB = (WDEPTH > 1) ? $clog2(WDEPTH) : 1;
    localparam BAB = (BDEPTH > 1) ? $clog2(BDEPTH) : 1;
    localparam HAB0 = (DAB > WAB) ? DAB : WAB;
    localparam HAB = (HAB0 > BAB) ? HAB0 : BAB;
    localparam HW = (OW > BW) ? OW : BW;
    localparam NOPS = (NL > 0) ? 6 * NL : 6;
    localparam OPB = $clog2((NL > 0) ? 6 * NL : 6);  // NOPS, spelt out for yosys
    localparam FW0 = (HAB > IW) ? HAB : IW;
    localparam FW = (FW0 > 8) ? FW0 : 8;
    // the step's own
    localparam NBLK = (NMAX + C - 1) / C;                  // blocks of a row
    localparam PDEPTH = NL * (NMAX + 1) * NBLK;            // blocks of the largest stream
    localparam PAB = (PDEPTH > 1) ? $clog2(PDEPTH) : 1;    // (hrl_learn_walk's)
    localparam LB = (NL > 1) ? $clog2(NL) : 1;             // a layer
    localparam CB = $clog2(C + 1);

    // (the walk's parameters: hrl_learn_walk checks them)
    initial begin
        if (AMAX < 1 || AMAX > LA)
            $fatal(1, "hrl_learn_step_ddpg: AMAX=%0d must be in 1..max(R, C)=%0d", AMAX, LA);
        if (AMAX > DMAX)
            $fatal(1, "hrl_learn_step_ddpg: AMAX=%0d must be at most max(NMAX, BMAX)=%0d",
                   AMAX, DMAX);
        if (NL < 2)
            $fatal(1, "hrl_learn_step_ddpg: NL=%0d must be at least 2 (an actor and a critic)",
                   NL);
        if (BMAX < 1) $fatal(1, "hrl_learn_step_ddpg: BMAX=%0d must be at least 1", BMAX);
        if (VW > OW || GW > OW || DLW > OW || BW > HW)
            $fatal(1, "hrl_learn_step_ddpg: VW=%0d, GW=%0d, DLW=%0d must fit OW=%0d",
                   VW, GW, DLW, OW);
    end

    // ------------------------------------------------------------------ registers
    reg [6:0]      c_nla, c_nlc;
    reg [IW-1:0]   c_s;
    reg [7:0]      c_a;
    wire [IW+7:0]  c_a_x = {{IW{1'b0}}, c_a};
    wire [IW-1:0]  c_a_iw = c_a_x[IW-1:0];   // A <= AMAX <= max(NMAX, BMAX) < 2**IW
    reg [IW-1:0]   c_b;
    reg [OPB:0]    c_op [0:6];          // OP_F1 OP_F2 OP_B1 OP_F3 OP_F4 OP_B2 NOPS
    reg [HAB-1:0]  c_tab, c_tcib, c_qb, c_qtb, c_db, c_mub, c_cib, c_dib, c_dab;
    reg [4:0]      c_tas, c_tcis, c_qs, c_qts, c_ds, c_mus, c_cis, c_dis, c_das;
    reg [2:0]      c_flags;
    reg [VW-1:0]   c_huber;
    reg [UW-1:0]   c_c1, c_c2, c_tau;
    reg [LW-1:0]   c_lrc, c_lra;
    reg [QW-1:0]   c_vfloor;
    reg [31:0]     c_period, c_phase;
    reg [OW-1:0]   c_low [0:AMAX-1];    // the action box, act words
    reg [OW-1:0]   c_high [0:AMAX-1];

    localparam AXB = (AMAX > 1) ? $clog2(AMAX) : 1;        // an action
    wire        cfg_glob = st_cfg_addr < 12'd64;
    wire        cfg_layer = !cfg_glob && !st_cfg_addr[11];
    wire [11:0] cfg_rel = st_cfg_addr - 12'd64;
    wire [LB-1:0] cfg_l = cfg_rel[4 +: LB];
    wire        cfg_l_ok = {24'd0, cfg_rel[11:4]} < NL;
    wire        cfg_walk = st_cfg_en && !st_busy && cfg_layer && cfg_l_ok;   // the walk's
    wire        cfg_a_ok = {22'd0, st_cfg_addr[9:0]} < AMAX;
    wire [AXB-1:0] cfg_a = st_cfg_addr[AXB-1:0];
    reg         step_inc;     // the step's end: the counter and the target's phase move
    reg         due;          // this step updates the target
    always @(posedge clk) begin
        if (st_cfg_en && !st_busy) begin
            if (cfg_glob) begin
                case (st_cfg_addr[5:0])
                    6'd0:  c_nla <= st_cfg_data[6:0];
                    6'd1:  c_nlc <= st_cfg_data[6:0];
                    6'd2:  c_s <= st_cfg_data[IW-1:0];
                    6'd3:  c_a <= st_cfg_data[7:0];
                    6'd4:  c_b <= st_cfg_data[IW-1:0];
                    6'd5:  c_op[0] <= st_cfg_data[OPB:0];
                    6'd6:  c_op[1] <= st_cfg_data[OPB:0];
                    6'd7:  c_op[2] <= st_cfg_data[OPB:0];
                    6'd8:  c_op[3] <= st_cfg_data[OPB:0];
                    6'd9:  c_op[4] <= st_cfg_data[OPB:0];
                    6'd10: c_op[5] <= st_cfg_data[OPB:0];
                    6'd11: c_op[6] <= st_cfg_data[OPB:0];
                    6'd12: c_tab <= st_cfg_data[HAB-1:0];
                    6'd13: c_tas <= st_cfg_data[4:0];
                    6'd14: c_tcib <= st_cfg_data[HAB-1:0];
                    6'd15: c_tcis <= st_cfg_data[4:0];
                    6'd16: c_qb <= st_cfg_data[HAB-1:0];
                    6'd17: c_qs <= st_cfg_data[4:0];
                    6'd18: c_qtb <= st_cfg_data[HAB-1:0];
                    6'd19: c_qts <= st_cfg_data[4:0];
                    6'd20: c_db <= st_cfg_data[HAB-1:0];
                    6'd21: c_ds <= st_cfg_data[4:0];
                    6'd22: c_mub <= st_cfg_data[HAB-1:0];
                    6'd23: c_mus <= st_cfg_data[4:0];
                    6'd24: c_cib <= st_cfg_data[HAB-1:0];
                    6'd25: c_cis <= st_cfg_data[4:0];
                    6'd26: c_dib <= st_cfg_data[HAB-1:0];
                    6'd27: c_dis <= st_cfg_data[4:0];
                    6'd28: c_dab <= st_cfg_data[HAB-1:0];
                    6'd29: c_das <= st_cfg_data[4:0];
                    6'd30: c_flags <= st_cfg_data[2:0];
                    6'd31: c_huber <= st_cfg_data[VW-1:0];
                    6'd32: c_c1 <= st_cfg_data[UW-1:0];
                    6'd33: c_c2 <= st_cfg_data[UW-1:0];
                    6'd34: c_lrc <= st_cfg_data[LW-1:0];
                    6'd35: c_lra <= st_cfg_data[LW-1:0];
                    6'd36: c_vfloor <= st_cfg_data[QW-1:0];
                    6'd37: c_tau <= st_cfg_data[UW-1:0];
                    6'd38: c_period <= st_cfg_data;
                    6'd39: st_steps <= st_cfg_data;
                    6'd40: c_phase <= st_cfg_data;
                    default: ;
                endcase
            end else if (!cfg_layer && cfg_a_ok) begin   // (the layers' fields: the walk's)
                if (st_cfg_addr[10]) c_high[cfg_a] <= st_cfg_data[OW-1:0];
                else c_low[cfg_a] <= st_cfg_data[OW-1:0];
            end
        end
        if (step_inc) begin
            st_steps <= st_steps + 1'b1;
            c_phase <= due ? 32'd0 : c_phase + 1'b1;
        end
        // Registered (as in hrl_learn_step): c_phase and c_period change only between
        // steps (a step's end, the host's writes), and the step reads `due` at its target
        // walk's phase.
        due <= c_phase + 1'b1 >= c_period;
    end

    // The batch's words, the TD registers and the actor's clip masks.
    reg [VW-1:0]   bt_rew  [0:BMAX-1];
    reg [PW-1:0]   bt_disc [0:BMAX-1];
    reg [PW-1:0]   bt_w    [0:BMAX-1];
    reg [VW-1:0]   td_mem  [0:BMAX-1];
    reg [VW-1:0]   abs_mem [0:BMAX-1];
    reg [AMAX-1:0] lo_mem  [0:BMAX-1];
    reg [AMAX-1:0] hi_mem  [0:BMAX-1];
    localparam BI = (BMAX > 1) ? $clog2(BMAX) : 1;        // a sample of the batch
    wire [BI-1:0] bt_i = st_bt_i[BI-1:0];
    wire [BI-1:0] td_i = ({{(32-IW){1'b0}}, st_td_i} < BMAX) ? st_td_i[BI-1:0] : {BI{1'b0}};
    always @(posedge clk) begin
        if (st_bt_en && !st_busy && {{(32-IW){1'b0}}, st_bt_i} < BMAX) begin
            bt_rew[bt_i] <= st_bt_reward;
            bt_disc[bt_i] <= st_bt_discount;
            bt_w[bt_i] <= st_bt_weight;
        end
        st_td <= td_mem[td_i];
        st_abs_td <= abs_mem[td_i];
    end

    // ------------------------------------------------------------------ the engine
    reg              e_start;
    reg  [OPB:0]     e_nops;
    reg  [OPB-1:0]   e_first;
    wire             e_busy, e_done, e_error, e_fault;
    wire [SW-1:0]    e_cycles, e_sat;
    // the step's drive of the host ports
    reg              s_wr_en;
    reg  [1:0]       s_wr_sel;
    reg  [HAB-1:0]   s_wr_base;
    reg  [4:0]       s_wr_slog;
    reg  [IW-1:0]    s_wr_i, s_wr_j;
    reg  [LA-1:0]    s_wr_mask;
    reg  [LA*HW-1:0] s_wr_data;
    reg              s_rd_en, s_rd_sel;
    reg  [HAB-1:0]   s_rd_base;
    reg  [4:0]       s_rd_slog;
    reg  [IW-1:0]    s_rd_i, s_rd_j, s_rd_rows, s_rd_cols;
    wire             sq = st_busy;

    hrl_learn_engine #(.R(R), .C(C), .AW(AW), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL),
                       .BMAX(BMAX), .BSMAX(BSMAX), .SW(SW)) engine (
        .clk(clk), .rst(rst),
        .start(sq ? e_start : start), .n_ops(sq ? e_nops : n_ops),
        .op_first(sq ? e_first : op_first),
        .busy(e_busy), .done(e_done), .error(e_error), .fault(e_fault), .cycles(e_cycles),
        .sat_count(e_sat),
        .op_wr_en(op_wr_en && !sq), .op_wr_op(op_wr_op), .op_wr_field(op_wr_field),
        .op_wr_data(op_wr_data),
        .h_wr_en(sq ? s_wr_en : h_wr_en), .h_wr_sel(sq ? s_wr_sel : h_wr_sel),
        .h_wr_base(sq ? s_wr_base : h_wr_base), .h_wr_slog(sq ? s_wr_slog : h_wr_slog),
        .h_wr_i(sq ? s_wr_i : h_wr_i), .h_wr_j(sq ? s_wr_j : h_wr_j),
        .h_wr_mask(sq ? s_wr_mask : h_wr_mask), .h_wr_data(sq ? s_wr_data : h_wr_data),
        .h_rd_en(sq ? s_rd_en : h_rd_en), .h_rd_sel(sq ? s_rd_sel : h_rd_sel),
        .h_rd_base(sq ? s_rd_base : h_rd_base), .h_rd_slog(sq ? s_rd_slog : h_rd_slog),
        .h_rd_i(sq ? s_rd_i : h_rd_i), .h_rd_j(sq ? s_rd_j : h_rd_j),
        .h_rd_rows(sq ? s_rd_rows : h_rd_rows), .h_rd_cols(sq ? s_rd_cols : h_rd_cols),
        .h_rd_data(h_rd_data));
    assign busy = e_busy || st_busy;
    assign done = e_done && !st_busy;
    assign error = e_error;
    assign fault = e_fault;
    assign cycles = e_cycles;
    assign sat_count = e_sat;

    // ------------------------------------------------------------------ the sequencer
    localparam [3:0] S_IDLE = 4'd0, S_RUN = 4'd1, S_RUNW = 4'd2, S_LOSS = 4'd3,
                     S_AROW = 4'd4, S_LOSSW = 4'd5, S_CLIP = 4'd6, S_WALK = 4'd7,
                     S_FIN = 4'd8, S_CHK = 4'd9;
    // The walks over the parameter stream (hrl_learn_walk's kinds).
    localparam [1:0] P_ADAM = 2'd0, P_TGT = 2'd1, P_OPON = 2'd2, P_OPTG = 2'd3;
    // The phases (the header's numbers; 16, 17 init's walks, 15 and 18 the end).
    localparam [4:0] PH_CLIPT = 5'd1, PH_LOSS = 5'd3, PH_WCRIT = 5'd5, PH_CLIPA = 5'd7,
                     PH_AROW = 5'd9, PH_CLIPB = 5'd11, PH_WACT = 5'd13, PH_WTGT = 5'd14,
                     PH_OPON = 5'd16, PH_OPTG = 5'd17;
    reg [3:0]      state;
    reg [4:0]      ph;
    reg            cmd_init;
    reg [1:0]      pk;                 // the walk's kind
    reg [LW-1:0]   cur_lr;             // the walk's rate word
    reg [LB-1:0]   w_lo;               // the walk's first layer
    reg [LB:0]     w_hi;               // one past its last layer
    reg [SW-1:0]   acc_sat, nop_a, nop_c, nop_tg, nop_a_n, nop_c_n, nop_tg_n;
    reg            tgt_ran;
    // the loss and clip passes
    reg [IW-1:0]   lb;                 // sample being read
    reg            ls;                 // its loss read: 0 Q(s, a), 1 Q'(s', mu'(s'))
    reg            cs;                 // a clip's read of a sample: 0 its first, 1 its second
    reg [IW-1:0]   l_left;             // samples not yet written
    reg            l_zero;             // l_left == 0, kept beside it (no compare before the
                                       // run state's next-state logic)
    wire [LB-1:0]  nla_l = c_nla[LB-1:0];          // < NL (checked: NLC >= 1)
    wire [LB:0]    nla_h = c_nla[LB:0];
    wire [LB:0]    nl_all = c_nla[LB:0] + c_nlc[LB:0];
    genvar g;

    // ------------------------------------------------------------------ the walks
    // The parameter banks, the Adam and target lanes: the critic's walk over its layers,
    // the actor's over its own, the target's and init's over both nets.
    wire             wk_done, wk_op_v;
    wire             wk_wr_en, wk_rd_en, wk_rd_sel;
    wire [1:0]       wk_wr_sel;
    wire [HAB-1:0]   wk_wr_base, wk_rd_base;
    wire [4:0]       wk_wr_slog, wk_rd_slog;
    wire [IW-1:0]    wk_wr_i, wk_wr_j, wk_rd_i, wk_rd_j, wk_rd_rows, wk_rd_cols;
    wire [LA-1:0]    wk_wr_mask;
    wire [LA*HW-1:0] wk_wr_data;
    wire [CB+2:0]    wk_sat;
    wire [CB-1:0]    wk_op_nsat;
    wire [LB-1:0]    wk_op_layer;
    hrl_learn_walk #(.R(R), .C(C), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL), .BMAX(BMAX),
                     .WWID(WWID), .WF(WF), .GW(GW), .GF(GF), .MW(MW), .MF(MF), .OMW(OMW),
                     .OMF(OMF), .QW(QW), .QF(QF), .RW(RW), .RF(RF), .TW(TW), .TF(TF),
                     .UW(UW), .UF(UF), .LW(LW), .LF(LF), .TGT_WALK(1), .FOLD(0))
    walk_inst (
        .clk(clk), .rst(rst), .busy(st_busy),
        .c1(c_c1), .c2(c_c2), .lr(cur_lr), .v_floor(c_vfloor), .tau(c_tau),
        .polyak(c_flags[2]), .with_tgt(1'b0),
        .cfg_en(cfg_walk), .cfg_layer(cfg_l), .cfg_field(cfg_rel[3:0]),
        .cfg_data(st_cfg_data),
        .run(state == S_WALK), .kind(pk), .lo(w_lo), .hi(w_hi), .done(wk_done),
        .wr_en(wk_wr_en), .wr_sel(wk_wr_sel), .wr_base(wk_wr_base), .wr_slog(wk_wr_slog),
        .wr_i(wk_wr_i), .wr_j(wk_wr_j), .wr_mask(wk_wr_mask), .wr_data(wk_wr_data),
        .rd_en(wk_rd_en), .rd_sel(wk_rd_sel), .rd_base(wk_rd_base), .rd_slog(wk_rd_slog),
        .rd_i(wk_rd_i), .rd_j(wk_rd_j), .rd_rows(wk_rd_rows), .rd_cols(wk_rd_cols),
        .rd_data(h_rd_data),
        .sat(wk_sat), .op_v(wk_op_v), .op_layer(wk_op_layer), .op_nsat(wk_op_nsat),
        .p_wr_en(st_p_wr_en), .p_wr_sel(st_p_wr_sel), .p_wr_addr(st_p_wr_addr),
        .p_wr_data(st_p_wr_data), .p_rd_en(st_p_rd_en), .p_rd_sel(st_p_rd_sel),
        .p_rd_addr(st_p_rd_addr), .p_rd_data(st_p_rd_data));

    // ---- the loss unit: critic rows (two reads a sample) and actor rows (none)
    // The read tags, waiting with the reads' HOST_RD cycles (the engine's host port):
    // (valid, which, sample).
    localparam HOST_RD = 5;
    reg            r_v [1:HOST_RD];
    reg            r_s [1:HOST_RD];
    reg [IW-1:0]   r_b [1:HOST_RD];
    wire           ra_v = r_v[HOST_RD];   // the read returning now
    wire           ra_s = r_s[HOST_RD];
    wire [IW-1:0]  ra_b = r_b[HOST_RD];
    reg [VW-1:0]   g_q;
    wire [VW-1:0]  rd_v0 = h_rd_data[VW-1:0];     // lane 0's value word
    integer rs;
    always @(posedge clk) begin
        r_v[1] <= state == S_LOSS;
        r_s[1] <= ls;
        r_b[1] <= lb;
        for (rs = 2; rs <= HOST_RD; rs = rs + 1) begin
            r_v[rs] <= r_v[rs-1];
            r_s[rs] <= r_s[rs-1];
            r_b[rs] <= r_b[rs-1];
        end
        if (ra_v && !ra_s) g_q <= rd_v0;
        if (rst) for (rs = 1; rs <= HOST_RD; rs = rs + 1) r_v[rs] <= 1'b0;
    end
    wire             li_act = state == S_AROW;
    wire             li_v = (ra_v && ra_s) || li_act;
    wire [IW-1:0]    li_b = li_act ? lb : ra_b;
    wire [BI-1:0]    li_bi = li_b[BI-1:0];         // < B <= BMAX
    wire             lo_v;
    wire [DLW-1:0]   lo_delta;
    wire [VW-1:0]    lo_td, lo_abs;
    wire [1:0]       lo_sat;
    hrl_learn_loss_ddpg #(.VW(VW), .VF(VF), .PW(PW), .PF(PF), .DW(DLW), .DF(DLF)) loss (
        .clk(clk), .rst(rst), .use_huber(c_flags[1]), .huber(c_huber), .in_valid(li_v),
        .in_actor(li_act), .in_q(g_q), .in_q_next(rd_v0), .in_reward(bt_rew[li_bi]),
        .in_discount(bt_disc[li_bi]), .in_weight(bt_w[li_bi]), .out_valid(lo_v),
        .out_delta(lo_delta), .out_td(lo_td), .out_abs_td(lo_abs), .out_sat(lo_sat));
    // The sample of the loss unit's output (LOSS_LAT cycles after its input).
    localparam LOSS_LAT = 15;   // hrl_learn_loss_ddpg's LAT
    reg [IW-1:0] lq_b [1:LOSS_LAT];
    reg          lq_act [1:LOSS_LAT];
    integer q;
    always @(posedge clk) begin
        lq_b[1] <= li_b;
        lq_act[1] <= li_act;
        for (q = 2; q <= LOSS_LAT; q = q + 1) begin
            lq_b[q] <= lq_b[q-1];
            lq_act[q] <= lq_act[q-1];
        end
        if (lo_v && !lq_act[LOSS_LAT]) begin
            td_mem[lq_b[LOSS_LAT][BI-1:0]] <= lo_td;
            abs_mem[lq_b[LOSS_LAT][BI-1:0]] <= lo_abs;
        end
    end
    wire [LA*HW-1:0] lo_wdata = {{((LA-1)*HW){1'b0}}, {(HW-DLW){lo_delta[DLW-1]}}, lo_delta};
    wire [LA-1:0]    lane0 = {{(LA-1){1'b0}}, 1'b1};

    // ---- the clips. The action's columns S..S+A-1 of the critic's input (and of its input
    // delta) start at lane `off` of the row block at `j0` and may run into the next block.
    localparam [IW-1:0] LAI = LA[IW-1:0];
    wire [LGA-1:0] off = c_s[LGA-1:0];
    wire [IW-1:0]  j0 = (c_s >> LGA) << LGA;
    // A clip's read data, registered: from the engine's host read (its bank select) through
    // the box's compares or the rotator into a write register is a path past the clock.
    // The compares are registered beside the words, so that none precedes the rotator in a
    // cycle: each action word's against its box (forward) and each word's sign (backward).
    reg  [LA*OW-1:0] cl_rd;
    reg  [LA-1:0]    cl_pos, cl_neg;
    reg  [AMAX-1:0]  cl_lo, cl_hi;
    integer l1, a1, a3;   // each loop index used in one always block
    always @(posedge clk) begin
        cl_rd <= h_rd_data;
        for (l1 = 0; l1 < LA; l1 = l1 + 1) begin
            cl_neg[l1] <= h_rd_data[l1*OW + OW-1];
            cl_pos[l1] <= !h_rd_data[l1*OW + OW-1] && h_rd_data[l1*OW +: OW] != {OW{1'b0}};
        end
        for (a1 = 0; a1 < AMAX; a1 = a1 + 1) begin
            cl_lo[a1] <= $signed(h_rd_data[a1*OW +: OW]) <= $signed(c_low[a1]);
            cl_hi[a1] <= $signed(h_rd_data[a1*OW +: OW]) >= $signed(c_high[a1]);
        end
    end
    // forward: z (the actor's output row, act words sign-extended to OW) into the box
    reg  [AMAX*OW-1:0] cl_y;
    always @(*)
        for (a3 = 0; a3 < AMAX; a3 = a3 + 1)
            cl_y[a3*OW +: OW] = cl_lo[a3] ? c_low[a3]
                                : (cl_hi[a3] ? c_high[a3] : cl_rd[a3*OW +: OW]);
    // rotated by `off` into the two blocks' lanes, and their lane masks. Each rotator is an
    // LA-way select on `off` among constant indices: written as a variable part-select,
    // synthesis builds a barrel shifter over every bit offset, levels deeper.
    wire [LA*HW-1:0] cl_rot;
    wire [LA-1:0]    cl_m0, cl_m1;
    genvar go;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_rot
            // lane g holds action (g - off) mod LA: of block j0 without a borrow, of
            // block j0 + LA with one
            wire [OW-1:0] by_off [0:LA-1];
            for (go = 0; go < LA; go = go + 1) begin : g_off
                localparam integer IDX = (g - go + LA) % LA;
                assign by_off[go] = (IDX < AMAX) ? cl_y[((IDX < AMAX) ? IDX : 0) * OW +: OW]
                                                : {OW{1'b0}};
            end
            wire [LGA:0]   gd = {1'b0, g[LGA-1:0]} - {1'b0, off};
            wire [31:0]    idx_x = {{(32-LGA){1'b0}}, gd[LGA-1:0]};
            wire [OW-1:0]  y = by_off[off];
            assign cl_rot[g*HW +: HW] = {{(HW-OW){y[OW-1]}}, y};
            assign cl_m0[g] = !gd[LGA] && idx_x < {24'd0, c_a};
            assign cl_m1[g] = gd[LGA] && idx_x < {24'd0, c_a};
        end
    endgenerate
    reg  [LA*HW-1:0] cw_data;           // the row block being written
    reg  [LA-1:0]    cw_m0, cw_m1;
    // backward: the input delta's action columns (blocks j0 and j0 + LA), the clip's
    // backward with the sample's masks
    reg  [LA*OW-1:0] cb_blk0;
    reg  [LA-1:0]    cb_pos0, cb_neg0;
    // (their last word is never selected: an action's index plus off is at most 2 LA - 2)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [2*LA*OW-1:0] cb_cat = {cl_rd, cb_blk0};
    wire [2*LA-1:0]    cb_pcat = {cl_pos, cb_pos0}, cb_ncat = {cl_neg, cb_neg0};
    /* verilator lint_on UNUSEDSIGNAL */
    // A clip's read tags, waiting with the reads' HOST_RD cycles and cl_rd's (the pass below).
    localparam CLIP_RD = HOST_RD + 1;
    reg            k_v [1:CLIP_RD];
    reg            k_p [1:CLIP_RD];
    reg [IW-1:0]   k_b [1:CLIP_RD];
    reg            f1, f2, g1;
    reg [IW-1:0]   wb;
    wire           ka_v = k_v[CLIP_RD];      // a clip's read in cl_rd now, its tags
    wire           ka_p = k_p[CLIP_RD];
    wire [IW-1:0]  ka_b = k_b[CLIP_RD];
    wire [BI-1:0]    kbi = ka_b[BI-1:0];       // the sample whose read returns now
    wire [AMAX-1:0]  cb_lo = lo_mem[kbi];
    wire [AMAX-1:0]  cb_hi = hi_mem[kbi];
    // action g's word is word g + off of {block j0 + LA, block j0} (an LA-way select, as
    // above), zeroed where the sample's action was clipped and the delta points outward
    // (its sign tests registered with the word)
    wire [LA*HW-1:0] cb_dz;
    generate
        for (g = 0; g < AMAX; g = g + 1) begin : g_cb
            wire [OW-1:0] by_off [0:LA-1];
            wire [LA-1:0] pos_off, neg_off;
            for (go = 0; go < LA; go = go + 1) begin : g_off
                assign by_off[go] = cb_cat[(g + go) * OW +: OW];
                assign pos_off[go] = cb_pcat[g + go];
                assign neg_off[go] = cb_ncat[g + go];
            end
            wire [OW-1:0] d = by_off[off];
            wire          zero = (cb_lo[g] && pos_off[off]) || (cb_hi[g] && neg_off[off]);
            assign cb_dz[g*HW +: HW] = zero ? {HW{1'b0}} : {{(HW-OW){d[OW-1]}}, d};
        end
        if (AMAX < LA) begin : g_cb_rest
            assign cb_dz[LA*HW-1:AMAX*HW] = {((LA-AMAX)*HW){1'b0}};
        end
    endgenerate
    wire [LA-1:0] a_mask;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_am
            assign a_mask[g] = g < {24'd0, c_a};
        end
    endgenerate
    wire clip_fwd = ph == PH_CLIPT || ph == PH_CLIPA;
    // A clip pass is pipelined, a sample every two cycles: its reads issue at cs 0 (and
    // 1, backward's second block), reach cl_rd CLIP_RD cycles later with their tags
    // (ka_*), and its writes follow (forward: block j0, then j0 + LA; backward: one
    // block), so the write port takes two cycles a sample and the reads of the next sample
    // overlap them.
    wire cl_issue = state == S_CLIP && lb != c_b;
    wire cl_read = cl_issue && (!clip_fwd || !cs);
    wire           cl_smp_done = f2 || g1;   // a sample's last write (or its turn)
    integer ks;
    always @(posedge clk) begin
        k_v[1] <= cl_read;
        k_p[1] <= cs;
        k_b[1] <= lb;
        for (ks = 2; ks <= CLIP_RD; ks = ks + 1) begin
            k_v[ks] <= k_v[ks-1];
            k_p[ks] <= k_p[ks-1];
            k_b[ks] <= k_b[ks-1];
        end
        f1 <= ka_v && clip_fwd;
        f2 <= f1;
        g1 <= ka_v && !clip_fwd && ka_p;
        if (ka_v) begin
            if (clip_fwd) begin
                cw_data <= cl_rot;
                cw_m0 <= cl_m0;
                cw_m1 <= cl_m1;
                wb <= ka_b;
                if (ph == PH_CLIPA) begin
                    lo_mem[kbi] <= cl_lo;
                    hi_mem[kbi] <= cl_hi;
                end
            end else if (!ka_p) begin
                cb_blk0 <= cl_rd;
                cb_pos0 <= cl_pos;
                cb_neg0 <= cl_neg;
            end else begin
                cw_data <= cb_dz;
                wb <= ka_b;
            end
        end
        if (rst) begin
            for (ks = 1; ks <= CLIP_RD; ks = ks + 1) k_v[ks] <= 1'b0;
            f1 <= 1'b0;
            f2 <= 1'b0;
            g1 <= 1'b0;
        end
    end

    // ---- the host ports, driven by the phase
    always @(*) begin
        s_wr_en = 1'b0;
        s_wr_sel = 2'd3;
        s_wr_base = c_db;
        s_wr_slog = c_ds;
        s_wr_i = lq_b[LOSS_LAT];
        s_wr_j = {IW{1'b0}};
        s_wr_mask = lane0;
        s_wr_data = lo_wdata;
        s_rd_en = 1'b0;
        s_rd_sel = 1'b0;
        s_rd_base = ls ? c_qtb : c_qb;
        s_rd_slog = ls ? c_qts : c_qs;
        s_rd_i = lb;
        s_rd_j = {IW{1'b0}};
        s_rd_rows = c_b;
        s_rd_cols = {{(IW-1){1'b0}}, 1'b1};
        case (state)
            S_LOSS, S_AROW, S_LOSSW: begin
                s_wr_en = lo_v;
                s_rd_en = state == S_LOSS;
            end
            S_CLIP: if (clip_fwd) begin
                // read the actor's output row; write its two blocks into the critic's input
                s_rd_en = cl_read;
                s_rd_base = (ph == PH_CLIPT) ? c_tab : c_mub;
                s_rd_slog = (ph == PH_CLIPT) ? c_tas : c_mus;
                s_rd_cols = c_a_iw;
                s_wr_en = (f1 && cw_m0 != {LA{1'b0}}) || (f2 && cw_m1 != {LA{1'b0}});
                s_wr_sel = 2'd0;
                s_wr_base = (ph == PH_CLIPT) ? c_tcib : c_cib;
                s_wr_slog = (ph == PH_CLIPT) ? c_tcis : c_cis;
                s_wr_i = wb;
                s_wr_j = f2 ? j0 + LAI : j0;
                s_wr_mask = f2 ? cw_m1 : cw_m0;
                s_wr_data = cw_data;
            end else begin
                // read the input delta's two blocks; write the actor's output delta row
                s_rd_en = cl_read;
                s_rd_sel = 1'b1;
                s_rd_base = c_dib;
                s_rd_slog = c_dis;
                s_rd_j = cs ? j0 + LAI : j0;
                s_rd_cols = c_s + c_a_iw;
                s_wr_en = g1;
                s_wr_base = c_dab;
                s_wr_slog = c_das;
                s_wr_i = wb;
                s_wr_mask = a_mask;
                s_wr_data = cw_data;
            end
            S_WALK: begin
                // the walk's: the operand words into the weight (or bias) bank, the gradient
                // block from the delta bank (Adam's walks)
                s_wr_en = wk_wr_en;
                s_wr_sel = wk_wr_sel;
                s_wr_base = wk_wr_base;
                s_wr_slog = wk_wr_slog;
                s_wr_i = wk_wr_i;
                s_wr_j = wk_wr_j;
                s_wr_mask = wk_wr_mask;
                s_wr_data = wk_wr_data;
                s_rd_en = wk_rd_en;
                s_rd_sel = wk_rd_sel;
                s_rd_base = wk_rd_base;
                s_rd_slog = wk_rd_slog;
                s_rd_i = wk_rd_i;
                s_rd_j = wk_rd_j;
                s_rd_rows = wk_rd_rows;
                s_rd_cols = wk_rd_cols;
            end
            default: ;
        endcase
    end

    // ---- the configuration's range (checked at the start: nothing runs on a bad one). The
    // check is registered (as in hrl_learn_step: its compares reach no state register in the
    // cycle they are made): the command's first cycle, S_CHK, reads it.
    wire [31:0] nops_x = {{(31-OPB){1'b0}}, c_op[6]};
    reg         ops_bad;
    integer o;
    always @(*) begin
        ops_bad = c_op[0] == {(OPB+1){1'b0}} || nops_x > NOPS;
        for (o = 1; o < 7; o = o + 1) ops_bad = ops_bad || c_op[o] <= c_op[o-1];
    end
    reg  cfg_bad;
    wire cfg_bad_n = c_nla == 7'd0 || c_nlc == 7'd0 || {24'd0, c_nla} + {24'd0, c_nlc} > NL
                     || c_a == 8'd0 || {24'd0, c_a} > AMAX || c_b == {IW{1'b0}}
                     || {{(32-IW){1'b0}}, c_b} > BMAX || c_s == {IW{1'b0}}
                     || {{(32-IW){1'b0}}, c_s} + {24'd0, c_a} > NMAX || ops_bad
                     || c_period == 32'd0;
    always @(posedge clk) cfg_bad <= cfg_bad_n;

    // Enter phase p (the header's numbers) at the next cycle.
    task enter(input [4:0] p);
        begin
            ph <= p;
            lb <= {IW{1'b0}};
            ls <= 1'b0;
            cs <= 1'b0;
            l_left <= c_b;
            l_zero <= c_b == {IW{1'b0}};
            state <= S_FIN;
            case (p)
                5'd0, 5'd2, 5'd4, 5'd6, 5'd8, 5'd10, 5'd12: begin
                    state <= S_RUN;
                    e_first <= (p == 5'd0) ? {OPB{1'b0}} : c_op[p[3:1] - 3'd1][OPB-1:0];
                    e_nops <= c_op[p[3:1]];
                end
                PH_CLIPT, PH_CLIPA, PH_CLIPB: state <= S_CLIP;
                PH_LOSS: state <= S_LOSS;
                PH_AROW: state <= S_AROW;
                PH_WCRIT: begin
                    state <= S_WALK;
                    pk <= P_ADAM;
                    cur_lr <= c_lrc;
                    w_lo <= nla_l;
                    w_hi <= nl_all;
                end
                PH_WACT: begin
                    state <= S_WALK;
                    pk <= P_ADAM;
                    cur_lr <= c_lra;
                    w_lo <= {LB{1'b0}};
                    w_hi <= nla_h;
                end
                PH_WTGT, PH_OPON, PH_OPTG: if (p != PH_WTGT || due) begin
                    state <= S_WALK;
                    pk <= (p == PH_WTGT) ? P_TGT : ((p == PH_OPON) ? P_OPON : P_OPTG);
                    tgt_ran <= tgt_ran || p == PH_WTGT;
                    w_lo <= {LB{1'b0}};
                    w_hi <= nl_all;
                end
                default: ;
            endcase
        end
    endtask

    // A cycle's saturations, registered before they reach the SW-bit count (as in
    // hrl_learn_step: four sources and the count's carry chain in one cycle is a path past
    // the clock). The count lags a cycle and is whole at S_FIN all the same: the step's last
    // source is a walk (the actor's Adam walk, or the target walk when due), whose last
    // count leaves the cycle before its `done`.
    reg  [SW-1:0] sat_add;
    always @(posedge clk)
        sat_add <= (lo_v ? {{(SW-2){1'b0}}, lo_sat} : {SW{1'b0}})
                   + {{(SW-CB-3){1'b0}}, wk_sat}
                   + ((wk_op_v && pk == P_ADAM && ph == PH_WCRIT)
                      ? {{(SW-CB){1'b0}}, wk_op_nsat} : {SW{1'b0}})
                   + ((state == S_RUNW && e_done) ? e_sat : {SW{1'b0}});
    wire          on_state = state != S_IDLE && state != S_CHK && state != S_FIN;
    always @(posedge clk) begin
        st_done <= 1'b0;
        e_start <= 1'b0;
        step_inc <= 1'b0;
        if (st_busy) st_cycles <= st_cycles + 1'b1;
        if (on_state)
            case (ph)
                5'd0, 5'd2, 5'd6, 5'd8: st_cyc_fwd <= st_cyc_fwd + 1'b1;
                5'd4, 5'd10, 5'd12: st_cyc_bwd <= st_cyc_bwd + 1'b1;
                PH_LOSS, PH_AROW: st_cyc_loss <= st_cyc_loss + 1'b1;
                PH_CLIPT, PH_CLIPA, PH_CLIPB: st_cyc_clip <= st_cyc_clip + 1'b1;
                PH_WCRIT, PH_WACT: st_cyc_upd <= st_cyc_upd + 1'b1;
                PH_WTGT: st_cyc_tgt <= st_cyc_tgt + 1'b1;
                default: ;
            endcase
        // the operand roundings: the online nets' (Adam's walks, init) by net, the targets'
        if (wk_op_v) begin
            if (pk == P_ADAM || pk == P_OPON) begin
                if ({1'b0, wk_op_layer} < nla_h) nop_a_n <= nop_a_n + {{(SW-CB){1'b0}}, wk_op_nsat};
                else nop_c_n <= nop_c_n + {{(SW-CB){1'b0}}, wk_op_nsat};
            end else begin
                nop_tg_n <= nop_tg_n + {{(SW-CB){1'b0}}, wk_op_nsat};
            end
        end
        acc_sat <= acc_sat + sat_add;
        case (state)
            S_IDLE: if (st_start) begin
                st_busy <= 1'b1;
                st_error <= 1'b0;
                cmd_init <= st_cmd;
                st_cycles <= {{(SW-1){1'b0}}, 1'b1};
                st_cyc_fwd <= {SW{1'b0}};
                st_cyc_loss <= {SW{1'b0}};
                st_cyc_clip <= {SW{1'b0}};
                st_cyc_bwd <= {SW{1'b0}};
                st_cyc_upd <= {SW{1'b0}};
                st_cyc_tgt <= {SW{1'b0}};
                nop_a_n <= {SW{1'b0}};
                nop_c_n <= {SW{1'b0}};
                nop_tg_n <= {SW{1'b0}};
                tgt_ran <= 1'b0;
                acc_sat <= nop_a + nop_c + nop_tg;
                state <= S_CHK;
            end
            S_CHK: if (cfg_bad) begin
                st_error <= 1'b1;
                state <= S_FIN;
            end else begin
                enter(cmd_init ? PH_OPON : 5'd0);
            end
            S_RUN: begin
                e_start <= 1'b1;
                state <= S_RUNW;
            end
            S_RUNW: if (e_done) begin
                if (e_error) begin
                    st_error <= 1'b1;
                    state <= S_FIN;
                end else begin
                    enter(ph + 5'd1);
                end
            end
            S_LOSS: begin
                // two reads a sample
                ls <= !ls;
                if (ls) begin
                    lb <= lb + 1'b1;
                    if (lb + 1'b1 == c_b) state <= S_LOSSW;
                end
            end
            S_AROW: begin
                // one actor row a cycle
                lb <= lb + 1'b1;
                if (lb + 1'b1 == c_b) state <= S_LOSSW;
            end
            S_LOSSW: if (l_zero) enter(ph + 5'd1);
            S_CLIP: begin
                // two cycles a sample's issue; the pass ends at its last sample's writes
                if (cl_issue) begin
                    cs <= !cs;
                    if (cs) lb <= lb + 1'b1;
                end
                if (l_zero) enter(ph + 5'd1);
            end
            S_WALK: if (wk_done) enter(ph + 5'd1);   // the walk's last write
            S_FIN: begin
                st_busy <= 1'b0;
                st_done <= 1'b1;
                state <= S_IDLE;
                if (!st_error) begin
                    nop_a <= nop_a_n;
                    nop_c <= nop_c_n;
                    if (cmd_init || tgt_ran) nop_tg <= nop_tg_n;
                    if (!cmd_init) begin
                        st_sat <= acc_sat;
                        step_inc <= 1'b1;
                    end
                end
            end
            default: state <= S_IDLE;
        endcase
        if (state == S_LOSS || state == S_AROW || state == S_LOSSW)
            if (lo_v) begin
                l_left <= l_left - 1'b1;
                l_zero <= l_left == {{(IW-1){1'b0}}, 1'b1};
            end
        if (state == S_CLIP && cl_smp_done) begin
            l_left <= l_left - 1'b1;
            l_zero <= l_left == {{(IW-1){1'b0}}, 1'b1};
        end
        if (rst) begin
            state <= S_IDLE;
            ph <= 5'd0;
            st_busy <= 1'b0;
            st_done <= 1'b0;
            st_error <= 1'b0;
            e_start <= 1'b0;
            step_inc <= 1'b0;
            nop_a <= {SW{1'b0}};
            nop_c <= {SW{1'b0}};
            nop_tg <= {SW{1'b0}};
            st_sat <= {SW{1'b0}};
            st_cycles <= {SW{1'b0}};
            pk <= P_ADAM;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_misc = ^{cfg_rel, c_a_x, e_busy, e_cycles, c_flags,
                         AAB[0], BAB[0], DAB[0], WAB[0], HAB0[0], FW0[0], st_cfg_addr};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
