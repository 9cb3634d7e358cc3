// hrl_rmm_kernel: the replay manager (hrl_rmm) as a Xilinx XRT/Vitis RTL kernel.
//
// Control: AXI4-Lite slave s_axi_control with the ap_ctrl_hs protocol that XRT drives, held
// by hrl_axil_ctrl (the register map below is also in fpga_rtl/vitis/kernel.xml and
// fpga_rtl/README.md):
//
//   0x00 control  bit0 ap_start (host writes 1; cleared by the kernel at ap_done)
//                 bit1 ap_done  (clear on read)   bit2 ap_idle   bit3 ap_ready (clear on read)
//                 bit7 auto_restart: not supported, reads 0
//   0x04 GIE      bit0 global interrupt enable
//   0x08 IER      bit0 done interrupt enable, bit1 ready interrupt enable
//   0x0c ISR      bit0 done, bit1 ready (toggle on write)
//   0x10 command  0 UPDATE, 1 SAMPLE (host fractions), 2 SAMPLE_LFSR (stratified),
//                 3 SAMPLE_LFSR_IID, 4 READ_TREE, 5 CLEAR
//   0x18 count    UPDATE: items; SAMPLE*: samples; READ_TREE: rows
//   0x20 level    READ_TREE: tree level (0 = root)
//   0x28 row      READ_TREE: first row
//   0x30 seed     CLEAR: the LFSR seed (hrl_rmm lfsr_seed)
//   0x38 indices  64-bit address (lo, hi at 0x3c): UPDATE leaf indices, count x u32
//   0x40 words    64-bit address (0x44): UPDATE leaf words, count x u32 (low W bits)
//   0x48 randoms  64-bit address (0x4c): SAMPLE fractions, count x u32
//   0x50 results  64-bit address (0x54): SAMPLE*: count x {u32 index, u32 random word};
//                 READ_TREE: count x K x u32 (the rows' words, zero-extended)
//   0x60 cycles   read only: clock cycles of the last run, ap_start seen to ap_done
//   0x64 root     read only: the root word after the last run (the host's "total")
//   0x68 config   read only: K [7:0], D [15:8], P [23:16], W [31:24]
//
// Commands (one per ap_start; each ends with every effect visible: updates committed,
// results written and acknowledged by the memory, the root latched at 0x64):
//   UPDATE          streams indices (m_axi_gmem0) and words (m_axi_gmem1) at once and
//                   issues `count` updates in order: the last of duplicate indices wins.
//   SAMPLE          streams `count` host fractions (formats.stratify_bits already applied
//                   by the host when stratified) into the tree.
//   SAMPLE_LFSR     `count` stratified samples from the lanes' generators:
//                   stride = (2**32-1) // count (a 32-cycle divider), sample i in stratum i.
//   SAMPLE_LFSR_IID `count` samples from the generators with i.i.d. fractions.
//   READ_TREE       `count` rows of K words of level `level` from row `row` (debug port).
//   CLEAR           resets the tree (every word 0; a sweep of K**(D-1) cycles) and loads
//                   the generators from `seed`.
// Items are packed P per group (lane order = batch order), so a P-lane tree sees exactly
// the host's order; result words go to memory in the same order.
//
// Memory: two AXI4 masters of C_M_AXI_GMEM_DATA_WIDTH bits (default 512, what Alveo memory
// controllers offer): m_axi_gmem0 reads the indices and writes the results, m_axi_gmem1
// reads the words and the randoms. Beats are cut into groups of P words (and result words
// packed into beats) by hrl_beats_to_words / hrl_words_to_beats, so one group of P items
// enters the tree per cycle for P <= DW/32 (UPDATE, SAMPLE) and results leave at full rate
// for P <= DW/64.
//
// The host must not change the argument registers while the kernel runs; count must be
// < 2**31 (SAMPLE*) and count*K < 2**32 (READ_TREE); buffer addresses must be aligned to
// DW/8 bytes (XRT aligns buffers to 4 KiB).
`default_nettype none

module hrl_rmm_kernel #(
    // Fanout K of the tree (power of two, 2..64), see hrl_rmm.
    parameter K = 4,
    // Depth D: levels below the root, capacity K**D leaves.
    parameter D = 4,
    // Lanes P of the tree (1..16).
    parameter P = 1,
    // Word width W (8..32).
    parameter W = 32,
    // AXI4-Lite control address bits (Vitis: large enough for the register map).
    parameter C_S_AXI_CONTROL_ADDR_WIDTH = 7,
    // AXI4 master address bits (Vitis: 64).
    parameter C_M_AXI_GMEM_ADDR_WIDTH = 64,
    // AXI4 master data bits of both ports (32..512; Alveo memory controllers: 512).
    parameter C_M_AXI_GMEM_DATA_WIDTH = 512
) (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    /* verilator lint_off SYMRSVDWORD */
    output wire        interrupt,   // the name Vitis expects
    /* verilator lint_on SYMRSVDWORD */

    input  wire [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_awaddr,
    input  wire        s_axi_control_awvalid,
    output wire        s_axi_control_awready,
    input  wire [31:0] s_axi_control_wdata,
    input  wire [3:0]  s_axi_control_wstrb,
    input  wire        s_axi_control_wvalid,
    output wire        s_axi_control_wready,
    output wire [1:0]  s_axi_control_bresp,
    output wire        s_axi_control_bvalid,
    input  wire        s_axi_control_bready,
    input  wire [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_araddr,
    input  wire        s_axi_control_arvalid,
    output wire        s_axi_control_arready,
    output wire [31:0] s_axi_control_rdata,
    output wire [1:0]  s_axi_control_rresp,
    output wire        s_axi_control_rvalid,
    input  wire        s_axi_control_rready,

    // m_axi_gmem0: indices in (R), results out (W).
    output wire [0:0]  m_axi_gmem0_awid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem0_awaddr,
    output wire [7:0]  m_axi_gmem0_awlen,
    output wire [2:0]  m_axi_gmem0_awsize,
    output wire [1:0]  m_axi_gmem0_awburst,
    output wire        m_axi_gmem0_awvalid,
    input  wire        m_axi_gmem0_awready,
    output wire [C_M_AXI_GMEM_DATA_WIDTH-1:0] m_axi_gmem0_wdata,
    output wire [C_M_AXI_GMEM_DATA_WIDTH/8-1:0] m_axi_gmem0_wstrb,
    output wire        m_axi_gmem0_wlast,
    output wire        m_axi_gmem0_wvalid,
    input  wire        m_axi_gmem0_wready,
    input  wire [0:0]  m_axi_gmem0_bid,
    input  wire [1:0]  m_axi_gmem0_bresp,
    input  wire        m_axi_gmem0_bvalid,
    output wire        m_axi_gmem0_bready,
    output wire [0:0]  m_axi_gmem0_arid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem0_araddr,
    output wire [7:0]  m_axi_gmem0_arlen,
    output wire [2:0]  m_axi_gmem0_arsize,
    output wire [1:0]  m_axi_gmem0_arburst,
    output wire        m_axi_gmem0_arvalid,
    input  wire        m_axi_gmem0_arready,
    input  wire [0:0]  m_axi_gmem0_rid,
    input  wire [C_M_AXI_GMEM_DATA_WIDTH-1:0] m_axi_gmem0_rdata,
    input  wire [1:0]  m_axi_gmem0_rresp,
    input  wire        m_axi_gmem0_rlast,
    input  wire        m_axi_gmem0_rvalid,
    output wire        m_axi_gmem0_rready,
    // m_axi_gmem1: words / randoms in (R); read only.
    output wire [0:0]  m_axi_gmem1_arid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem1_araddr,
    output wire [7:0]  m_axi_gmem1_arlen,
    output wire [2:0]  m_axi_gmem1_arsize,
    output wire [1:0]  m_axi_gmem1_arburst,
    output wire        m_axi_gmem1_arvalid,
    input  wire        m_axi_gmem1_arready,
    input  wire [0:0]  m_axi_gmem1_rid,
    input  wire [C_M_AXI_GMEM_DATA_WIDTH-1:0] m_axi_gmem1_rdata,
    input  wire [1:0]  m_axi_gmem1_rresp,
    input  wire        m_axi_gmem1_rlast,
    input  wire        m_axi_gmem1_rvalid,
    output wire        m_axi_gmem1_rready
);

    localparam AA = C_S_AXI_CONTROL_ADDR_WIDTH;
    localparam GA = C_M_AXI_GMEM_ADDR_WIDTH;
    localparam [2:0] CMD_UPDATE = 3'd0, CMD_SAMPLE = 3'd1, CMD_SAMPLE_LFSR = 3'd2,
        CMD_SAMPLE_LFSR_IID = 3'd3, CMD_READ_TREE = 3'd4, CMD_CLEAR = 3'd5;
    localparam [1:0] OP_UPDATE = 2'd1, OP_SAMPLE = 2'd2, OP_SAMPLE_LFSR = 2'd3;
    localparam DW = C_M_AXI_GMEM_DATA_WIDTH;
    localparam NW = DW / 32;                 // words per beat
    localparam LOG_NW = $clog2(NW);
    localparam PW = $clog2(P + 1);           // bits of a lane count 0..P
    localparam GW = 2 * P;                   // result words per group (index, random word)
    localparam GWW = $clog2(GW + 1);
    localparam KW = (K > 1) ? $clog2(K) : 1;

    initial begin
        if (AA < 7 || AA > 16)
            $fatal(1, "%m: C_S_AXI_CONTROL_ADDR_WIDTH=%0d must be in [7, 16]", AA);
        if (GA < 32 || GA > 64)
            $fatal(1, "%m: C_M_AXI_GMEM_ADDR_WIDTH=%0d must be in [32, 64]", GA);
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: C_M_AXI_GMEM_DATA_WIDTH=%0d must be a power of two in [32, 512]",
                   DW);
    end

    wire rst = !ap_rst_n;

    // ------------------------------------------------------------------ registers
    // The control block (AXI4-Lite, ap_ctrl_hs, interrupts) and the argument registers;
    // word i of the map above is args[32 i +: 32], the read-only words come from ro.
    localparam [31:0] ARG_WORDS = 32'h003f_d550;   // 0x10 .. 0x54 (words 4..21)
    localparam [31:0] RO_WORDS = 32'h0700_0000;    // 0x60, 0x64, 0x68
    reg ap_idle_reg;
    wire ap_start_reg;
    reg [31:0] cycles_reg, root_reg;
    localparam [7:0] CFG_K = K[7:0], CFG_D = D[7:0], CFG_P = P[7:0], CFG_W = W[7:0];
    reg finish;   // the run ends this cycle (from the FSM)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [1023:0] args;   // the words of ARG_WORDS; the others are 0
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1023:0] ro = {160'd0, {CFG_W, CFG_P, CFG_D, CFG_K}, root_reg, cycles_reg, 768'd0};

    hrl_axil_ctrl #(.AA(AA), .WRITABLE(ARG_WORDS), .READ_ONLY(RO_WORDS)) ctrl_inst (
        .clk(ap_clk), .rst(rst),
        .s_axi_control_awaddr(s_axi_control_awaddr),
        .s_axi_control_awvalid(s_axi_control_awvalid),
        .s_axi_control_awready(s_axi_control_awready),
        .s_axi_control_wdata(s_axi_control_wdata),
        .s_axi_control_wstrb(s_axi_control_wstrb),
        .s_axi_control_wvalid(s_axi_control_wvalid),
        .s_axi_control_wready(s_axi_control_wready),
        .s_axi_control_bresp(s_axi_control_bresp),
        .s_axi_control_bvalid(s_axi_control_bvalid),
        .s_axi_control_bready(s_axi_control_bready),
        .s_axi_control_araddr(s_axi_control_araddr),
        .s_axi_control_arvalid(s_axi_control_arvalid),
        .s_axi_control_arready(s_axi_control_arready),
        .s_axi_control_rdata(s_axi_control_rdata),
        .s_axi_control_rresp(s_axi_control_rresp),
        .s_axi_control_rvalid(s_axi_control_rvalid),
        .s_axi_control_rready(s_axi_control_rready),
        .interrupt(interrupt),
        .ap_start(ap_start_reg), .finish(finish), .idle(ap_idle_reg),
        .args(args), .ro(ro)
    );
    // The arguments as the host wrote them, whole words; the kernel reads the bits it uses.
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] cmd_reg = args[32*4 +: 32];
    wire [31:0] count_reg = args[32*6 +: 32];
    wire [31:0] level_reg = args[32*8 +: 32];
    wire [31:0] row_reg = args[32*10 +: 32];
    wire [31:0] seed_reg = args[32*12 +: 32];
    wire [63:0] idx_addr_reg = args[32*14 +: 64];
    wire [63:0] word_addr_reg = args[32*16 +: 64];
    wire [63:0] rand_addr_reg = args[32*18 +: 64];
    wire [63:0] res_addr_reg = args[32*20 +: 64];
    /* verilator lint_on UNUSEDSIGNAL */

    // ------------------------------------------------------------------ the tree
    reg rmm_clear;
    wire rmm_s_valid, rmm_s_ready;
    reg [2*P-1:0] grp_op;
    reg [32*P-1:0] grp_index, grp_data;
    wire rmm_m_valid, rmm_m_ready;
    wire [P-1:0] rmm_m_lane_valid;
    wire [32*P-1:0] rmm_m_index, rmm_m_rand;
    reg dbg_valid;
    reg [7:0] dbg_level;
    reg [31:0] dbg_row;
    wire dbg_ready, dbg_rvalid, rmm_idle;
    /* verilator lint_off UNUSEDSIGNAL */
    wire rmm_clearing;         // idle is low while clearing: the kernel waits for idle
    /* verilator lint_on UNUSEDSIGNAL */
    wire [K*W-1:0] dbg_rdata;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [P-1:0] upd_commit;   // the kernel waits for idle instead
    /* verilator lint_on UNUSEDSIGNAL */

    hrl_rmm #(.K(K), .D(D), .P(P), .W(W)) rmm_inst (
        .clk(ap_clk),
        .rst(rst || rmm_clear),
        .lfsr_seed(seed_reg),
        .s_valid(rmm_s_valid),
        .s_ready(rmm_s_ready),
        .s_op(grp_op),
        .s_index(grp_index),
        .s_data(grp_data),
        .m_valid(rmm_m_valid),
        .m_ready(rmm_m_ready),
        .m_lane_valid(rmm_m_lane_valid),
        .m_index(rmm_m_index),
        .m_rand(rmm_m_rand),
        .upd_commit(upd_commit),
        .dbg_valid(dbg_valid),
        .dbg_ready(dbg_ready),
        .dbg_level(dbg_level),
        .dbg_row(dbg_row),
        .dbg_rvalid(dbg_rvalid),
        .dbg_rdata(dbg_rdata),
        .idle(rmm_idle),
        .clearing(rmm_clearing)
    );

    // ------------------------------------------------------------------ AXI4 masters
    // Two ports so that UPDATE reads its two streams (indices on gmem0, words on gmem1) at
    // once, each DW bits wide: P lanes take P items per cycle, and a beat carries DW/32, so
    // the memory side feeds the tree at full rate for P <= DW/32 (results: 2 words per item
    // on gmem0's write channel, full rate for P <= DW/64). Buffers must be DW/8-byte aligned.
    reg rd0_start, rd1_start, wr0_start;
    reg [63:0] rd0_addr, rd1_addr, wr0_addr;
    reg [31:0] rd0_beats, rd1_beats, wr0_beats;
    wire rd0_busy, rd1_busy, wr0_busy;
    wire [DW-1:0] rd0_data, rd1_data, wr0_data;
    wire [DW/8-1:0] wr0_strb;
    wire rd0_valid, rd0_ready, rd1_valid, rd1_ready, wr0_valid, wr0_ready;

    hrl_axi_rd #(.ADDR_W(GA), .DW(DW)) rd0_inst (
        .clk(ap_clk), .rst(rst),
        .start(rd0_start), .addr(rd0_addr[GA-1:0]), .count(rd0_beats), .busy(rd0_busy),
        .m_data(rd0_data), .m_valid(rd0_valid), .m_ready(rd0_ready),
        .m_axi_arid(m_axi_gmem0_arid), .m_axi_araddr(m_axi_gmem0_araddr),
        .m_axi_arlen(m_axi_gmem0_arlen), .m_axi_arsize(m_axi_gmem0_arsize),
        .m_axi_arburst(m_axi_gmem0_arburst), .m_axi_arvalid(m_axi_gmem0_arvalid),
        .m_axi_arready(m_axi_gmem0_arready), .m_axi_rid(m_axi_gmem0_rid),
        .m_axi_rdata(m_axi_gmem0_rdata), .m_axi_rresp(m_axi_gmem0_rresp),
        .m_axi_rlast(m_axi_gmem0_rlast), .m_axi_rvalid(m_axi_gmem0_rvalid),
        .m_axi_rready(m_axi_gmem0_rready)
    );

    hrl_axi_rd #(.ADDR_W(GA), .DW(DW)) rd1_inst (
        .clk(ap_clk), .rst(rst),
        .start(rd1_start), .addr(rd1_addr[GA-1:0]), .count(rd1_beats), .busy(rd1_busy),
        .m_data(rd1_data), .m_valid(rd1_valid), .m_ready(rd1_ready),
        .m_axi_arid(m_axi_gmem1_arid), .m_axi_araddr(m_axi_gmem1_araddr),
        .m_axi_arlen(m_axi_gmem1_arlen), .m_axi_arsize(m_axi_gmem1_arsize),
        .m_axi_arburst(m_axi_gmem1_arburst), .m_axi_arvalid(m_axi_gmem1_arvalid),
        .m_axi_arready(m_axi_gmem1_arready), .m_axi_rid(m_axi_gmem1_rid),
        .m_axi_rdata(m_axi_gmem1_rdata), .m_axi_rresp(m_axi_gmem1_rresp),
        .m_axi_rlast(m_axi_gmem1_rlast), .m_axi_rvalid(m_axi_gmem1_rvalid),
        .m_axi_rready(m_axi_gmem1_rready)
    );

    hrl_axi_wr #(.ADDR_W(GA), .DW(DW)) wr0_inst (
        .clk(ap_clk), .rst(rst),
        .start(wr0_start), .addr(wr0_addr[GA-1:0]), .count(wr0_beats), .busy(wr0_busy),
        .s_data(wr0_data), .s_strb(wr0_strb), .s_valid(wr0_valid), .s_ready(wr0_ready),
        .m_axi_awid(m_axi_gmem0_awid), .m_axi_awaddr(m_axi_gmem0_awaddr),
        .m_axi_awlen(m_axi_gmem0_awlen), .m_axi_awsize(m_axi_gmem0_awsize),
        .m_axi_awburst(m_axi_gmem0_awburst), .m_axi_awvalid(m_axi_gmem0_awvalid),
        .m_axi_awready(m_axi_gmem0_awready), .m_axi_wdata(m_axi_gmem0_wdata),
        .m_axi_wstrb(m_axi_gmem0_wstrb), .m_axi_wlast(m_axi_gmem0_wlast),
        .m_axi_wvalid(m_axi_gmem0_wvalid), .m_axi_wready(m_axi_gmem0_wready),
        .m_axi_bid(m_axi_gmem0_bid), .m_axi_bresp(m_axi_gmem0_bresp),
        .m_axi_bvalid(m_axi_gmem0_bvalid), .m_axi_bready(m_axi_gmem0_bready)
    );

    // Beats for a number of words (the last beat may be partial).
    /* verilator lint_off UNUSEDSIGNAL */
    localparam [31:0] NW_M1_32 = NW - 1;
    localparam [39:0] NW_M1 = {8'd0, NW_M1_32};
    function [31:0] beats_for(input [32:0] words);
        reg [39:0] up;
        begin
            up = ({7'd0, words} + NW_M1) >> LOG_NW;
            beats_for = up[31:0];
        end
    endfunction
    /* verilator lint_on UNUSEDSIGNAL */

    // ------------------------------------------------------------------ width converters
    // Beats to groups of up to P words: indices (gmem0) and words / randoms (gmem1). Fed
    // the same count, the two give the same group sizes, so an UPDATE group pairs them.
    wire [32*P-1:0] idx_words, dat_words;
    wire [PW-1:0] idx_count, dat_count;
    wire idx_valid, dat_valid;
    reg idx_take, dat_take;
    reg idx_start, dat_start;
    reg [31:0] idx_total, dat_total;
    /* verilator lint_off UNUSEDSIGNAL */
    wire idx_busy, dat_busy;   // the item counts end the runs instead
    /* verilator lint_on UNUSEDSIGNAL */

    hrl_beats_to_words #(.DW(DW), .G(P), .CW(PW)) idx_conv (
        .clk(ap_clk), .rst(rst), .start(idx_start), .count(idx_total), .busy(idx_busy),
        .s_data(rd0_data), .s_valid(rd0_valid), .s_ready(rd0_ready),
        .m_words(idx_words), .m_count(idx_count), .m_valid(idx_valid), .m_ready(idx_take)
    );

    hrl_beats_to_words #(.DW(DW), .G(P), .CW(PW)) dat_conv (
        .clk(ap_clk), .rst(rst), .start(dat_start), .count(dat_total), .busy(dat_busy),
        .s_data(rd1_data), .s_valid(rd1_valid), .s_ready(rd1_ready),
        .m_words(dat_words), .m_count(dat_count), .m_valid(dat_valid), .m_ready(dat_take)
    );

    // Result words (two per sample, or a piece of a READ_TREE row) to beats on gmem0.
    reg [32*GW-1:0] res_words;
    reg [GWW-1:0] res_count;
    reg res_valid;
    wire res_ready;
    reg res_start;
    reg [31:0] res_total;

    hrl_words_to_beats #(.DW(DW), .G(GW), .CW(GWW)) res_conv (
        .clk(ap_clk), .rst(rst), .start(res_start), .count(res_total),
        .s_words(res_words), .s_count(res_count), .s_valid(res_valid), .s_ready(res_ready),
        .m_data(wr0_data), .m_strb(wr0_strb), .m_valid(wr0_valid), .m_ready(wr0_ready)
    );

    // ------------------------------------------------------------------ group source
    // One group of up to P items per cycle, lanes in batch order: UPDATE pairs an index
    // group with a word group, SAMPLE takes a fraction group, SAMPLE_LFSR* make strata
    // done_items .. done_items + n - 1. Lanes past n are NOP.
    reg src_valid;
    reg [PW-1:0] src_n;
    reg [1:0] src_op;
    reg [32*P-1:0] src_index, src_data;
    reg grp_valid;
    wire grp_load = src_valid && (!grp_valid || rmm_s_ready);
    assign rmm_s_valid = grp_valid;

    always @(posedge ap_clk) begin
        if (rmm_s_valid && rmm_s_ready) grp_valid <= 1'b0;
        if (grp_load) begin : load
            integer l;
            grp_valid <= 1'b1;
            for (l = 0; l < P; l = l + 1) begin
                grp_op[2*l +: 2] <= (l < src_n) ? src_op : 2'd0;
                grp_index[32*l +: 32] <= src_index[32*l +: 32];
                grp_data[32*l +: 32] <= src_data[32*l +: 32];
            end
        end
        if (rst) begin
            grp_valid <= 1'b0;
            grp_op <= {2*P{1'b0}};
            grp_index <= {32*P{1'b0}};
            grp_data <= {32*P{1'b0}};
        end
    end

    // ------------------------------------------------------------------ control FSM
    localparam [3:0] S_IDLE = 4'd0, S_WAIT = 4'd1, S_UPD = 4'd2, S_DIV = 4'd4, S_SMP = 4'd5,
        S_ROW_REQ = 4'd6, S_ROW_WAIT = 4'd7, S_ROW_EMIT = 4'd8, S_CLEAR = 4'd9,
        S_DRAIN = 4'd10, S_ROOT_REQ = 4'd11, S_ROOT_WAIT = 4'd12;
    reg [3:0] state;
    reg [31:0] done_items;   // items issued to the tree in this run
    reg [31:0] stride;       // SAMPLE_LFSR: (2**32-1) // count; SAMPLE_LFSR_IID: 0
    reg [31:0] div_rem;
    reg [5:0] div_step;
    reg [31:0] rows_left, row_cur;
    reg [K*W-1:0] row_buf;
    reg [KW:0] row_word;
    wire [31:0] items_left = count_reg - done_items;
    wire [2:0] cmd = cmd_reg[2:0];
    wire cmd_ok = cmd_reg <= 32'd5;
    wire [32:0] div_try = {div_rem, 1'b1};   // the dividend's bits are all ones
    wire [PW-1:0] lfsr_n = (items_left < P) ? items_left[PW-1:0] : P[PW-1:0];
    wire [KW+1:0] row_rest = K[KW+1:0] - {1'b0, row_word};   // row words still to send
    wire [31:0] row_rest32 = {{(30-KW){1'b0}}, row_rest};
    /* verilator lint_off UNUSEDSIGNAL */
    wire [31:0] row_piece32 = (row_rest32 < GW) ? row_rest32 : GW;   // <= min(K, 2P)
    /* verilator lint_on UNUSEDSIGNAL */
    wire [GWW-1:0] row_piece = row_piece32[GWW-1:0];
    wire [31:0] row_word32 = {{(31-KW){1'b0}}, row_word};
    integer sl, rl, nres;

    // Sources of the items and of the result words, per state.
    always @* begin
        src_valid = 1'b0;
        src_n = {PW{1'b0}};
        src_op = OP_UPDATE;
        src_index = idx_words;
        src_data = dat_words;
        idx_take = 1'b0;
        dat_take = 1'b0;
        case (state)
            S_UPD: begin
                src_valid = idx_valid && dat_valid;
                src_n = idx_count;
                idx_take = src_valid && (!grp_valid || rmm_s_ready);
                dat_take = idx_take;
            end
            S_SMP: begin
                if (cmd == CMD_SAMPLE) begin
                    src_valid = dat_valid;
                    src_n = dat_count;
                    src_op = OP_SAMPLE;
                    dat_take = src_valid && (!grp_valid || rmm_s_ready);
                end else begin
                    src_valid = done_items != count_reg;
                    src_n = lfsr_n;
                    src_op = OP_SAMPLE_LFSR;
                    for (sl = 0; sl < P; sl = sl + 1) begin
                        src_index[32*sl +: 32] = done_items + sl;
                        src_data[32*sl +: 32] = stride;
                    end
                end
            end
            default: ;
        endcase

        res_words = {32*GW{1'b0}};
        res_count = {GWW{1'b0}};
        res_valid = 1'b0;
        if (state == S_ROW_EMIT) begin
            res_valid = 1'b1;
            res_count = row_piece;
            for (rl = 0; rl < GW; rl = rl + 1)
                if (rl < K) res_words[32*rl +: W] = row_buf[W*((row_word32 + rl) % K) +: W];
        end else begin
            // A result group's valid lanes are a prefix (groups are issued as prefixes).
            res_valid = rmm_m_valid;
            nres = 0;
            for (rl = 0; rl < P; rl = rl + 1) begin
                res_words[64*rl +: 32] = rmm_m_index[32*rl +: 32];
                res_words[64*rl + 32 +: 32] = rmm_m_rand[32*rl +: 32];
                if (rmm_m_lane_valid[rl]) nres = nres + 2;
            end
            res_count = nres[GWW-1:0];
        end
    end
    assign rmm_m_ready = state != S_ROW_EMIT && res_ready;

    wire res_fire = res_valid && res_ready;

    always @(posedge ap_clk) begin
        rd0_start <= 1'b0;
        rd1_start <= 1'b0;
        wr0_start <= 1'b0;
        idx_start <= 1'b0;
        dat_start <= 1'b0;
        res_start <= 1'b0;
        rmm_clear <= 1'b0;
        dbg_valid <= 1'b0;
        finish <= 1'b0;
        if (state != S_IDLE) cycles_reg <= cycles_reg + 32'd1;
        if (finish) ap_idle_reg <= 1'b1;   // with ap_done, not a cycle before
        if (grp_load) done_items <= done_items + {{(32-PW){1'b0}}, src_n};
        case (state)
            S_IDLE: if (ap_start_reg && !finish) begin
                ap_idle_reg <= 1'b0;
                cycles_reg <= 32'd1;
                done_items <= 32'd0;
                state <= S_WAIT;
            end
            // The tree is idle between runs except after a reset (its clear sweep).
            S_WAIT: if (rmm_idle) begin
                if (!cmd_ok || (count_reg == 32'd0 && cmd != CMD_CLEAR)) begin
                    state <= S_ROOT_REQ;
                end else if (cmd == CMD_UPDATE) begin
                    rd0_start <= 1'b1;
                    rd0_addr <= idx_addr_reg;
                    rd0_beats <= beats_for({1'b0, count_reg});
                    idx_start <= 1'b1;
                    idx_total <= count_reg;
                    rd1_start <= 1'b1;
                    rd1_addr <= word_addr_reg;
                    rd1_beats <= beats_for({1'b0, count_reg});
                    dat_start <= 1'b1;
                    dat_total <= count_reg;
                    state <= S_UPD;
                end else if (cmd == CMD_SAMPLE) begin
                    rd1_start <= 1'b1;
                    rd1_addr <= rand_addr_reg;
                    rd1_beats <= beats_for({1'b0, count_reg});
                    dat_start <= 1'b1;
                    dat_total <= count_reg;
                    wr0_start <= 1'b1;
                    wr0_addr <= res_addr_reg;
                    wr0_beats <= beats_for({count_reg, 1'b0});
                    res_start <= 1'b1;
                    res_total <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end else if (cmd == CMD_SAMPLE_LFSR) begin
                    div_rem <= 32'd0;
                    div_step <= 6'd0;
                    stride <= 32'd0;
                    state <= S_DIV;
                end else if (cmd == CMD_SAMPLE_LFSR_IID) begin
                    stride <= 32'd0;
                    wr0_start <= 1'b1;
                    wr0_addr <= res_addr_reg;
                    wr0_beats <= beats_for({count_reg, 1'b0});
                    res_start <= 1'b1;
                    res_total <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end else if (cmd == CMD_READ_TREE) begin
                    wr0_start <= 1'b1;
                    wr0_addr <= res_addr_reg;
                    wr0_beats <= beats_for({1'b0, count_reg * K});
                    res_start <= 1'b1;
                    res_total <= count_reg * K;
                    rows_left <= count_reg;
                    row_cur <= row_reg;
                    state <= S_ROW_REQ;
                end else begin
                    rmm_clear <= 1'b1;
                    state <= S_CLEAR;
                end
            end
            S_UPD: if (grp_load && items_left == {{(32-PW){1'b0}}, src_n}) state <= S_DRAIN;
            // Restoring division of 2**32-1 by count, one quotient bit per cycle.
            S_DIV: begin
                if (div_try >= {1'b0, count_reg}) begin
                    div_rem <= div_try[31:0] - count_reg;   // < count: fits
                    stride <= {stride[30:0], 1'b1};
                end else begin
                    div_rem <= div_try[31:0];              // < count: fits
                    stride <= {stride[30:0], 1'b0};
                end
                div_step <= div_step + 6'd1;
                if (div_step == 6'd31) begin
                    wr0_start <= 1'b1;
                    wr0_addr <= res_addr_reg;
                    wr0_beats <= beats_for({count_reg, 1'b0});
                    res_start <= 1'b1;
                    res_total <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end
            end
            S_SMP: if (grp_load && items_left == {{(32-PW){1'b0}}, src_n}) state <= S_DRAIN;
            // READ_TREE: one row per request through the debug port, K words out in pieces
            // of up to 2P per cycle.
            S_ROW_REQ: if (rows_left == 32'd0) begin
                state <= S_DRAIN;
            end else if (dbg_ready) begin
                dbg_valid <= 1'b1;
                dbg_level <= level_reg[7:0];
                dbg_row <= row_cur;
                state <= S_ROW_WAIT;
            end
            S_ROW_WAIT: if (dbg_rvalid) begin
                row_buf <= dbg_rdata;
                row_word <= {(KW+1){1'b0}};
                state <= S_ROW_EMIT;
            end
            S_ROW_EMIT: if (res_fire) begin
                row_word <= row_word + row_piece32[KW:0];
                if (row_piece32 == row_rest32) begin
                    rows_left <= rows_left - 32'd1;
                    row_cur <= row_cur + 32'd1;
                    state <= S_ROW_REQ;
                end
            end
            S_CLEAR: state <= S_DRAIN;   // rmm_clear was high for one cycle
            // Every effect visible: tree idle (clear sweep done), results all written.
            S_DRAIN: if (rmm_idle && !grp_valid && !rmm_m_valid && !rd0_busy && !rd1_busy &&
                         !wr0_busy && !rd0_start && !rd1_start && !wr0_start &&
                         !rmm_clear) begin
                state <= S_ROOT_REQ;
            end
            S_ROOT_REQ: if (dbg_ready) begin
                dbg_valid <= 1'b1;
                dbg_level <= 8'd0;
                dbg_row <= 32'd0;
                state <= S_ROOT_WAIT;
            end
            S_ROOT_WAIT: if (dbg_rvalid) begin
                root_reg <= {32{1'b0}};
                root_reg[W-1:0] <= dbg_rdata[W-1:0];
                finish <= 1'b1;
                state <= S_IDLE;
            end
            default: state <= S_IDLE;
        endcase
        if (rst) begin
            state <= S_IDLE;
            ap_idle_reg <= 1'b1;
            cycles_reg <= 32'd0;
            root_reg <= 32'd0;
            rows_left <= 32'd0;
            done_items <= 32'd0;
            dbg_level <= 8'd0;
            dbg_row <= 32'd0;
            stride <= 32'd0;
        end
    end

endmodule

`default_nettype wire
