// hrl_learn_step: the learning module's whole DQN SGD step, a thin sequencer above
// hrl_learn_engine that owns the loss unit and the parameter walks (hrl_learn_walk: the
// optimizer's banks, the Adam and target lanes). Bit for bit
// hrl.fixed_point.dqn.FixedDQN.sgd_step (Adam), given the batch words, with the network's
// state (master weights, Adam's moments, the target masters, the step counter) carried in
// its banks from step to step. One step, from `st_start` with st_cmd 0:
//   1 forward  the engine runs ops 0..NF-1 of its table (the host's: ops 0..NLAY-1 the
//              online net on s and s' stacked, 2B rows; NLAY..NF-1 the target net on s',
//              NF = 2 NLAY; hrl_learn_engine's header). When the previous step updated the
//              target's masters, in two runs: ops 0..NLAY-1 while the walk's operand walk
//              (kind 3) writes the target net's operand words into the engine's weight and
//              bias banks (which the online ops do not read), then, both done, the rest;
//   2 loss     per sample b, three host-port reads of the activation bank (Q(s_b) and
//              Q(s'_b) of the online net, Q'(s'_b) of the target), one hrl_learn_loss_dqn
//              pass: the output delta row written into the delta bank (D_BASE), td and |td|
//              into the TD registers (the replay's priorities);
//   3 backward the engine runs ops NF..NOPS-1 (backward, weight and bias gradients);
//   4 update   hrl_learn_walk's Adam walk over the parameter stream (layers 0..NLAY-1): per
//              block of C words, the gradient read from the delta bank, master, m and v from
//              their banks, C Adam lanes, the new master, m, v written back, and the operand
//              words (the master rounded to the weight format) written into the engine's
//              weight or bias bank, where the next step's forward reads them; and when
//              (train_steps + 1) mod PERIOD is 0 (optim.update_target), the target: the new
//              master and the target master through the walk's other target lanes (Polyak
//              with TAU, or a hard copy), the new target master written back in the same
//              walk. Its operand words wait for the next step's forward (1): the weight
//              bank's one host write port is the online words' in this walk.
// So every master, moment and target master is the reference's when st_done rises; the
// engine's copy of the target net's operand words is brought up to date by the next step
// (or `init`) before any op reads it.
// st_cmd 1 (init) computes both nets' operand words from the master and target banks (the
// host's initial words: the walk's two operand walks), as the step's write-back does, so
// the next step reads the words the reference rounds.
//
// The parameter stream (hrl_learn_walk's header): layer 0..NLAY-1, per layer its weight
// rows then its bias, per row blocks of C words; block p at address p of the master, m, v
// and target banks (layer l's first block at the layer's P_BASE, which the host writes; it
// reads and writes the banks in the same order through the st_p_* port).
//
// Saturations (st_sat, per step): the engine's two runs, the loss unit's, the Adam lanes',
// the Polyak step's, and the operand roundings of the online and the target masters as the
// step read them (computed by the previous write-back or init, kept in registers): the sum
// FixedDQN.sgd_step's metrics['saturations'] counts less the host's quantization of the
// batch (which the host does).
//
// The host, while st_busy is low: has the engine's whole interface (its ports under the
// same names, passed through: the op table, the banks, start; `busy` is high while either
// runs); writes the step's registers (st_cfg_*: addresses below), the batch's per-sample
// words (st_bt_*: action, reward (value), discount and IS weight (prob)), the parameter
// banks (st_p_*), reads TD words (st_td_*) and the results (st_sat, st_cycles, the phases'
// cycles, st_steps). The rate word LR is the host's each step (step_rate: the schedule
// and Adam's bias correction, a table read and a multiply; optim's docstring).
//   st_cfg addresses, globals:  0 NLAY layers (1..NL)   1 NF forward ops (2 NLAY)
//     2 NOPS all ops   3 A actions (1..AMAX)   4 B batch (1..BMAX/2)   5 Q_BASE 6 Q_SLOG
//     the online net's output (2B x A, activation bank)   7 QT_BASE 8 QT_SLOG the
//     target's (B x A)
//     9 D_BASE 10 D_SLOG the output delta (B x A, delta bank)   11 FLAGS bit 0 double DQN,
//     bit 1 Huber clip, bit 2 Polyak (else a hard copy)   12 HUBER (value word)
//     13 C1 = 1 - beta1 14 C2 = 1 - beta2 (unit words)   15 LR (rate word)
//     16 V_FLOOR (second-moment word)   17 TAU (unit word)   18 PERIOD (>= 1)
//     19 STEPS (train_steps)   20 PHASE (train_steps mod PERIOD)
//   per layer l, address 32 + 16 l + f: 0 K 1 N (its input and output widths)
//     2 W_BASE 3 W_SLOG the online weights (weight bank)   4 B_BASE the online bias (bias
//     bank)   5 TW_BASE 6 TB_BASE the target's (same stride)   7 GW_BASE 8 G_SLOG the
//     weight gradient (delta bank)   9 GB_BASE the bias gradient   10 P_BASE (above)
// `st_error`: the configuration out of range (nothing runs) or an engine run stopped at a
// bad op (the step stops there).
//
// Cost above the engine: the walk (hrl_learn_walk: C Adam lanes, 2 C target lanes, four
// banks of C words per block), one loss unit of AMAX actions, the batch and TD registers
// (BMAX words each), counters. Cycles (counted by st_cyc_*): the engine's two runs (three
// after a target update: the forward split, its second run SPLIT_GAP = 3 cycles after the
// later of the first's end and the operand walk's, blocks + 14), 3 B + 26 for the loss
// (three Q rows read per sample), blocks + 50 for the update (blocks: the stream's length),
// three more for the command's start (its configuration's check) and end
// (hrl.mapping.learner_schedule's DQN terms). st_cyc_tgt counts the operand walk's cycles,
// which overlap the forward's.
`default_nettype none

module hrl_learn_step #(
    // The engine's parameters (hrl_learn_engine's header): the array's rows and columns.
    parameter R = 4,
    parameter C = 4,
    // Activation-word, weight-word and widest output-word widths.
    parameter AW = 18,
    parameter BW = 18,
    parameter OW = 24,
    // Largest layer width, layer count and batch (of the engine's stacked s and s': 2 B).
    parameter NMAX = 64,
    parameter NL = 4,
    parameter BMAX = 32,
    // Largest bias shift, counter width.
    parameter BSMAX = 24,
    parameter SW = 32,
    // Largest number of actions (the loss unit's lanes); at most max(R, C).
    parameter AMAX = 4,
    // Weight format (the operand words the array reads, sign-extended to BW): width (at most
    // BW) and fractional bits.
    parameter WWID = 18,
    parameter WF = 14,
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
    // Adam's second moment.
    parameter QW = 29,
    parameter QF = 22,
    // Reciprocal square root.
    parameter RW = 24,
    parameter RF = 12,
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
    input  wire                 st_cmd,     // 0 one SGD step, 1 init (both nets' operands)
    output reg                  st_busy,
    output reg                  st_done,    // one cycle
    output reg                  st_error,
    output reg  [SW-1:0]        st_sat,     // the last step's saturations
    output reg  [SW-1:0]        st_cycles,  // the last command's cycles
    output reg  [SW-1:0]        st_cyc_fwd, // ... of its phases (forward, loss, backward,
    output reg  [SW-1:0]        st_cyc_loss,//     update, target)
    output reg  [SW-1:0]        st_cyc_bwd,
    output reg  [SW-1:0]        st_cyc_upd,
    output reg  [SW-1:0]        st_cyc_tgt,
    output reg  [31:0]          st_steps,   // train_steps
    input  wire                 st_cfg_en,
    input  wire [11:0]          st_cfg_addr,
    input  wire [31:0]          st_cfg_data,
    input  wire                 st_bt_en,   // sample st_bt_i's words
    input  wire [IW-1:0]        st_bt_i,
    input  wire [AB-1:0]        st_bt_action,
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
    localparam AB = (AMAX > 1) ? $clog2(AMAX) : 1;        // an action
    localparam NBLK = (NMAX + C - 1) / C;                  // blocks of a row
    localparam PDEPTH = NL * (NMAX + 1) * NBLK;            // blocks of the largest stream
    localparam PAB = (PDEPTH > 1) ? $clog2(PDEPTH) : 1;    // (hrl_learn_walk's)
    localparam LB = (NL > 1) ? $clog2(NL) : 1;             // a layer
    localparam CB = $clog2(C + 1);

    // (the walk's parameters: hrl_learn_walk checks them)
    initial begin
        if (AMAX < 1 || AMAX > LA)
            $fatal(1, "hrl_learn_step: AMAX=%0d must be in 1..max(R, C)=%0d", AMAX, LA);
        if (BMAX < 2) $fatal(1, "hrl_learn_step: BMAX=%0d must be at least 2 (s and s')", BMAX);
        if (VW > OW || GW > OW || DLW > HW || BW > HW)
            $fatal(1, "hrl_learn_step: VW=%0d, GW=%0d must fit OW=%0d, DLW=%0d HW=%0d",
                   VW, GW, OW, DLW, HW);
    end

    // ------------------------------------------------------------------ registers
    reg [6:0]      c_nlay;
    reg [OPB:0]    c_nf, c_nops;
    reg [7:0]      c_a;
    wire [IW+7:0]  c_a_x = {{IW{1'b0}}, c_a};
    wire [IW-1:0]  c_a_iw = c_a_x[IW-1:0];   // A < 2**IW (AMAX <= max(R, C) <= ...)
    reg [IW-1:0]   c_b;
    reg [HAB-1:0]  c_qb, c_qtb, c_db;
    reg [4:0]      c_qs, c_qts, c_ds;
    reg [2:0]      c_flags;
    reg [VW-1:0]   c_huber;
    reg [UW-1:0]   c_c1, c_c2, c_tau;
    reg [LW-1:0]   c_lr;
    reg [QW-1:0]   c_vfloor;
    reg [31:0]     c_period, c_phase;

    wire        cfg_layer = st_cfg_addr >= 12'd32;
    wire [11:0] cfg_rel = st_cfg_addr - 12'd32;
    wire [LB-1:0] cfg_l = cfg_rel[4 +: LB];
    wire        cfg_l_ok = {24'd0, cfg_rel[11:4]} < NL;
    wire        cfg_walk = st_cfg_en && !st_busy && cfg_layer && cfg_l_ok;   // the walk's
    reg         step_inc;     // the step's end: the counter and the target's phase move
    reg         due;          // this step updates the target
    always @(posedge clk) begin
        if (st_cfg_en && !st_busy) begin
            if (!cfg_layer) begin
                case (st_cfg_addr[4:0])
                    5'd0:  c_nlay <= st_cfg_data[6:0];
                    5'd1:  c_nf <= st_cfg_data[OPB:0];
                    5'd2:  c_nops <= st_cfg_data[OPB:0];
                    5'd3:  c_a <= st_cfg_data[7:0];
                    5'd4:  c_b <= st_cfg_data[IW-1:0];
                    5'd5:  c_qb <= st_cfg_data[HAB-1:0];
                    5'd6:  c_qs <= st_cfg_data[4:0];
                    5'd7:  c_qtb <= st_cfg_data[HAB-1:0];
                    5'd8:  c_qts <= st_cfg_data[4:0];
                    5'd9:  c_db <= st_cfg_data[HAB-1:0];
                    5'd10: c_ds <= st_cfg_data[4:0];
                    5'd11: c_flags <= st_cfg_data[2:0];
                    5'd12: c_huber <= st_cfg_data[VW-1:0];
                    5'd13: c_c1 <= st_cfg_data[UW-1:0];
                    5'd14: c_c2 <= st_cfg_data[UW-1:0];
                    5'd15: c_lr <= st_cfg_data[LW-1:0];
                    5'd16: c_vfloor <= st_cfg_data[QW-1:0];
                    5'd17: c_tau <= st_cfg_data[UW-1:0];
                    5'd18: c_period <= st_cfg_data;
                    5'd19: st_steps <= st_cfg_data;
                    5'd20: c_phase <= st_cfg_data;
                    default: ;
                endcase
            end
        end
        if (step_inc) begin
            st_steps <= st_steps + 1'b1;
            c_phase <= due ? 32'd0 : c_phase + 1'b1;
        end
        // Registered: c_phase and c_period change only between steps (a step's end, the
        // host's writes), and the step reads `due` at its walks' end.
        due <= c_phase + 1'b1 >= c_period;
    end

    // The batch's words and the TD registers.
    reg [AB-1:0]  bt_act  [0:BMAX-1];
    reg [VW-1:0]  bt_rew  [0:BMAX-1];
    reg [PW-1:0]  bt_disc [0:BMAX-1];
    reg [PW-1:0]  bt_w    [0:BMAX-1];
    reg [VW-1:0]  td_mem  [0:BMAX-1];
    reg [VW-1:0]  abs_mem [0:BMAX-1];
    localparam BI = (BMAX > 1) ? $clog2(BMAX) : 1;        // a sample of the batch
    wire [BI-1:0] bt_i = st_bt_i[BI-1:0];
    wire [BI-1:0] td_i = ({{(32-IW){1'b0}}, st_td_i} < BMAX) ? st_td_i[BI-1:0] : {BI{1'b0}};
    always @(posedge clk) begin
        if (st_bt_en && !st_busy && {{(32-IW){1'b0}}, st_bt_i} < BMAX) begin
            bt_act[bt_i] <= st_bt_action;
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
    localparam [3:0] S_IDLE = 4'd0, S_FWD = 4'd1, S_FWDW = 4'd2, S_LOSS = 4'd3,
                     S_LOSSW = 4'd4, S_BWD = 4'd5, S_BWDW = 4'd6, S_WALK = 4'd7,
                     S_FIN = 4'd8, S_CHK = 4'd9, S_FWD2 = 4'd10;
    // The walks over the parameter stream (hrl_learn_walk's kinds).
    localparam [1:0] P_ADAM = 2'd0, P_OPON = 2'd2, P_OPTG = 2'd3;
    reg [3:0]      state;
    reg            cmd_init;
    reg [1:0]      pk;                 // the walk's kind
    reg [SW-1:0]   acc_sat, nop_on, nop_tg, nop_on_n, nop_tg_n;
    reg            tgt_ran;            // this step ran the target's operand walk
    reg            tg_stale;           // the target masters moved since its operand words
    reg            bg;                 // the target's operand walk runs beside the engine
    reg            split;              // the forward runs the online net's ops alone
    wire           wk_run = state == S_WALK || bg;
    wire [31:0]    c_nlay_x = {25'd0, c_nlay};   // the online net's forward ops: NLAY
    // the loss pass
    reg [IW-1:0]   lb;                 // sample being read
    reg [1:0]      ls;                 // its read: 0 Q(s), 1 Q(s') online, 2 Q'(s')
    reg [IW-1:0]   l_left;             // samples not yet written
    genvar g;

    // ------------------------------------------------------------------ the walks
    // The parameter banks, the Adam and target lanes: every walk over layers 0..NLAY-1.
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
    /* verilator lint_off UNUSEDSIGNAL */
    wire [LB-1:0]    wk_op_layer;      // one net: every layer's operands are nop_on's
    /* verilator lint_on UNUSEDSIGNAL */
    hrl_learn_walk #(.R(R), .C(C), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL), .BMAX(BMAX),
                     .WWID(WWID), .WF(WF), .GW(GW), .GF(GF), .MW(MW), .MF(MF), .OMW(OMW),
                     .OMF(OMF), .QW(QW), .QF(QF), .RW(RW), .RF(RF), .TW(TW), .TF(TF),
                     .UW(UW), .UF(UF), .LW(LW), .LF(LF), .TGT_WALK(0), .FOLD(1))
    walk_inst (
        .clk(clk), .rst(rst), .busy(st_busy),
        .c1(c_c1), .c2(c_c2), .lr(c_lr), .v_floor(c_vfloor), .tau(c_tau),
        .polyak(c_flags[2]),
        .cfg_en(cfg_walk), .cfg_layer(cfg_l), .cfg_field(cfg_rel[3:0]),
        .cfg_data(st_cfg_data),
        .with_tgt(due), .run(wk_run), .kind(pk), .lo({LB{1'b0}}), .hi(c_nlay[LB:0]),
        .done(wk_done),
        .wr_en(wk_wr_en), .wr_sel(wk_wr_sel), .wr_base(wk_wr_base), .wr_slog(wk_wr_slog),
        .wr_i(wk_wr_i), .wr_j(wk_wr_j), .wr_mask(wk_wr_mask), .wr_data(wk_wr_data),
        .rd_en(wk_rd_en), .rd_sel(wk_rd_sel), .rd_base(wk_rd_base), .rd_slog(wk_rd_slog),
        .rd_i(wk_rd_i), .rd_j(wk_rd_j), .rd_rows(wk_rd_rows), .rd_cols(wk_rd_cols),
        .rd_data(h_rd_data),
        .sat(wk_sat), .op_v(wk_op_v), .op_layer(wk_op_layer), .op_nsat(wk_op_nsat),
        .p_wr_en(st_p_wr_en), .p_wr_sel(st_p_wr_sel), .p_wr_addr(st_p_wr_addr),
        .p_wr_data(st_p_wr_data), .p_rd_en(st_p_rd_en), .p_rd_sel(st_p_rd_sel),
        .p_rd_addr(st_p_rd_addr), .p_rd_data(st_p_rd_data));

    // ---- the loss unit
    // The read tags, waiting with the reads' HOST_RD cycles (the engine's host port):
    // (valid, which, sample).
    localparam HOST_RD = 5;
    reg            r_v [1:HOST_RD];
    reg [1:0]      r_s [1:HOST_RD];
    reg [IW-1:0]   r_b [1:HOST_RD];
    wire           ra_v = r_v[HOST_RD];   // the read returning now
    wire [1:0]     ra_s = r_s[HOST_RD];
    wire [IW-1:0]  ra_b = r_b[HOST_RD];
    reg [AMAX*VW-1:0] g_q, g_qn;
    wire [AMAX*VW-1:0] rd_vals, rd_pad;   // the row's A words, and past A the lowest word
    generate
        for (g = 0; g < AMAX; g = g + 1) begin : g_rdv
            wire [OW-1:0] word = h_rd_data[g*OW +: OW];
            assign rd_vals[g*VW +: VW] = word[VW-1:0];
            assign rd_pad[g*VW +: VW] = (g < c_a) ? word[VW-1:0] : {1'b1, {(VW-1){1'b0}}};
            if (OW > VW) begin : g_unused
                /* verilator lint_off UNUSEDSIGNAL */
                wire unused = ^word[OW-1:VW];
                /* verilator lint_on UNUSEDSIGNAL */
            end
        end
        if (LA > AMAX) begin : g_rd_unused
            /* verilator lint_off UNUSEDSIGNAL */
            wire unused = ^h_rd_data[LA*OW-1:AMAX*OW];
            /* verilator lint_on UNUSEDSIGNAL */
        end
    endgenerate
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
        if (ra_v && ra_s == 2'd0) g_q <= rd_vals;
        if (ra_v && ra_s == 2'd1) g_qn <= rd_pad;
        if (rst) for (rs = 1; rs <= HOST_RD; rs = rs + 1) r_v[rs] <= 1'b0;
    end
    wire             lo_v;
    wire [AMAX*DLW-1:0] lo_delta;
    wire [VW-1:0]    lo_td, lo_abs;
    wire [1:0]       lo_sat;
    wire             li_v = ra_v && ra_s == 2'd2;
    wire [BI-1:0]    ra_bi = ra_b[BI-1:0];   // < B <= BMAX / 2
    hrl_learn_loss_dqn #(.A(AMAX), .VW(VW), .VF(VF), .PW(PW), .PF(PF), .DW(DLW), .DF(DLF))
    loss (
        .clk(clk), .rst(rst), .double_q(c_flags[0]), .use_huber(c_flags[1]), .huber(c_huber),
        .in_valid(li_v), .in_q(g_q), .in_qn_online(g_qn), .in_qn_target(rd_pad),
        .in_action(bt_act[ra_bi]), .in_reward(bt_rew[ra_bi]), .in_discount(bt_disc[ra_bi]),
        .in_weight(bt_w[ra_bi]), .out_valid(lo_v), .out_delta(lo_delta), .out_td(lo_td),
        .out_abs_td(lo_abs), .out_sat(lo_sat));
    // The sample of the loss unit's output (LOSS_LAT cycles after its input).
    localparam LOSS_LAT = 20;   // hrl_learn_loss_dqn's LAT
    reg [IW-1:0] lq_b [1:LOSS_LAT];
    integer lq;
    always @(posedge clk) begin
        lq_b[1] <= ra_b;
        for (lq = 2; lq <= LOSS_LAT; lq = lq + 1) lq_b[lq] <= lq_b[lq-1];
        if (lo_v) begin
            td_mem[lq_b[LOSS_LAT][BI-1:0]] <= lo_td;
            abs_mem[lq_b[LOSS_LAT][BI-1:0]] <= lo_abs;
        end
    end
    wire [LA*HW-1:0] lo_wdata;
    wire [LA-1:0]    lo_mask;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_lw
            if (g < AMAX) begin : g_in
                wire [DLW-1:0] d = lo_delta[g*DLW +: DLW];
                assign lo_wdata[g*HW +: HW] = {{(HW-DLW){d[DLW-1]}}, d};
                assign lo_mask[g] = g < c_a;
            end else begin : g_out
                assign lo_wdata[g*HW +: HW] = {HW{1'b0}};
                assign lo_mask[g] = 1'b0;
            end
        end
    endgenerate

    // ---- the host ports, driven by the phase
    always @(*) begin
        s_wr_en = 1'b0;
        s_wr_sel = 2'd3;
        s_wr_base = c_db;
        s_wr_slog = c_ds;
        s_wr_i = lq_b[LOSS_LAT];
        s_wr_j = {IW{1'b0}};
        s_wr_mask = lo_mask;
        s_wr_data = lo_wdata;
        s_rd_en = 1'b0;
        s_rd_sel = 1'b0;
        s_rd_base = c_qb;
        s_rd_slog = c_qs;
        s_rd_i = lb;
        s_rd_j = {IW{1'b0}};
        s_rd_rows = c_b << 1;
        s_rd_cols = c_a_iw;
        if (state == S_LOSS || state == S_LOSSW) begin
            s_wr_en = lo_v;
            s_rd_en = state == S_LOSS;
            if (ls == 2'd1) s_rd_i = lb + c_b;
            if (ls == 2'd2) begin
                s_rd_base = c_qtb;
                s_rd_slog = c_qts;
                s_rd_rows = c_b;
            end
        end
        if (wk_run) begin
            // the walk's: the operand words into the weight (or bias) bank, the gradient
            // block from the delta bank (Adam's walk); the target's operand walk writes the
            // weight and bias banks while the engine runs the online net's forward ops
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
    end

    // ---- the configuration's range (checked at the start: nothing runs on a bad one). The
    // check is registered (its compares reach no state register in the cycle they are
    // made): the command's first cycle, S_CHK, reads it.
    reg  cfg_bad;
    wire cfg_bad_n = c_nlay == 7'd0 || {25'd0, c_nlay} > NL || c_a == 8'd0
                   || {24'd0, c_a} > AMAX || c_b == {IW{1'b0}}
                   || {{(31-IW){1'b0}}, c_b, 1'b0} > BMAX
                   || {{(31-OPB){1'b0}}, c_nf} != {24'd0, c_nlay, 1'b0}
                   || c_nf >= c_nops || {{(31-OPB){1'b0}}, c_nops} > NOPS
                   || c_period == 32'd0;
    always @(posedge clk) cfg_bad <= cfg_bad_n;

    // A cycle's saturations, registered before they reach the SW-bit count: the sum of
    // three sources and the count's carry chain in one cycle is a path past the clock. The
    // count lags a cycle, and is whole at S_FIN all the same: the last source is Adam's
    // walk, whose last count leaves the cycle before its `done`.
    reg  [SW-1:0] sat_add;
    always @(posedge clk)
        sat_add <= (lo_v ? {{(SW-2){1'b0}}, lo_sat} : {SW{1'b0}})
                   + {{(SW-CB-3){1'b0}}, wk_sat}
                   + (((state == S_FWDW || state == S_BWDW) && e_done) ? e_sat : {SW{1'b0}});
    always @(posedge clk) begin
        st_done <= 1'b0;
        e_start <= 1'b0;
        step_inc <= 1'b0;
        if (st_busy) st_cycles <= st_cycles + 1'b1;
        case (state)
            S_FWD, S_FWDW, S_FWD2: st_cyc_fwd <= st_cyc_fwd + 1'b1;
            S_LOSS, S_LOSSW: st_cyc_loss <= st_cyc_loss + 1'b1;
            S_BWD, S_BWDW: st_cyc_bwd <= st_cyc_bwd + 1'b1;
            S_WALK: if (pk == P_ADAM) st_cyc_upd <= st_cyc_upd + 1'b1;
            default: ;
        endcase
        if (bg) st_cyc_tgt <= st_cyc_tgt + 1'b1;
        // the operand roundings the walks' write stage counts, by net
        if (wk_op_v) begin
            if (pk == P_ADAM || pk == P_OPON)
                nop_on_n <= nop_on_n + {{(SW-CB){1'b0}}, wk_op_nsat};
            if (pk == P_OPTG)
                nop_tg_n <= nop_tg_n + {{(SW-CB){1'b0}}, wk_op_nsat};
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
                st_cyc_bwd <= {SW{1'b0}};
                st_cyc_upd <= {SW{1'b0}};
                st_cyc_tgt <= {SW{1'b0}};
                nop_on_n <= {SW{1'b0}};
                nop_tg_n <= {SW{1'b0}};
                tgt_ran <= 1'b0;
                // the operand roundings of the words this step reads: the online net's
                // here, the target's at the end (from this step's operand walk when its
                // masters moved, so counted once the walk is done)
                acc_sat <= nop_on;
                state <= S_CHK;
            end
            S_CHK: if (cfg_bad) begin
                st_error <= 1'b1;
                state <= S_FIN;
            end else if (cmd_init) begin
                pk <= P_OPON;
                state <= S_WALK;
            end else begin
                state <= S_FWD;
            end
            S_FWD: begin
                // The whole forward table, or (target masters moved) the online net's ops
                // while the target's operand walk writes its words, then the target's.
                e_start <= 1'b1;
                e_nops <= tg_stale ? c_nlay_x[OPB:0] : c_nf;
                e_first <= {OPB{1'b0}};
                split <= tg_stale;
                if (tg_stale) begin
                    bg <= 1'b1;
                    pk <= P_OPTG;
                    tgt_ran <= 1'b1;
                end
                state <= S_FWDW;
            end
            S_FWDW: if (e_done) begin
                if (e_error) begin
                    st_error <= 1'b1;
                    state <= S_FIN;
                end else if (split) begin
                    state <= S_FWD2;
                end else begin
                    state <= S_LOSS;
                    lb <= {IW{1'b0}};
                    ls <= 2'd0;
                    l_left <= c_b;
                end
            end
            S_FWD2: if (!bg) begin
                // the target's words are written: its forward ops
                e_start <= 1'b1;
                e_nops <= c_nf;
                e_first <= c_nlay_x[OPB-1:0];
                split <= 1'b0;
                state <= S_FWDW;
            end
            S_LOSS: begin
                if (ls == 2'd2) begin
                    ls <= 2'd0;
                    lb <= lb + 1'b1;
                    if (lb + 1'b1 == c_b) state <= S_LOSSW;
                end else begin
                    ls <= ls + 1'b1;
                end
            end
            S_LOSSW: if (l_left == {IW{1'b0}}) state <= S_BWD;
            S_BWD: begin
                e_start <= 1'b1;
                e_nops <= c_nops;
                e_first <= c_nf[OPB-1:0];
                state <= S_BWDW;
            end
            S_BWDW: if (e_done) begin
                if (e_error) begin
                    st_error <= 1'b1;
                    state <= S_FIN;
                end else begin
                    pk <= P_ADAM;
                    state <= S_WALK;
                end
            end
            S_WALK: if (wk_done) begin
                // the walk's last write: init's second walk, or the end
                if (pk == P_OPON) pk <= P_OPTG;
                else state <= S_FIN;
            end
            S_FIN: if (!bg) begin
                st_busy <= 1'b0;
                st_done <= 1'b1;
                state <= S_IDLE;
                if (!st_error) begin
                    if (cmd_init) begin
                        nop_on <= nop_on_n;
                        nop_tg <= nop_tg_n;
                        tg_stale <= 1'b0;
                    end else begin
                        st_sat <= acc_sat + (tgt_ran ? nop_tg_n : nop_tg);
                        nop_on <= nop_on_n;
                        if (tgt_ran) nop_tg <= nop_tg_n;
                        // Adam's walk updated the target masters when due
                        tg_stale <= due;
                        step_inc <= 1'b1;
                    end
                end
            end
            default: state <= S_IDLE;
        endcase
        if (state == S_LOSSW || state == S_LOSS)
            if (lo_v) l_left <= l_left - 1'b1;
        if (bg && wk_done) begin
            bg <= 1'b0;
            tg_stale <= 1'b0;
        end
        if (rst) begin
            bg <= 1'b0;
            tg_stale <= 1'b0;
            state <= S_IDLE;
            st_busy <= 1'b0;
            st_done <= 1'b0;
            st_error <= 1'b0;
            e_start <= 1'b0;
            step_inc <= 1'b0;
            nop_on <= {SW{1'b0}};
            nop_tg <= {SW{1'b0}};
            st_sat <= {SW{1'b0}};
            st_cycles <= {SW{1'b0}};
            pk <= P_ADAM;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_misc = ^{cfg_rel, c_a_x, c_nlay_x, e_busy, e_cycles, c_flags,
                         AAB[0], BAB[0], DAB[0], WAB[0], rd_vals, HAB0[0], FW0[0]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
