// hrl_rmm: Replay Management Module -- a pipelined K-ary sum tree of fixed-point priorities.
//
// Bit-exact with the JAX reference hrl.replay.sumtree over hrl.replay.formats.FixedPoint:
// the same words at every level after every operation, the same sampled index for the
// same 32-bit random input. The RTL works on raw words: leaf words are encoded by the host
// (FixedPoint.encode); the leaf fraction bits change no arithmetic here, so they are not a
// parameter. Capacity is K**D leaves; a host with N < K**D items keeps leaves >= N at zero
// (they are never sampled), which is the reference's padded last row.
//
// Tree layout: level 0 (the root) is a register; level l in 1..D is its own memory of K**l
// words split into K banks (bank = node % K, address = node / K), so the K children of a
// node -- one row -- are read in one cycle. One level per L pipeline cycles (below).
//
// Operations (one group of P lanes per s_valid/s_ready handshake; per lane s_op):
//   OP_NOP         (0) lane unused.
//   OP_UPDATE      (1) insert or update: leaf s_index[IDX_W-1:0] := s_data[W-1:0]; every
//                      ancestor is recomputed from its children as ceil(sum / K)
//                      (FixedPoint.combine). s_index must be < K**D (upper bits ignored).
//   OP_SAMPLE      (2) descend with the 32-bit fraction s_data (already stratified by the
//                      host, e.g. formats.stratify_bits) as in sumtree._descend_fixed.
//   OP_SAMPLE_LFSR (3) the lane's xorshift32 generator (a GF(2) linear-feedback generator)
//                      draws r = xorshift32(state); state := r. With stride = s_data != 0
//                      the fraction is s_index * stride + mulhi(r, stride), which is
//                      formats.stratify_bits for batch size B when stride = (2**32-1) // B
//                      and s_index is the sample's position in its batch; stride = 0 uses r
//                      unchanged (i.i.d.). r is returned on m_rand so the host can replay it.
//
// Ordering rule (identical to the reference's sequential semantics): operations take
// effect in issue order -- groups in handshake order, lanes 0..P-1 within a group. So
// duplicate indices: the last update wins; a sample sees exactly the updates issued before
// it and none after. Hazards are resolved in hardware:
//   * update after update: forwarding (the one word per level that the read could not
//     see yet, plus lower lanes of the same group), never a stall;
//   * sample after update: the sample reads the root register (its first use of the tree)
//     only after the last update wrote it, and every level after that update wrote it;
//     with L = 1 + log2(K)/LPS cycles per level and M1 = MUL_REGS, that is
//     max(0, L*D - 2 - M1) bubble cycles;
//   * update after sample: the update waits until every earlier sample has issued its
//     read of the leaf level (the levels' read ports are shared):
//     2 + M1 + M2 + L*(D-1) bubble cycles, M2 = max(0, MUL_REGS-1);
//   * a group that mixes updates and samples is split into same-kind runs, in lane order.
// Same-kind streams run at one operation per cycle per lane. There is no relaxed mode.
//
// Pipelining: each level takes L cycles (hrl_descend_step / hrl_update_step with a
// register after every LPS adder levels); the stratification products and frac x root
// are followed by MUL_REGS registers (hrl_mul_pipe). LPS > log2(K) with MUL_REGS = 0 is the
// former one-cycle-per-level pipeline.
// Latency from the s handshake: an update is visible to later samples L*D + 2 cycles after
// it (upd_commit pulses then); a sample's result appears on m_* 4 + M1 + M2 + L*D cycles
// after it (defaults LPS = 2, MUL_REGS = 3: L*D + 2 and L*D + 9; L = 2 for K = 4, 8,
// 3 for K = 16, 32, 4 for K = 64).
//
// Reset (synchronous, active high) clears the tree: the root at once, the level memories
// by a sweep of K**(D-1) cycles after rst falls (clearing = 1, s_ready = 0 meanwhile) and
// reloads the lane generators from lfsr_seed (lane p: lfsr_seed ^ p*0x9E3779B9, 1 if 0).
//
// Debug read (for testbenches and host readback; only while idle): dbg_level/dbg_row
// select one row of K words (level 0: the root in word 0); dbg_rdata is valid the cycle
// after the handshake, with dbg_rvalid. One request per cycle.
`default_nettype none

module hrl_rmm #(
    // Fanout K: children per node, a power of two in [2, 64].
    parameter K = 4,
    // Depth D: levels below the root; capacity K**D leaves; D*log2(K) <= 32.
    parameter D = 4,
    // Lanes P: operations accepted per cycle (one group), 1..16.
    parameter P = 1,
    // Word width W at every level, 8..32 (FixedPoint.word_bits).
    parameter W = 32,
    // Pipelining: adder levels per register stage inside a level's step (>= 1; a level
    // takes 1 + log2(K)/LPS cycles; LPS > log2(K) gives one cycle per level) ...
    parameter LPS = 2,
    // ... and registers after each fraction multiplier (>= 0).
    parameter MUL_REGS = 3
) (
    input  wire            clk,
    input  wire            rst,
    input  wire [31:0]     lfsr_seed,

    input  wire            s_valid,
    output wire            s_ready,
    input  wire [2*P-1:0]  s_op,
    input  wire [32*P-1:0] s_index,
    input  wire [32*P-1:0] s_data,

    output wire            m_valid,
    input  wire            m_ready,
    output wire [P-1:0]    m_lane_valid,
    output wire [32*P-1:0] m_index,
    output wire [32*P-1:0] m_rand,

    output wire [P-1:0]    upd_commit,

    input  wire            dbg_valid,
    output wire            dbg_ready,
    input  wire [7:0]      dbg_level,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [31:0]     dbg_row,      // 32 bits for the host; rows need (D-1)*log2(K)
    /* verilator lint_on UNUSEDSIGNAL */
    output reg             dbg_rvalid,
    output reg  [K*W-1:0]  dbg_rdata,

    output wire            idle,
    output reg             clearing
);

    // Opcodes; OP_SAMPLE (2'd2) is every other value: a sample with a host fraction.
    localparam [1:0] OP_NOP = 2'd0, OP_UPDATE = 2'd1, OP_SAMPLE_LFSR = 2'd3;
    localparam S = $clog2(K);
    localparam IDX_W = D * S;
    localparam NODE_W = IDX_W + 1;                 // node index plus a zero row bit at level 1
    localparam AW = (D > 1) ? (D - 1) * S : 1;     // bank address (row) width

    initial begin
        if (K < 2 || K > 64 || (K & (K - 1)) != 0)
            $fatal(1, "%m: K=%0d must be a power of two in [2, 64]", K);
        if (D < 1 || D * S > 32)
            $fatal(1, "%m: D=%0d must be >= 1 with D*log2(K) <= 32 (K=%0d)", D, K);
        if (P < 1 || P > 16)
            $fatal(1, "%m: P=%0d must be in [1, 16]", P);
        if (W < 8 || W > 32)
            $fatal(1, "%m: W=%0d must be in [8, 32]", W);
        if (LPS < 1)
            $fatal(1, "%m: LPS=%0d must be >= 1", LPS);
        if (MUL_REGS < 0)
            $fatal(1, "%m: MUL_REGS=%0d must be >= 0", MUL_REGS);
    end

    // ------------------------------------------------------------------ pipeline shape
    // STG cycles per level for both kinds (the steps' register stages: 1 + log2(K)/LPS);
    // M1 registers after the stratification multipliers, M2 after frac x root (the last
    // register of that product is the level-1 entry register itself).
    localparam STG = 1 + S / LPS;
    localparam M1 = MUL_REGS;
    localparam M2 = (MUL_REGS > 0) ? MUL_REGS - 1 : 0;
    // Update positions (cycles after issue) 1..NPU: level l occupies AU(l)..AU(l)+STG-1
    // with AU(l) = 1 + STG*(D-l); NPU is the commit cycle (root visible).
    localparam NPU = STG * D + 1;
    // Sample positions 1..NPS: 1 draw (S_A), 2..1+M1 stratification product, 2+M1 fraction
    // (S_B), then M2 root-product registers, level l from 3 + M1 + M2 + STG*(l-1); NPS
    // pushes the result into the FIFO.
    localparam NPS = 2 + M1 + M2 + STG * D;
    // Hazard windows in positions: a sample may not issue while an update is at 1..GUS-1,
    // an update not while a sample is at 1..GSU-1 (see the header).
    localparam GUS = STG * D - 1 - M1;
    localparam GSU = 3 + M1 + M2 + STG * (D - 1);
    localparam FIFO_AW = $clog2(NPS + 2);          // room for every sample in flight
    localparam FIFO_W = P + P * IDX_W + P * 32;
    localparam CW = $clog2(NPS + 2) + 1;           // width of the in-flight sample count

    // ------------------------------------------------------------------ state
    reg [W-1:0] root;
    reg [AW-1:0] clr_addr;
    reg [32*P-1:0] lfsr;

    reg            hold_v;
    reg [2*P-1:0]  hold_op;
    reg [32*P-1:0] hold_idx;
    reg [32*P-1:0] hold_data;
    reg [P-1:0]    hold_pend;

    // Update pipeline: valid bit and leaf index at every position (index (a-1)*P + lane);
    // at each level's entry the new word of the lane's level-l node (u_val) and, one cycle
    // later, the same word again for the group behind to forward (u_fval).
    reg [NPU*P-1:0]       u_v;
    reg [NPU*P*IDX_W-1:0] u_idx;
    reg [D*P*W-1:0]       u_val;
    reg [D*P*W-1:0]       u_fval;

    // Sample pipeline: valid bit at every position; S_A registers; S_B registers; the
    // entry registers of level l (t, the low product word with the digits, node, random).
    reg [NPS*P-1:0] s_v;
    reg [P-1:0]    sa_lfsr;
    reg [32*P-1:0] sa_rand, sa_i, sa_stride;
    reg [32*P-1:0] sb_frac, sb_rand;
    reg [D*P*W-1:0]     sl_t;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [D*P*32-1:0]    sl_low;   // digits below level D*log2(K) are never used
    /* verilator lint_on UNUSEDSIGNAL */
    reg [D*P*IDX_W-1:0] sl_node;  // the node whose row this level reads
    reg [D*P*32-1:0]    sl_rand;
    reg [CW-1:0] smp_groups;      // sample groups at positions 1..NPS

    // ------------------------------------------------------------------ memories
    wire [D*K*P*W-1:0]  bank_rdata;
    reg  [D*K*P-1:0]    bank_we;
    reg  [D*K*P*AW-1:0] bank_waddr;
    reg  [D*K*P*W-1:0]  bank_wdata;
    reg  [D*P*AW-1:0]   rd_row;      // per level and port: the row all K banks read
    wire [D*P*K*W-1:0]  row_rd;      // per level and port: the K words read

    genvar gl, gb, gp;
    generate
        for (gl = 1; gl <= D; gl = gl + 1) begin : g_level
            for (gb = 0; gb < K; gb = gb + 1) begin : g_bank
                wire [P*AW-1:0] raddr;
                for (gp = 0; gp < P; gp = gp + 1) begin : g_port
                    assign raddr[gp*AW +: AW] = rd_row[((gl-1)*P+gp)*AW +: AW];
                    assign row_rd[(((gl-1)*P+gp)*K+gb)*W +: W] =
                        bank_rdata[(((gl-1)*K+gb)*P+gp)*W +: W];
                end
                hrl_ram #(
                    .DEPTH(1 << ((gl - 1) * S)), .AW(AW), .W(W), .NW(P), .NR(P)
                ) ram_inst (
                    .clk(clk),
                    .we(bank_we[((gl-1)*K+gb)*P +: P]),
                    .waddr(bank_waddr[((gl-1)*K+gb)*P*AW +: P*AW]),
                    .wdata(bank_wdata[((gl-1)*K+gb)*P*W +: P*W]),
                    .raddr(raddr),
                    .rdata(bank_rdata[((gl-1)*K+gb)*P*W +: P*W])
                );
            end
        end
    endgenerate

    // ------------------------------------------------------------------ issue
    reg [P-1:0] run;       // lanes issued this cycle: the first same-kind run of pending lanes
    reg run_found, run_upd, run_stop, lane_upd;
    integer ip;
    always @* begin
        run = {P{1'b0}};
        run_found = 1'b0;
        run_upd = 1'b0;
        run_stop = 1'b0;
        lane_upd = 1'b0;
        for (ip = 0; ip < P; ip = ip + 1) begin
            lane_upd = hold_op[2*ip +: 2] == OP_UPDATE;
            if (hold_pend[ip] && !run_stop) begin
                if (!run_found) begin
                    run_found = 1'b1;
                    run_upd = lane_upd;
                    run[ip] = 1'b1;
                end else if (lane_upd == run_upd) begin
                    run[ip] = 1'b1;
                end else begin
                    run_stop = 1'b1;
                end
            end
        end
    end

    // ------------------------------------------------------------------ datapath steps
    wire [(D+1)*P*W-1:0] upd_parent;   // level l, lane p: new word of the level l-1 ancestor
    wire [(D+1)*P*S-1:0] smp_child;    // level l, lane p: chosen child
    wire [(D+1)*P*W-1:0] smp_tnext;    // level l, lane p: remainder for the next level
    // The sample's node, low word and random at the last cycle of level l.
    wire [(D+1)*P*IDX_W-1:0] smp_node_d;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [(D+1)*P*32-1:0]    smp_low_d;
    /* verilator lint_on UNUSEDSIGNAL */
    wire [(D+1)*P*32-1:0]    smp_rand_d;

    generate
        for (gl = 1; gl <= D; gl = gl + 1) begin : g_step
            localparam integer AU = 1 + STG * (D - gl);   // update entry position of level gl
            // Cycle of the level's read: the group one ahead is at AU (its valid bits and
            // level-gl nodes), this group one position before (or in the hold register).
            wire [P*NODE_W-1:0] prev_node, cur_node;
            wire [P-1:0] cur_valid;
            for (gp = 0; gp < P; gp = gp + 1) begin : g_node
                assign prev_node[gp*NODE_W +: NODE_W] =
                    {1'b0, u_idx[((AU-1)*P+gp)*IDX_W +: IDX_W] >> (S*(D-gl))};
                if (gl == D) begin : g_hold
                    assign cur_node[gp*NODE_W +: NODE_W] = {1'b0, hold_idx[gp*32 +: IDX_W]};
                    assign cur_valid[gp] = run[gp] && run_upd;
                end else begin : g_pipe
                    assign cur_node[gp*NODE_W +: NODE_W] =
                        {1'b0, u_idx[((AU-2)*P+gp)*IDX_W +: IDX_W] >> (S*(D-gl))};
                    assign cur_valid[gp] = u_v[(AU-2)*P+gp];
                end
            end
            for (gp = 0; gp < P; gp = gp + 1) begin : g_lane
                hrl_update_step #(
                    .K(K), .W(W), .P(P), .LANE(gp), .NW(NODE_W), .LPS(LPS)
                ) upd_inst (
                    .clk(clk),
                    .pre_prev_valid(u_v[(AU-1)*P +: P]),
                    .pre_prev_node(prev_node),
                    .pre_cur_valid(cur_valid),
                    .pre_cur_node(cur_node),
                    .mem_row(row_rd[((gl-1)*P+gp)*K*W +: K*W]),
                    .prev_word(u_fval[(gl-1)*P*W +: P*W]),
                    .cur_word(u_val[(gl-1)*P*W +: P*W]),
                    .parent(upd_parent[(gl*P+gp)*W +: W])
                );
                hrl_descend_step #(
                    .K(K), .W(W), .LPS(LPS)
                ) desc_inst (
                    .clk(clk),
                    .row(row_rd[((gl-1)*P+gp)*K*W +: K*W]),
                    .t(sl_t[((gl-1)*P+gp)*W +: W]),
                    .digit(sl_low[((gl-1)*P+gp)*32 + 32 - gl*S +: S]),
                    .child(smp_child[(gl*P+gp)*S +: S]),
                    .t_next(smp_tnext[(gl*P+gp)*W +: W])
                );
                hrl_delay #(.W(IDX_W + 64), .N(STG - 1)) side_inst (
                    .clk(clk),
                    .d({sl_node[((gl-1)*P+gp)*IDX_W +: IDX_W], sl_low[((gl-1)*P+gp)*32 +: 32],
                        sl_rand[((gl-1)*P+gp)*32 +: 32]}),
                    .q({smp_node_d[(gl*P+gp)*IDX_W +: IDX_W], smp_low_d[(gl*P+gp)*32 +: 32],
                        smp_rand_d[(gl*P+gp)*32 +: 32]})
                );
            end
        end
    endgenerate
    // Level-0 slots of the step outputs exist only to keep the indexing uniform.
    assign upd_parent[P*W-1:0] = {P*W{1'b0}};
    assign smp_child[P*S-1:0] = {P*S{1'b0}};
    assign smp_tnext[P*W-1:0] = {P*W{1'b0}};
    assign smp_node_d[P*IDX_W-1:0] = {P*IDX_W{1'b0}};
    assign smp_low_d[P*32-1:0] = {P*32{1'b0}};
    assign smp_rand_d[P*32-1:0] = {P*32{1'b0}};

    // Hazard windows (see the header): a sample may not issue while an update is at
    // positions 1..GUS-1, an update not while a sample is at positions 1..GSU-1.
    reg upd_blocks_smp, smp_blocks_upd;
    integer hl;
    always @* begin
        upd_blocks_smp = 1'b0;
        for (hl = 1; hl < GUS; hl = hl + 1)
            upd_blocks_smp = upd_blocks_smp | (|u_v[(hl-1)*P +: P]);
        smp_blocks_upd = 1'b0;
        for (hl = 1; hl < GSU; hl = hl + 1)
            smp_blocks_upd = smp_blocks_upd | (|s_v[(hl-1)*P +: P]);
    end

    wire [FIFO_AW:0] fifo_count;
    wire credit_ok = ({{(CW-FIFO_AW-1){1'b0}}, fifo_count} + smp_groups) < (1 << FIFO_AW);
    wire can_issue = hold_v && run_found && !clearing &&
        (run_upd ? !smp_blocks_upd : (!upd_blocks_smp && credit_ok));
    wire issue_upd = can_issue && run_upd;
    wire issue_smp = can_issue && !run_upd;
    wire hold_done = hold_v && (!run_found || (can_issue && run == hold_pend));
    wire s_fire = s_valid && s_ready;
    wire any_inflight = (|u_v) || (|s_v);
    wire smp_out = |s_v[(NPS-1)*P +: P];   // a sample group leaves for the FIFO

    assign s_ready = !clearing && (!hold_v || hold_done);
    assign idle = !clearing && !hold_v && !any_inflight;
    assign dbg_ready = idle;
    wire dbg_fire = dbg_valid && dbg_ready;
    assign upd_commit = u_v[(NPU-1)*P +: P];

    // xorshift32 of every lane's state (the word drawn if the lane samples from the LFSR).
    reg [32*P-1:0] lfsr_next;
    reg [31:0] x;
    integer xp;
    always @* begin
        for (xp = 0; xp < P; xp = xp + 1) begin
            x = lfsr[xp*32 +: 32];
            x = x ^ (x << 13);
            x = x ^ (x >> 17);
            x = x ^ (x << 5);
            lfsr_next[xp*32 +: 32] = x;
        end
    end

    // S_A -> S_B: the 32-bit fraction (stratify_bits in LFSR mode), products pipelined
    // by M1 registers: i*stride + mulhi(r, stride), or r itself.
    wire [32*P-1:0] frac;
    wire [32*P-1:0] sa_rand_d;
    wire [P-1:0]    sa_strat_d;
    // S_B -> level 1: t = mulhi(frac, root) and the low word that carries the digits.
    wire [64*P-1:0] root_prod;
    wire [32*P-1:0] sb_rand_d;
    generate
        for (gp = 0; gp < P; gp = gp + 1) begin : g_frac
            /* verilator lint_off UNUSEDSIGNAL */
            wire [63:0] prod_hi;    // mulhi: only the high word is used
            /* verilator lint_on UNUSEDSIGNAL */
            wire [31:0] prod_lo;    // i * stride, uint32 as in stratify_bits
            hrl_mul_pipe #(.AW(32), .BW(32), .PW(64), .N(M1)) hi_inst (
                .clk(clk), .a(sa_rand[gp*32 +: 32]), .b(sa_stride[gp*32 +: 32]), .p(prod_hi));
            hrl_mul_pipe #(.AW(32), .BW(32), .PW(32), .N(M1)) lo_inst (
                .clk(clk), .a(sa_i[gp*32 +: 32]), .b(sa_stride[gp*32 +: 32]), .p(prod_lo));
            hrl_delay #(.W(33), .N(M1)) side_inst (
                .clk(clk),
                .d({sa_lfsr[gp] && sa_stride[gp*32 +: 32] != 32'd0, sa_rand[gp*32 +: 32]}),
                .q({sa_strat_d[gp], sa_rand_d[gp*32 +: 32]}));
            assign frac[gp*32 +: 32] = sa_strat_d[gp] ? prod_lo + prod_hi[63:32]
                                                      : sa_rand_d[gp*32 +: 32];
            hrl_mul_pipe #(.AW(32), .BW(W), .PW(64), .N(M2)) root_inst (
                .clk(clk), .a(sb_frac[gp*32 +: 32]), .b(root), .p(root_prod[gp*64 +: 64]));
            hrl_delay #(.W(32), .N(M2)) sb_side_inst (
                .clk(clk), .d(sb_rand[gp*32 +: 32]), .q(sb_rand_d[gp*32 +: 32]));
        end
    endgenerate

    // Level l, last cycle: next node {node_{l-1}, child_l} = node_l.
    reg [D*P*IDX_W-1:0] next_node;   // index ((l-1)*P + lane)
    reg [IDX_W-1:0] nn_tmp;
    integer nl, np_;
    always @* begin
        nn_tmp = {IDX_W{1'b0}};
        for (nl = 1; nl <= D; nl = nl + 1)
            for (np_ = 0; np_ < P; np_ = np_ + 1) begin
                nn_tmp = smp_node_d[(nl*P+np_)*IDX_W +: IDX_W] << S;
                nn_tmp[S-1:0] = smp_child[(nl*P+np_)*S +: S];
                next_node[((nl-1)*P+np_)*IDX_W +: IDX_W] = nn_tmp;
            end
    end

    // ------------------------------------------------------------------ memory ports
    // Shifted node indices; only their low AW bits address a bank.
    /* verilator lint_off UNUSEDSIGNAL */
    reg [IDX_W-1:0] idx_tmp;
    reg [IDX_W-1:0] node_tmp, row_tmp;
    /* verilator lint_on UNUSEDSIGNAL */
    integer ml, mb, mp, au_rd, au_wr, sn;
    always @* begin
        rd_row = {D*P*AW{1'b0}};
        idx_tmp = {IDX_W{1'b0}};
        node_tmp = {IDX_W{1'b0}};
        row_tmp = {IDX_W{1'b0}};
        for (ml = 1; ml <= D; ml = ml + 1) begin
            // The update that reads level ml this cycle is at position AU(ml)-1 (the last
            // cycle of level ml+1); the one that writes it at AU(ml); the sample that reads
            // it ends level ml-1 this cycle (next_node index (ml-2)*P + lane), clamped so that
            // unused branches index inside the vectors.
            au_wr = 1 + STG * (D - ml);
            au_rd = (ml < D) ? au_wr - 1 : 1;
            sn = (ml >= 2) ? ml - 2 : 0;
            for (mp = 0; mp < P; mp = mp + 1) begin
                // Read: port 0 serves the debug reader while idle.
                if (ml == D && issue_upd && run[mp]) begin
                    idx_tmp = hold_idx[mp*32 +: IDX_W] >> S;
                    rd_row[((ml-1)*P+mp)*AW +: AW] = idx_tmp[AW-1:0];
                end else if (ml < D && u_v[(au_rd-1)*P+mp]) begin
                    idx_tmp = u_idx[((au_rd-1)*P+mp)*IDX_W +: IDX_W] >> (S*(D-ml+1));
                    rd_row[((ml-1)*P+mp)*AW +: AW] = idx_tmp[AW-1:0];
                end else if (ml >= 2) begin
                    idx_tmp = next_node[(sn*P+mp)*IDX_W +: IDX_W];
                    rd_row[((ml-1)*P+mp)*AW +: AW] = idx_tmp[AW-1:0];
                end
                if (mp == 0 && dbg_fire && dbg_level == ml[7:0])
                    rd_row[((ml-1)*P)*AW +: AW] = dbg_row[AW-1:0];
                // Write: the update entering level ml stores its level-ml word.
                node_tmp = u_idx[((au_wr-1)*P+mp)*IDX_W +: IDX_W] >> (S*(D-ml));
                row_tmp = node_tmp >> S;
                for (mb = 0; mb < K; mb = mb + 1) begin
                    bank_we[((ml-1)*K+mb)*P+mp] = 1'b0;
                    bank_waddr[(((ml-1)*K+mb)*P+mp)*AW +: AW] = {AW{1'b0}};
                    bank_wdata[(((ml-1)*K+mb)*P+mp)*W +: W] = {W{1'b0}};
                    if (clearing) begin
                        if (mp == 0 && {1'b0, clr_addr} < (1 << ((ml-1)*S)))
                            bank_we[((ml-1)*K+mb)*P] = 1'b1;
                        bank_waddr[(((ml-1)*K+mb)*P+mp)*AW +: AW] = clr_addr;
                    end else begin
                        bank_we[((ml-1)*K+mb)*P+mp] =
                            u_v[(au_wr-1)*P+mp] && node_tmp[S-1:0] == mb[S-1:0];
                        bank_waddr[(((ml-1)*K+mb)*P+mp)*AW +: AW] = row_tmp[AW-1:0];
                        bank_wdata[(((ml-1)*K+mb)*P+mp)*W +: W] = u_val[((ml-1)*P+mp)*W +: W];
                    end
                end
            end
        end
    end

    // ------------------------------------------------------------------ pipeline
    reg [7:0] dbg_level_q;
    integer pl, pp, pa;
    always @(posedge clk) begin
        // Update pipeline: position 1 <- issue; position a <- a-1. Level D's word from the
        // hold register, level l's from the step of level l+1 (its last cycle).
        for (pp = 0; pp < P; pp = pp + 1) begin
            u_v[pp] <= issue_upd && run[pp];
            u_idx[pp*IDX_W +: IDX_W] <= hold_idx[pp*32 +: IDX_W];
            for (pa = 2; pa <= NPU; pa = pa + 1) begin
                u_v[(pa-1)*P+pp] <= u_v[(pa-2)*P+pp];
                u_idx[((pa-1)*P+pp)*IDX_W +: IDX_W] <= u_idx[((pa-2)*P+pp)*IDX_W +: IDX_W];
            end
            u_val[((D-1)*P+pp)*W +: W] <= hold_data[pp*32 +: W];
            for (pl = 1; pl < D; pl = pl + 1)
                u_val[((pl-1)*P+pp)*W +: W] <= upd_parent[((pl+1)*P+pp)*W +: W];
            u_fval <= u_val;
            // The last lane of a group holds the newest root (it saw all lower lanes).
            if (u_v[(NPU-2)*P+pp]) root <= upd_parent[(P+pp)*W +: W];
        end

        // Sample pipeline.
        for (pp = 0; pp < P; pp = pp + 1) begin
            s_v[pp] <= issue_smp && run[pp];
            for (pa = 2; pa <= NPS; pa = pa + 1)
                s_v[(pa-1)*P+pp] <= s_v[(pa-2)*P+pp];
            sa_lfsr[pp] <= hold_op[2*pp +: 2] == OP_SAMPLE_LFSR;
            sa_rand[pp*32 +: 32] <= (hold_op[2*pp +: 2] == OP_SAMPLE_LFSR)
                ? lfsr_next[pp*32 +: 32] : hold_data[pp*32 +: 32];
            sa_i[pp*32 +: 32] <= hold_idx[pp*32 +: 32];
            sa_stride[pp*32 +: 32] <= hold_data[pp*32 +: 32];
            if (issue_smp && run[pp] && hold_op[2*pp +: 2] == OP_SAMPLE_LFSR)
                lfsr[pp*32 +: 32] <= lfsr_next[pp*32 +: 32];

            sb_frac[pp*32 +: 32] <= frac[pp*32 +: 32];
            sb_rand[pp*32 +: 32] <= sa_rand_d[pp*32 +: 32];

            // Level 1 entry: t = mulhi(frac, root), low word carries the digits.
            sl_t[pp*W +: W] <= root_prod[pp*64 + 32 +: W];
            sl_low[pp*32 +: 32] <= root_prod[pp*64 +: 32];
            sl_node[pp*IDX_W +: IDX_W] <= {IDX_W{1'b0}};
            sl_rand[pp*32 +: 32] <= sb_rand_d[pp*32 +: 32];

            for (pl = 2; pl <= D; pl = pl + 1) begin
                sl_t[((pl-1)*P+pp)*W +: W] <= smp_tnext[((pl-1)*P+pp)*W +: W];
                sl_low[((pl-1)*P+pp)*32 +: 32] <= smp_low_d[((pl-1)*P+pp)*32 +: 32];
                sl_node[((pl-1)*P+pp)*IDX_W +: IDX_W] <= next_node[((pl-2)*P+pp)*IDX_W +: IDX_W];
                sl_rand[((pl-1)*P+pp)*32 +: 32] <= smp_rand_d[((pl-1)*P+pp)*32 +: 32];
            end
        end
        smp_groups <= smp_groups + {{(CW-1){1'b0}}, issue_smp} - {{(CW-1){1'b0}}, smp_out};

        // Input holding register.
        if (s_fire) begin
            hold_v <= 1'b1;
            hold_op <= s_op;
            hold_idx <= s_index;
            hold_data <= s_data;
            for (pp = 0; pp < P; pp = pp + 1)
                hold_pend[pp] <= s_op[2*pp +: 2] != OP_NOP;
        end else if (hold_done) begin
            hold_v <= 1'b0;
        end else if (can_issue) begin
            hold_pend <= hold_pend & ~run;
        end

        // Clear sweep.
        if (clearing) begin
            clr_addr <= clr_addr + 1'b1;
            if ({1'b0, clr_addr} == (1 << ((D-1)*S)) - 1) clearing <= 1'b0;
        end

        dbg_rvalid <= dbg_fire;
        if (dbg_fire) dbg_level_q <= dbg_level;

        if (rst) begin
            u_v <= {NPU*P{1'b0}};
            s_v <= {NPS*P{1'b0}};
            smp_groups <= {CW{1'b0}};
            hold_v <= 1'b0;
            hold_pend <= {P{1'b0}};
            root <= {W{1'b0}};
            clearing <= 1'b1;
            clr_addr <= {AW{1'b0}};
            dbg_rvalid <= 1'b0;
            dbg_level_q <= 8'd0;
            for (pp = 0; pp < P; pp = pp + 1) begin
                if ((lfsr_seed ^ (pp * 32'h9E3779B9)) == 32'd0)
                    lfsr[pp*32 +: 32] <= 32'd1;
                else
                    lfsr[pp*32 +: 32] <= lfsr_seed ^ (pp * 32'h9E3779B9);
            end
        end
    end

    // Debug read data: the row read on port 0 of the requested level.
    integer dl;
    always @* begin
        dbg_rdata = {K*W{1'b0}};
        if (dbg_level_q == 8'd0)
            dbg_rdata[W-1:0] = root;
        for (dl = 1; dl <= D; dl = dl + 1)
            if (dbg_level_q == dl[7:0])
                dbg_rdata = row_rd[((dl-1)*P)*K*W +: K*W];
    end

    // ------------------------------------------------------------------ results
    reg [FIFO_W-1:0] fifo_in;
    integer op;
    always @* begin
        fifo_in = {FIFO_W{1'b0}};
        for (op = 0; op < P; op = op + 1) begin
            // Idle lanes carry zeros, not stale data.
            fifo_in[op] = s_v[(NPS-1)*P+op];
            if (s_v[(NPS-1)*P+op]) begin
                fifo_in[P + op*IDX_W +: IDX_W] = next_node[((D-1)*P+op)*IDX_W +: IDX_W];
                fifo_in[P + P*IDX_W + op*32 +: 32] = smp_rand_d[(D*P+op)*32 +: 32];
            end
        end
    end

    wire [FIFO_W-1:0] fifo_out;
    /* verilator lint_off UNUSEDSIGNAL */
    wire fifo_s_ready;  // never low: samples issue only with a free FIFO slot (credit_ok)
    /* verilator lint_on UNUSEDSIGNAL */
    hrl_fifo #(.AW(FIFO_AW), .W(FIFO_W)) out_fifo_inst (
        .clk(clk),
        .rst(rst),
        .s_valid(smp_out),
        .s_ready(fifo_s_ready),
        .s_data(fifo_in),
        .m_valid(m_valid),
        .m_ready(m_ready),
        .m_data(fifo_out),
        .count(fifo_count)
    );

    reg [32*P-1:0] m_index_ext;   // leaf indices zero-extended to 32 bits
    integer eo;
    always @* begin
        m_index_ext = {32*P{1'b0}};
        for (eo = 0; eo < P; eo = eo + 1)
            m_index_ext[eo*32 +: IDX_W] = fifo_out[P + eo*IDX_W +: IDX_W];
    end
    assign m_index = m_index_ext;
    assign m_rand = fifo_out[P + P*IDX_W +: 32*P];
    assign m_lane_valid = fifo_out[P-1:0];

endmodule

`default_nettype wire
