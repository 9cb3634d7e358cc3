// hrl_learn_walk: the learning module's walks over the parameter stream, shared by the SGD
// step modules (hrl_learn_step: DQN, hrl_learn_step_ddpg: DDPG). It owns the optimizer's
// state: the four parameter banks (master, Adam's m and v, target master), the layer
// registers that place each layer's words in the engine's banks, C Adam lanes
// (hrl_learn_adam) and C target lanes (hrl_learn_target). Bit for bit
// hrl.fixed_point.optim's adam, polyak, hard_copy and operand over a net's parameters.
//
// The parameter stream: layers lo..hi-1, per layer l its weight rows i = 0..K-1 then its
// bias as row K, per row column blocks jb = 0..ceil(N/C)-1 of C words (lanes past N hold
// zeros, and are neither written to the engine nor counted): the stream's blocks from the
// layer's P_BASE on, one address of the four banks a block. The host reads and writes the
// banks in that order through the p_* port (while `busy` is low).
//
// A walk issues one block a cycle, in the stream's order; four kinds (`kind`):
//   0 Adam     the gradient block read from the engine's delta bank (the layer's GW_BASE
//              row i, or GB_BASE for the bias), master, m and v from the banks, the C Adam
//              lanes (rate `lr`), the new master, m and v written back, and the operand
//              words (the new master rounded to the weight format: the target lanes in copy
//              mode) written into the engine's weight (W_BASE) or bias (B_BASE) bank;
//   1 target   the master and the target master through the target lanes (Polyak with
//              `tau` when `polyak`, else a hard copy; Polyak needs TGT_WALK), the new target
//              master written back, its operand words into the engine's target weights
//              (TW_BASE, TB_BASE);
//   2 operand  the online net's operand words from its masters (the host's initial words);
//   3 operand  the target net's, from the target masters.
// With FOLD, Adam's walk with `with_tgt` also updates the target (DQN's step, when due): C more
// target lanes take the new master beside the operand lanes, with the target master read
// from its bank at Adam's output (Polyak with `tau` when `polyak`, else a hard copy), and
// the new target master is written back in the same write stage; the target net's operand
// words are left to an operand walk (kind 3), which the step runs during its next forward
// pass. So the target costs Adam's walk no cycle.
// Pipeline (stage s: s cycles after the issue): the banks' read 2 (the engine's gradient
// read 5: its host port's register and its bank's 4), Adam ADAM_LAT (33, hrl_learn_adam's
// LAT) from stage 5, target TGT_LAT (9, hrl_learn_target's LAT): the write stage at 47 for
// Adam's walk, at 11 for the others; the saturation counts of a stage leave two cycles
// after it (groups of four lanes, then their sum). A walk lasts blocks + 50 cycles (Adam) or
// blocks + 14 (the others): its issues, the drain to the last write, the last counts, `done`
// high in its last cycle (hrl.mapping.learner_schedule's walk terms).
//
// Timing of `run`: the step raises it in a walk's first issue cycle and holds it, with
// kind, lr, lo and hi, through the cycle of `done`; a cycle of `run` after `done` (or after
// a cycle without `run`) starts the next walk, so walks may follow each other with no gap.
// While `run` is high the walk drives the engine's host ports (wr_*, rd_*: the step passes
// them to the engine in those cycles) and reads the engine's rd_data 5 cycles after rd_en.
//
// Saturations, per cycle, two cycles after the stage that made them (so that no path runs
// from the lanes' flags through a sum over C lanes into the step's counters): `sat` the
// walk's arithmetic's (the Adam lanes' and the Polyak step's masters', of the lanes below
// N); `op_v` a block's operand words written two cycles before, `op_nsat` their
// roundings' saturations and `op_layer` its layer, which the step sums by net
// (optim.operand's counts). Every count of a walk leaves before its `done` (the
// last in the cycle before).
//
// Cost: C Adam lanes, C target lanes (copy-only without TGT_WALK) and, with FOLD, C more
// for Adam's walk with with_tgt, four banks of PDEPTH blocks of C words (one
// read and one write port each), the layer registers (11 fields of NL layers), the side
// band's LAT-stage pipeline (shift registers), the counters.
`default_nettype none

module hrl_learn_walk #(
    // The engine's parameters (hrl_learn_engine's header), which size its host ports: the
    // array's rows and columns, the weight-word and widest output-word widths, the largest
    // layer width, layer count and batch.
    parameter R = 4,
    parameter C = 4,
    parameter BW = 18,
    parameter OW = 24,
    parameter NMAX = 64,
    parameter NL = 4,
    parameter BMAX = 32,
    // Weight format (the operand words the array reads, sign-extended to the bank's word):
    // width (2..BW) and fractional bits.
    parameter WWID = 18,
    parameter WF = 14,
    // Gradient format (the engine's weight-gradient words, at most OW bits).
    parameter GW = 24,
    parameter GF = 12,
    // Master format (master and target weights; at most 32 bits, the host port's lane).
    parameter MW = 28,
    parameter MF = 24,
    // Adam's first moment (at most 32 bits).
    parameter OMW = 28,
    parameter OMF = 16,
    // Adam's second moment (at most 32 bits).
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
    parameter LF = 24,
    // The walks a step runs: TGT_WALK 1 the target walk (kind 1: Polyak through the target
    // lanes; 0 builds them copy-only, the operand rounding alone), FOLD 1 Adam's walk with
    // with_tgt (0: without the C lanes it takes, with_tgt unused).
    parameter TGT_WALK = 1,
    parameter FOLD = 1
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 busy,       // the step runs: the banks are the walk's
    // ---- the settings, held while a walk runs
    input  wire [UW-1:0]        c1,         // Adam's 1 - beta1 (unit word)
    input  wire [UW-1:0]        c2,         // Adam's 1 - beta2 (unit word)
    input  wire [LW-1:0]        lr,         // Adam's rate word
    input  wire [QW-1:0]        v_floor,    // Adam's second-moment floor
    input  wire [UW-1:0]        tau,        // Polyak's rate (unit word)
    input  wire                 polyak,     // the target walk: 1 Polyak, 0 a hard copy
    input  wire                 with_tgt,   // Adam's walk updates the target too (header)
    // ---- the layer registers, written while the step is idle: field cfg_field of layer
    // cfg_layer (< NL), the steps' per-layer st_cfg fields: 0 K 1 N (input and output
    // widths) 2 W_BASE 3 W_SLOG (weight bank) 4 B_BASE (bias bank) 5 TW_BASE 6 TB_BASE (the
    // target's) 7 GW_BASE 8 G_SLOG (weight gradient, delta bank) 9 GB_BASE (bias gradient)
    // 10 P_BASE (the layer's first block in the parameter banks)
    input  wire                 cfg_en,
    input  wire [LB-1:0]        cfg_layer,
    input  wire [3:0]           cfg_field,
    input  wire [31:0]          cfg_data,
    // ---- the walk (see the header's timing)
    input  wire                 run,        // a walk runs: its issues and drain
    input  wire [1:0]           kind,       // 0 Adam, 1 target, 2 online operands, 3 target's
    input  wire [LB-1:0]        lo,         // the walk's first layer
    input  wire [LB:0]          hi,         // one past its last layer
    output wire                 done,       // one cycle: the walk's last write and count
    // ---- the walk's drive of the engine's host ports (hrl_learn_engine's h_*)
    output wire                 wr_en,      // the operand words of a block
    output wire [1:0]           wr_sel,
    output wire [HAB-1:0]       wr_base,
    output wire [4:0]           wr_slog,
    output wire [IW-1:0]        wr_i,
    output wire [IW-1:0]        wr_j,
    output wire [LA-1:0]        wr_mask,
    output wire [LA*HW-1:0]     wr_data,
    output wire                 rd_en,      // a gradient block (Adam's walk)
    output wire                 rd_sel,
    output wire [HAB-1:0]       rd_base,
    output wire [4:0]           rd_slog,
    output wire [IW-1:0]        rd_i,
    output wire [IW-1:0]        rd_j,
    output wire [IW-1:0]        rd_rows,
    output wire [IW-1:0]        rd_cols,
    input  wire [LA*OW-1:0]     rd_data,    // the engine's h_rd_data
    // ---- the saturations (see the header)
    output reg  [CB+2:0]        sat,
    output reg                  op_v,
    output reg  [LB-1:0]        op_layer,
    output reg  [CB-1:0]        op_nsat,
    // ---- the parameter banks' host port: 0 master, 1 m, 2 v, 3 target; block p_*_addr,
    // lane c at [c*32 +: 32] (the low bits written; read sign-extended, 2 cycles after
    // p_rd_en), while busy is low
    input  wire                 p_wr_en,
    input  wire [1:0]           p_wr_sel,
    input  wire [PAB-1:0]       p_wr_addr,
    input  wire [C*32-1:0]      p_wr_data,
    input  wire                 p_rd_en,
    input  wire [1:0]           p_rd_sel,
    input  wire [PAB-1:0]       p_rd_addr,
    output reg  [C*32-1:0]      p_rd_data
);
    // ------------------------------------------------------------------ sizes (the engine's)
    localparam LA = (R > C) ? R : C;
    localparam LGA = $clog2(LA);
    localparam LGC = $clog2(C);
    localparam DMAX = (NMAX > BMAX) ? NMAX : BMAX;
    localparam IW = $clog2(DMAX + 1);
    localparam SLA = $clog2((NMAX + LA - 1) / LA);
    localparam SLC = $clog2((NMAX + C - 1) / C);
    localparam DDEPTH = ((NL + 1) * BMAX + NL * (NMAX + 1)) * (1 << SLA);
    localparam WDEPTH = 2 * NL * NMAX * (1 << SLC);
    localparam BDEPTH = 2 * NL * (1 << SLC);
    localparam DAB = (DDEPTH > 1) ? $clog2(DDEPTH) : 1;
    localparam WAB = (WDEPTH > 1) ? $clog2(WDEPTH) : 1;
    localparam BAB = (BDEPTH > 1) ? $clog2(BDEPTH) : 1;
    localparam HAB0 = (DAB > WAB) ? DAB : WAB;
    localparam HAB = (HAB0 > BAB) ? HAB0 : BAB;
    localparam HW = (OW > BW) ? OW : BW;
    // the walk's own
    localparam NBLK = (NMAX + C - 1) / C;                  // blocks of a row
    localparam PDEPTH = NL * (NMAX + 1) * NBLK;            // blocks of the largest stream
    localparam PAB = (PDEPTH > 1) ? $clog2(PDEPTH) : 1;
    localparam LB = (NL > 1) ? $clog2(NL) : 1;             // a layer
    localparam CB = $clog2(C + 1);
    localparam OB = (LGA > 0) ? LGA : 1;
    localparam ADAM_LAT = 33;                              // hrl_learn_adam's LAT
    localparam GRAD_RD = 5;                                // the engine's host read
    localparam ADAM_OUT = GRAD_RD + ADAM_LAT;              // Adam's output stage
    localparam TGT_LAT = 9;                                // hrl_learn_target's LAT
    localparam LAT = ADAM_OUT + TGT_LAT;                   // Adam's write stage
    localparam LAT_T = 2 + TGT_LAT;                        // the other walks'
    localparam [1:0] P_ADAM = 2'd0, P_TGT = 2'd1, P_OPTG = 2'd3;
    localparam integer W_SH = MF - WF;                     // the operand's shift (checked)

    initial begin
        if (C < 1 || (1 << LGC) != C)
            $fatal(1, "hrl_learn_walk: C=%0d must be a power of two", C);
        if (WWID < 2 || WWID > BW)
            $fatal(1, "hrl_learn_walk: WWID=%0d must be in 2..BW=%0d", WWID, BW);
        if (GW > OW) $fatal(1, "hrl_learn_walk: GW=%0d must fit OW=%0d", GW, OW);
        if (MW > 32 || OMW > 32 || QW > 32)
            $fatal(1, "hrl_learn_walk: MW=%0d, OMW=%0d, QW=%0d must be at most 32 (the port)",
                   MW, OMW, QW);
        if (W_SH < -4) $fatal(1, "hrl_learn_walk: MF - WF = %0d must be at least -4", W_SH);
        if (PAB > 24) $fatal(1, "hrl_learn_walk: parameter banks of 2**%0d blocks", PAB);
    end

    // ------------------------------------------------------------------ the layer registers
    reg [IW-1:0]   l_k  [0:NL-1];
    reg [IW-1:0]   l_n  [0:NL-1];
    reg [HAB-1:0]  l_wb [0:NL-1];
    reg [4:0]      l_ws [0:NL-1];
    reg [HAB-1:0]  l_bb [0:NL-1];
    reg [HAB-1:0]  l_twb [0:NL-1];
    reg [HAB-1:0]  l_tbb [0:NL-1];
    reg [HAB-1:0]  l_gwb [0:NL-1];
    reg [4:0]      l_gs [0:NL-1];
    reg [HAB-1:0]  l_gbb [0:NL-1];
    reg [PAB-1:0]  l_pb [0:NL-1];
    always @(posedge clk) begin
        if (cfg_en)
            case (cfg_field)
                4'd0:  l_k[cfg_layer] <= cfg_data[IW-1:0];
                4'd1:  l_n[cfg_layer] <= cfg_data[IW-1:0];
                4'd2:  l_wb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd3:  l_ws[cfg_layer] <= cfg_data[4:0];
                4'd4:  l_bb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd5:  l_twb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd6:  l_tbb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd7:  l_gwb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd8:  l_gs[cfg_layer] <= cfg_data[4:0];
                4'd9:  l_gbb[cfg_layer] <= cfg_data[HAB-1:0];
                4'd10: l_pb[cfg_layer] <= cfg_data[PAB-1:0];
                default: ;
            endcase
    end

    // ------------------------------------------------------------------ the parameter banks
    // Four memories of C-word blocks (master, m, v, target), one read and one write port
    // each: the walk's while busy, else the host's. Adam's walk reads the target bank later
    // than the others, at Adam's output (its address from the side band: below).
    wire             pr_en;            // the walk's read (this cycle)
    wire [PAB-1:0]   pr_addr;
    wire [PAB-1:0]   p_raddr = busy ? pr_addr : p_rd_addr;
    wire             p_ren = busy ? pr_en : p_rd_en;
    reg  [C*MW-1:0]  mem_w [0:PDEPTH-1];
    reg  [C*OMW-1:0] mem_m [0:PDEPTH-1];
    reg  [C*QW-1:0]  mem_v [0:PDEPTH-1];
    reg  [C*MW-1:0]  mem_t [0:PDEPTH-1];
    reg  [C*MW-1:0]  rw1, rw2, rt1, rt2;
    reg  [C*OMW-1:0] rm1, rm2;
    reg  [C*QW-1:0]  rv1, rv2;
    // Adam's operands, stages 3 to GRAD_RD, waiting for the gradient.
    reg  [C*MW-1:0]  aw_d [3:GRAD_RD];
    reg  [C*OMW-1:0] am_d [3:GRAD_RD];
    reg  [C*QW-1:0]  av_d [3:GRAD_RD];
    integer ad;
    // the walk's writes
    wire             ww_en, wm_en, wt_en;   // master, m and v, target
    wire [PAB-1:0]   ww_addr, wm_addr;
    wire [C*MW-1:0]  ww_data, wt_data;
    wire [C*OMW-1:0] wm_data;
    wire [C*QW-1:0]  wv_data;
    // the host's writes, unpacked
    wire [C*MW-1:0]  hp_w;
    wire [C*OMW-1:0] hp_m;
    wire [C*QW-1:0]  hp_v;
    genvar g;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_hp
            assign hp_w[g*MW +: MW] = p_wr_data[g*32 +: MW];
            assign hp_m[g*OMW +: OMW] = p_wr_data[g*32 +: OMW];
            assign hp_v[g*QW +: QW] = p_wr_data[g*32 +: QW];
            if (MW < 32 || OMW < 32 || QW < 32) begin : g_unused
                /* verilator lint_off UNUSEDSIGNAL */
                wire unused = ^p_wr_data[g*32 +: 32];
                /* verilator lint_on UNUSEDSIGNAL */
            end
        end
    endgenerate
    // One write port per bank, as the read port: the walk's while busy, else the host's. Two
    // write ports (the walk's and the host's apart) would not map onto a block RAM, whose
    // second port is the read's: synthesis would build each bank from flip-flops.
    wire             w_we = busy ? ww_en : p_wr_en && p_wr_sel == 2'd0;
    wire             m_we = busy ? wm_en : p_wr_en && p_wr_sel == 2'd1;
    wire             v_we = busy ? wm_en : p_wr_en && p_wr_sel == 2'd2;
    wire             t_we = busy ? wt_en : p_wr_en && p_wr_sel == 2'd3;
    wire [PAB-1:0]   w_wa = busy ? ww_addr : p_wr_addr;  // master and target
    wire [PAB-1:0]   m_wa = busy ? wm_addr : p_wr_addr;  // m and v
    wire [C*MW-1:0]  w_wd = busy ? ww_data : hp_w;       // master
    wire [C*MW-1:0]  t_wd = busy ? wt_data : hp_w;       // target
    wire [C*OMW-1:0] m_wd = busy ? wm_data : hp_m;
    wire [C*QW-1:0]  v_wd = busy ? wv_data : hp_v;
    always @(posedge clk) begin
        if (p_ren) begin
            rw1 <= mem_w[p_raddr];
            rm1 <= mem_m[p_raddr];
            rv1 <= mem_v[p_raddr];
        end
        rw2 <= rw1;
        rm2 <= rm1;
        rv2 <= rv1;
        rt2 <= rt1;
        aw_d[3] <= rw2;
        am_d[3] <= rm2;
        av_d[3] <= rv2;
        for (ad = 4; ad <= GRAD_RD; ad = ad + 1) begin
            aw_d[ad] <= aw_d[ad-1];
            am_d[ad] <= am_d[ad-1];
            av_d[ad] <= av_d[ad-1];
        end
        if (w_we) mem_w[w_wa] <= w_wd;
        if (m_we) mem_m[m_wa] <= m_wd;
        if (v_we) mem_v[m_wa] <= v_wd;
        if (t_we) mem_t[w_wa] <= t_wd;
    end
    // The host's read: the selected bank's block, sign-extended, 2 cycles after.
    reg [1:0] p_sel1;
    always @(posedge clk) p_sel1 <= p_rd_sel;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_prd
            wire [MW-1:0]  w = rw1[g*MW +: MW];
            wire [OMW-1:0] m = rm1[g*OMW +: OMW];
            wire [QW-1:0]  v = rv1[g*QW +: QW];
            wire [MW-1:0]  t = rt1[g*MW +: MW];
            always @(posedge clk)
                case (p_sel1)
                    2'd0: p_rd_data[g*32 +: 32] <= {{(32-MW){w[MW-1]}}, w};
                    2'd1: p_rd_data[g*32 +: 32] <= {{(32-OMW){m[OMW-1]}}, m};
                    2'd2: p_rd_data[g*32 +: 32] <= {{(32-QW){v[QW-1]}}, v};
                    default: p_rd_data[g*32 +: 32] <= {{(32-MW){t[MW-1]}}, t};
                endcase
        end
    endgenerate

    // ------------------------------------------------------------------ the walk
    reg            mid;                // the walk's first block is issued
    reg            drain;              // its last block is issued: the pipeline drains
    reg [5:0]      w_drain;            // cycles since the last issue
    reg [LB-1:0]   wl;                 // the next block's layer, row, column block, address
    reg [IW-1:0]   wi, wjb;            // (0 at a walk's start: they wrap at its last block)
    reg [PAB-1:0]  wp;
    wire           w_issue = run && !drain;   // one block per cycle
    wire           w_first = w_issue && !mid;
    wire [LB-1:0]  cl = w_first ? lo : wl;      // this cycle's block
    wire [PAB-1:0] cp = w_first ? l_pb[lo] : wp;
    wire [IW-1:0]  wk = l_k[cl];
    wire [IW-1:0]  wn = l_n[cl];
    wire [IW-1:0]  w_nblk = (wn + C[IW-1:0] - 1'b1) >> LGC;
    wire           w_bias = wi == wk;
    wire           w_last_blk = wjb + 1'b1 >= w_nblk;
    wire           w_last_row = w_bias;
    wire           w_last_layer = {1'b0, cl} + 1'b1 >= hi;
    wire [IW+7:0]  w_j = {8'd0, wjb} << LGC;      // the block's first column
    wire [C-1:0]   w_lanes;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_wl
            assign w_lanes[g] = w_j + g < {8'd0, wn};
        end
    endgenerate
    wire [IW-1:0]  w_j_al = (w_j[IW-1:0] >> LGA) << LGA;
    assign done = drain && w_drain == ((kind == P_ADAM) ? LAT[5:0] + 6'd2 : LAT_T[5:0] + 6'd2);
    always @(posedge clk) begin
        if (w_issue) begin
            mid <= 1'b1;
            wl <= cl;
            wp <= cp + 1'b1;
            wjb <= wjb + 1'b1;
            if (w_last_blk) begin
                wjb <= {IW{1'b0}};
                if (w_last_row) begin
                    wi <= {IW{1'b0}};
                    if (w_last_layer) begin
                        mid <= 1'b0;
                        drain <= 1'b1;
                        w_drain <= 6'd0;
                    end else begin
                        wl <= cl + 1'b1;
                        wp <= l_pb[cl + 1'b1];
                    end
                end else begin
                    wi <= wi + 1'b1;
                end
            end
        end
        if (drain) begin
            // LAT (or LAT_T) cycles after the last issue every write is done, two cycles
            // later its counts
            w_drain <= w_drain + 1'b1;
            if (done) drain <= 1'b0;
        end
        if (rst) begin
            mid <= 1'b0;
            drain <= 1'b0;
            wi <= {IW{1'b0}};
            wjb <= {IW{1'b0}};
        end
    end

    // The walk's side band, through its pipeline (stage s: s cycles after the issue).
    reg            d_v    [1:LAT];
    reg [PAB-1:0]  d_p    [1:LAT];
    reg [LB-1:0]   d_l    [1:LAT];
    reg [IW-1:0]   d_i    [1:LAT];
    reg [IW-1:0]   d_jb   [1:LAT];
    reg            d_b    [1:LAT];
    reg [C-1:0]    d_lanes[1:LAT];
    reg [OB-1:0]   d_off  [1:GRAD_RD];            // the gradient's lanes in the LA read
    integer s;
    always @(posedge clk) begin
        d_v[1] <= w_issue;
        d_p[1] <= cp;
        d_l[1] <= cl;
        d_i[1] <= wi;
        d_jb[1] <= wjb;
        d_b[1] <= w_bias;
        d_lanes[1] <= w_lanes;
        d_off[1] <= w_j[OB-1:0] & (LA[OB-1:0] - 1'b1);
        for (s = 2; s <= GRAD_RD; s = s + 1) d_off[s] <= d_off[s-1];
        for (s = 2; s <= LAT; s = s + 1) begin
            d_v[s] <= d_v[s-1];
            d_p[s] <= d_p[s-1];
            d_l[s] <= d_l[s-1];
            d_i[s] <= d_i[s-1];
            d_jb[s] <= d_jb[s-1];
            d_b[s] <= d_b[s-1];
            d_lanes[s] <= d_lanes[s-1];
        end
        if (rst) for (s = 1; s <= LAT; s = s + 1) d_v[s] <= 1'b0;
    end
    // The target bank's read: at the issue, or in Adam's walk two stages before Adam's
    // output (rt2 then meets the new master of the same block).
    wire             t_late = busy && kind == P_ADAM;
    wire [PAB-1:0]   t_raddr = t_late ? d_p[ADAM_OUT-2] : p_raddr;
    wire             t_ren = t_late ? d_v[ADAM_OUT-2] : p_ren;
    always @(posedge clk) if (t_ren) rt1 <= mem_t[t_raddr];

    // ---- the Adam lanes (stage GRAD_RD in, stage ADAM_OUT out)
    wire [C*GW-1:0]  grad;
    wire [C-1:0]     ad_v;
    wire [C*MW-1:0]  ad_w;
    wire [C*OMW-1:0] ad_m;
    wire [C*QW-1:0]  ad_q;
    wire [C*3-1:0]   ad_sat;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_adam
            wire [OW-1:0] word = rd_data[({{(32-OB){1'b0}}, d_off[GRAD_RD]} + g) * OW +: OW];
            assign grad[g*GW +: GW] = word[GW-1:0];
            if (OW > GW) begin : g_unused
                /* verilator lint_off UNUSEDSIGNAL */
                wire unused = ^word[OW-1:GW];
                /* verilator lint_on UNUSEDSIGNAL */
            end
            hrl_learn_adam #(.GW(GW), .GF(GF), .MW(OMW), .MF(OMF), .SW(QW), .SF(QF),
                             .RW(RW), .RF(RF), .TW(TW), .TF(TF), .WW(MW), .WF(MF),
                             .UW(UW), .UF(UF), .LW(LW), .LF(LF)) adam_inst (
                .clk(clk), .rst(rst), .c1(c1), .c2(c2), .lr(lr), .v_floor(v_floor),
                .in_valid(d_v[GRAD_RD] && kind == P_ADAM), .in_w(aw_d[GRAD_RD][g*MW +: MW]),
                .in_m(am_d[GRAD_RD][g*OMW +: OMW]), .in_v(av_d[GRAD_RD][g*QW +: QW]),
                .in_g(grad[g*GW +: GW]),
                .out_valid(ad_v[g]), .out_w(ad_w[g*MW +: MW]), .out_m(ad_m[g*OMW +: OMW]),
                .out_v(ad_q[g*QW +: QW]), .out_sat(ad_sat[g*3 +: 3]));
        end
    endgenerate

    // ---- the target and operand lanes (stage ADAM_OUT in for Adam's walk, else stage 2)
    wire             t_in_v = (kind == P_ADAM) ? d_v[ADAM_OUT] : d_v[2];
    wire [C*MW-1:0]  t_on = (kind == P_ADAM) ? ad_w : ((kind == P_OPTG) ? rt2 : rw2);
    wire             t_copy = !(kind == P_TGT && polyak);
    wire             t_out_v;
    wire [C*MW-1:0]  t_master;
    wire [C*WWID-1:0] t_weight;
    wire [C-1:0]     t_sat_m, t_sat_w;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [$clog2(2 * C + 1)-1:0] t_nsat;   // counted per lane below (the lanes past N out)
    /* verilator lint_on UNUSEDSIGNAL */
    hrl_learn_target #(.P(C), .MW(MW), .MF(MF), .WW(WWID), .WF(WF), .UW(UW), .UF(UF),
                       .POLYAK(TGT_WALK)) target_inst (
        .clk(clk), .rst(rst), .tau(tau), .in_valid(t_in_v), .in_copy(t_copy),
        .in_online(t_on), .in_target(rt2), .out_valid(t_out_v), .out_master(t_master),
        .out_weight(t_weight), .out_sat_master(t_sat_m), .out_sat_weight(t_sat_w),
        .out_nsat(t_nsat));
    // The target's lanes of Adam's walk with with_tgt (stage ADAM_OUT in, LAT out; FOLD):
    // the new master and the target master read late; their operand words are not used
    // (the next forward's operand walk writes them).
    wire             f_out_v;
    wire [C*MW-1:0]  f_master;
    wire [C-1:0]     f_sat_m;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [C*WWID-1:0] f_weight;
    wire [C-1:0]     f_sat_w;
    wire [$clog2(2 * C + 1)-1:0] f_nsat;
    /* verilator lint_on UNUSEDSIGNAL */
    wire             f_on = FOLD != 0 && kind == P_ADAM && with_tgt;
    generate
        if (FOLD != 0) begin : g_fold
            hrl_learn_target #(.P(C), .MW(MW), .MF(MF), .WW(WWID), .WF(WF), .UW(UW), .UF(UF))
            fold_inst (
                .clk(clk), .rst(rst), .tau(tau), .in_valid(d_v[ADAM_OUT] && f_on),
                .in_copy(!polyak), .in_online(ad_w), .in_target(rt2), .out_valid(f_out_v),
                .out_master(f_master), .out_weight(f_weight), .out_sat_master(f_sat_m),
                .out_sat_weight(f_sat_w), .out_nsat(f_nsat));
        end else begin : g_no_fold
            assign f_out_v = 1'b0;
            assign f_master = {(C*MW){1'b0}};
            assign f_sat_m = {C{1'b0}};
            assign f_weight = {(C*WWID){1'b0}};
            assign f_sat_w = {C{1'b0}};
            assign f_nsat = {$clog2(2 * C + 1){1'b0}};
            /* verilator lint_off UNUSEDSIGNAL */
            wire unused_fold = with_tgt;
            /* verilator lint_on UNUSEDSIGNAL */
        end
    endgenerate
    // The write stage: LAT for Adam's walk, LAT_T for the others.
    wire             o_v = (kind == P_ADAM) ? d_v[LAT] : d_v[LAT_T];
    wire [PAB-1:0]   o_p = (kind == P_ADAM) ? d_p[LAT] : d_p[LAT_T];
    wire [LB-1:0]    o_l = (kind == P_ADAM) ? d_l[LAT] : d_l[LAT_T];
    wire [IW-1:0]    o_i = (kind == P_ADAM) ? d_i[LAT] : d_i[LAT_T];
    wire [IW-1:0]    o_jb = (kind == P_ADAM) ? d_jb[LAT] : d_jb[LAT_T];
    wire             o_b = (kind == P_ADAM) ? d_b[LAT] : d_b[LAT_T];
    wire [C-1:0]     o_lanes = (kind == P_ADAM) ? d_lanes[LAT] : d_lanes[LAT_T];
    wire             o_tgt = kind == P_TGT || kind == P_OPTG;   // the target net's words
    // A stage's saturation flags are counted in two registered halves: each group of four
    // lanes in the cycle after the stage, the groups' sum in the next. (A sum over C lanes in
    // one cycle is a tree of wide LUTs about twice the clock's depth at C = 32.) The groups'
    // sum is a balanced tree of two-input adders, one wire per node: written as one
    // expression (or a loop), synthesis merges it into one many-input adder whose LUT
    // compressors are half again the clock's depth at eight groups.
    localparam NG = (C + 3) / 4;             // groups of four lanes
    localparam GWS = (C >= 4) ? 3 : CB;      // a group's flag count: at most min(4, C)
    localparam GWA = (C >= 4) ? 4 : CB + 2;  // a group's Adam count: at most 3 min(4, C)
    wire [NG*4-1:0]  sm_lane, sw_lane;
    wire [NG*12-1:0] ad_lane;
    generate
        for (g = 0; g < NG * 4; g = g + 1) begin : g_satl
            if (g < C) begin : g_in
                assign sm_lane[g] = (f_on ? f_sat_m[g] : t_sat_m[g]) && o_lanes[g];
                assign sw_lane[g] = t_sat_w[g] && o_lanes[g];
                assign ad_lane[g*3 +: 3] = d_lanes[ADAM_OUT][g] ? ad_sat[g*3 +: 3] : 3'd0;
            end else begin : g_out
                assign sm_lane[g] = 1'b0;
                assign sw_lane[g] = 1'b0;
                assign ad_lane[g*3 +: 3] = 3'd0;
            end
        end
    endgenerate
    wire             w_out = run && t_out_v && o_v;        // a block's write stage
    wire             sm_on = w_out && (kind == P_TGT || f_on);
    wire             ad_on = run && d_v[ADAM_OUT] && kind == P_ADAM;
    reg  [NG*GWS-1:0] g_sm_n, g_sw_n, g_sm, g_sw;
    reg  [NG*GWA-1:0] g_ad_n, g_ad;
    integer c, k;
    always @(*) begin
        g_sm_n = {(NG*GWS){1'b0}};
        g_sw_n = {(NG*GWS){1'b0}};
        g_ad_n = {(NG*GWA){1'b0}};
        for (c = 0; c < NG; c = c + 1)
            for (k = 0; k < 4; k = k + 1) begin
                g_sm_n[c*GWS +: GWS] = g_sm_n[c*GWS +: GWS]
                    + {{(GWS-1){1'b0}}, sm_lane[c*4+k] && sm_on};
                g_sw_n[c*GWS +: GWS] = g_sw_n[c*GWS +: GWS]
                    + {{(GWS-1){1'b0}}, sw_lane[c*4+k]};
                g_ad_n[c*GWA +: GWA] = g_ad_n[c*GWA +: GWA]
                    + {{(GWA-3){1'b0}}, ad_on ? ad_lane[(c*4+k)*3 +: 3] : 3'd0};
            end
    end
    // the groups' sums: node k of a heap-ordered tree (1 the root, 2k and 2k + 1 its
    // children, the leaves NT .. 2 NT - 1 the groups and zeros), the walk's arithmetic's
    // count (the masters' and Adam's, added at the leaves) and the operand roundings'
    localparam NT = 1 << $clog2(NG);
    wire [CB+2:0]    t_sat [1:2*NT-1];
    wire [CB-1:0]    t_sw  [1:2*NT-1];
    generate
        for (g = NT; g < 2 * NT; g = g + 1) begin : g_leaf
            if (g - NT < NG) begin : g_in
                assign t_sat[g] = {{(CB+3-GWS){1'b0}}, g_sm[(g-NT)*GWS +: GWS]}
                                + {{(CB+3-GWA){1'b0}}, g_ad[(g-NT)*GWA +: GWA]};
                assign t_sw[g] = {{(CB-GWS){1'b0}}, g_sw[(g-NT)*GWS +: GWS]};
            end else begin : g_out
                assign t_sat[g] = {(CB+3){1'b0}};
                assign t_sw[g] = {CB{1'b0}};
            end
        end
        for (g = 1; g < NT; g = g + 1) begin : g_node
            assign t_sat[g] = t_sat[2*g] + t_sat[2*g+1];
            assign t_sw[g] = t_sw[2*g] + t_sw[2*g+1];
        end
    endgenerate
    wire [LA*HW-1:0] t_wdata;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_tw
            if (g < C) begin : g_in
                wire [WWID-1:0] w = t_weight[g*WWID +: WWID];
                assign t_wdata[g*HW +: HW] = {{(HW-WWID){w[WWID-1]}}, w};
            end else begin : g_out
                assign t_wdata[g*HW +: HW] = {HW{1'b0}};
            end
        end
    endgenerate
    // unused: the Adam lanes' valid beyond lane 0 (they run in lock step)
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_ad = ^ad_v;
    /* verilator lint_on UNUSEDSIGNAL */

    // ---- the engine's host ports: the operand words into the weight (or bias) bank
    assign wr_en = t_out_v && o_v;
    assign wr_sel = o_b ? 2'd2 : 2'd1;
    assign wr_base = o_b ? (o_tgt ? l_tbb[o_l] : l_bb[o_l]) : (o_tgt ? l_twb[o_l] : l_wb[o_l]);
    assign wr_slog = o_b ? 5'd0 : l_ws[o_l];
    assign wr_i = o_b ? {IW{1'b0}} : o_i;
    assign wr_j = o_jb << LGC;
    assign wr_mask = {{(LA-C){1'b0}}, o_lanes};
    assign wr_data = t_wdata;
    // the gradient block from the delta bank (Adam's walk)
    assign rd_en = w_issue && kind == P_ADAM;
    assign rd_sel = 1'b1;
    assign rd_base = w_bias ? l_gbb[cl] : l_gwb[cl];
    assign rd_slog = w_bias ? 5'd0 : l_gs[cl];
    assign rd_i = w_bias ? {IW{1'b0}} : wi;
    assign rd_j = w_j_al;
    assign rd_rows = w_bias ? {{(IW-1){1'b0}}, 1'b1} : wk;
    assign rd_cols = wn;
    // the banks: read at the issue, written at the write stage (m and v at Adam's output)
    assign pr_en = w_issue;
    assign pr_addr = cp;
    assign ww_en = t_out_v && o_v && kind == P_ADAM;
    assign wt_en = f_on ? f_out_v && o_v : t_out_v && o_v && kind == P_TGT;
    assign ww_addr = o_p;
    assign ww_data = t_master;
    assign wt_data = f_on ? f_master : t_master;
    assign wm_en = d_v[ADAM_OUT] && kind == P_ADAM;
    assign wm_addr = d_p[ADAM_OUT];
    assign wm_data = ad_m;
    assign wv_data = ad_q;

    // ---- the saturations: the groups' counts (with the block's write stage and layer), then
    // their sums
    reg          g_wv;
    reg [LB-1:0] g_l;
    always @(posedge clk) begin
        g_sm <= g_sm_n;
        g_sw <= g_sw_n;
        g_ad <= g_ad_n;
        g_wv <= w_out;
        g_l <= o_l;
        sat <= t_sat[1];
        op_v <= g_wv;
        op_layer <= g_l;
        op_nsat <= t_sw[1];
        if (rst) begin
            g_sm <= {(NG*GWS){1'b0}};
            g_ad <= {(NG*GWA){1'b0}};
            g_wv <= 1'b0;
            sat <= {(CB+3){1'b0}};
            op_v <= 1'b0;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_misc = ^{w_j, d_p[9], d_p[10], cfg_data, BAB[0], DAB[0], WAB[0], HAB0[0]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
