// hrl_rmm_kernel: the replay manager (hrl_rmm) as a Xilinx XRT/Vitis RTL kernel.
//
// Control: AXI4-Lite slave s_axi_control with the ap_ctrl_hs protocol that XRT drives
// (the register map below is also in fpga_rtl/vitis/kernel.xml and fpga_rtl/README.md):
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
//   UPDATE          reads indices and words in chunks of 256 (the indices of a chunk into
//                   a local buffer, then the words streamed into the tree) and issues
//                   `count` updates in order: the last of duplicate indices wins.
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
// The host must not change the argument registers while the kernel runs; count must be
// < 2**31 (SAMPLE*) and count*K < 2**32 (READ_TREE); addresses 4-byte aligned.
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
    parameter C_M_AXI_GMEM_ADDR_WIDTH = 64
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
    output reg         s_axi_control_bvalid,
    input  wire        s_axi_control_bready,
    input  wire [C_S_AXI_CONTROL_ADDR_WIDTH-1:0] s_axi_control_araddr,
    input  wire        s_axi_control_arvalid,
    output wire        s_axi_control_arready,
    output reg  [31:0] s_axi_control_rdata,
    output wire [1:0]  s_axi_control_rresp,
    output reg         s_axi_control_rvalid,
    input  wire        s_axi_control_rready,

    output wire [0:0]  m_axi_gmem_awid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem_awaddr,
    output wire [7:0]  m_axi_gmem_awlen,
    output wire [2:0]  m_axi_gmem_awsize,
    output wire [1:0]  m_axi_gmem_awburst,
    output wire        m_axi_gmem_awvalid,
    input  wire        m_axi_gmem_awready,
    output wire [31:0] m_axi_gmem_wdata,
    output wire [3:0]  m_axi_gmem_wstrb,
    output wire        m_axi_gmem_wlast,
    output wire        m_axi_gmem_wvalid,
    input  wire        m_axi_gmem_wready,
    input  wire [0:0]  m_axi_gmem_bid,
    input  wire [1:0]  m_axi_gmem_bresp,
    input  wire        m_axi_gmem_bvalid,
    output wire        m_axi_gmem_bready,
    output wire [0:0]  m_axi_gmem_arid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem_araddr,
    output wire [7:0]  m_axi_gmem_arlen,
    output wire [2:0]  m_axi_gmem_arsize,
    output wire [1:0]  m_axi_gmem_arburst,
    output wire        m_axi_gmem_arvalid,
    input  wire        m_axi_gmem_arready,
    input  wire [0:0]  m_axi_gmem_rid,
    input  wire [31:0] m_axi_gmem_rdata,
    input  wire [1:0]  m_axi_gmem_rresp,
    input  wire        m_axi_gmem_rlast,
    input  wire        m_axi_gmem_rvalid,
    output wire        m_axi_gmem_rready
);

    localparam AA = C_S_AXI_CONTROL_ADDR_WIDTH;
    localparam GA = C_M_AXI_GMEM_ADDR_WIDTH;
    localparam [2:0] CMD_UPDATE = 3'd0, CMD_SAMPLE = 3'd1, CMD_SAMPLE_LFSR = 3'd2,
        CMD_SAMPLE_LFSR_IID = 3'd3, CMD_READ_TREE = 3'd4, CMD_CLEAR = 3'd5;
    localparam [1:0] OP_UPDATE = 2'd1, OP_SAMPLE = 2'd2, OP_SAMPLE_LFSR = 2'd3;
    localparam CHUNK = 256;     // UPDATE indices buffered per chunk
    localparam LANE_W = (P > 1) ? $clog2(P) : 1;
    localparam KW = (K > 1) ? $clog2(K) : 1;

    initial begin
        if (AA < 7 || AA > 16)
            $fatal(1, "%m: C_S_AXI_CONTROL_ADDR_WIDTH=%0d must be in [7, 16]", AA);
        if (GA < 32 || GA > 64)
            $fatal(1, "%m: C_M_AXI_GMEM_ADDR_WIDTH=%0d must be in [32, 64]", GA);
    end

    wire rst = !ap_rst_n;

    // ------------------------------------------------------------------ registers
    reg ap_start_reg, ap_done_reg, ap_ready_reg, ap_idle_reg;
    reg gie_reg;
    reg [1:0] ier_reg, isr_reg;
    reg [31:0] cmd_reg, count_reg, level_reg, row_reg, seed_reg;
    reg [63:0] idx_addr_reg, word_addr_reg, rand_addr_reg, res_addr_reg;
    reg [31:0] cycles_reg, root_reg;
    localparam [7:0] CFG_K = K[7:0], CFG_D = D[7:0], CFG_P = P[7:0], CFG_W = W[7:0];

    reg finish;   // the run ends this cycle (from the FSM)

    // AXI4-Lite write: address and data may come in either order; one response each.
    reg aw_hold, w_hold;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [AA-1:0] aw_addr;   // registers are words: the byte-offset bits are ignored
    /* verilator lint_on UNUSEDSIGNAL */
    reg [31:0] w_data;
    reg [3:0] w_strb;
    assign s_axi_control_awready = !aw_hold && !s_axi_control_bvalid;
    assign s_axi_control_wready = !w_hold && !s_axi_control_bvalid;
    assign s_axi_control_bresp = 2'b00;
    wire wr_do = aw_hold && w_hold && !s_axi_control_bvalid;

    function [31:0] merge(input [31:0] old, input [31:0] data, input [3:0] strb);
        integer b;
        begin
            merge = old;
            for (b = 0; b < 4; b = b + 1)
                if (strb[b]) merge[8*b +: 8] = data[8*b +: 8];
        end
    endfunction

    // AXI4-Lite read: one outstanding read, data the cycle after the address.
    assign s_axi_control_arready = !s_axi_control_rvalid;
    assign s_axi_control_rresp = 2'b00;
    wire ar_fire = s_axi_control_arvalid && s_axi_control_arready;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [AA-1:0] ar_addr = s_axi_control_araddr;
    /* verilator lint_on UNUSEDSIGNAL */

    always @(posedge ap_clk) begin
        if (s_axi_control_awvalid && s_axi_control_awready) begin
            aw_hold <= 1'b1;
            aw_addr <= s_axi_control_awaddr;
        end
        if (s_axi_control_wvalid && s_axi_control_wready) begin
            w_hold <= 1'b1;
            w_data <= s_axi_control_wdata;
            w_strb <= s_axi_control_wstrb;
        end
        if (s_axi_control_bvalid && s_axi_control_bready) s_axi_control_bvalid <= 1'b0;

        // Reads: 0x00 returns the status and clears ap_done/ap_ready (clear on read).
        if (s_axi_control_rvalid && s_axi_control_rready) s_axi_control_rvalid <= 1'b0;
        if (ar_fire) begin
            s_axi_control_rvalid <= 1'b1;
            case (ar_addr[6:2])
                5'h00: s_axi_control_rdata <= {28'd0, ap_ready_reg, ap_idle_reg, ap_done_reg,
                                               ap_start_reg};
                5'h01: s_axi_control_rdata <= {31'd0, gie_reg};
                5'h02: s_axi_control_rdata <= {30'd0, ier_reg};
                5'h03: s_axi_control_rdata <= {30'd0, isr_reg};
                5'h04: s_axi_control_rdata <= cmd_reg;
                5'h06: s_axi_control_rdata <= count_reg;
                5'h08: s_axi_control_rdata <= level_reg;
                5'h0a: s_axi_control_rdata <= row_reg;
                5'h0c: s_axi_control_rdata <= seed_reg;
                5'h0e: s_axi_control_rdata <= idx_addr_reg[31:0];
                5'h0f: s_axi_control_rdata <= idx_addr_reg[63:32];
                5'h10: s_axi_control_rdata <= word_addr_reg[31:0];
                5'h11: s_axi_control_rdata <= word_addr_reg[63:32];
                5'h12: s_axi_control_rdata <= rand_addr_reg[31:0];
                5'h13: s_axi_control_rdata <= rand_addr_reg[63:32];
                5'h14: s_axi_control_rdata <= res_addr_reg[31:0];
                5'h15: s_axi_control_rdata <= res_addr_reg[63:32];
                5'h18: s_axi_control_rdata <= cycles_reg;
                5'h19: s_axi_control_rdata <= root_reg;
                5'h1a: s_axi_control_rdata <= {CFG_W, CFG_P, CFG_D, CFG_K};
                default: s_axi_control_rdata <= 32'd0;
            endcase
            if (ar_addr[6:2] == 5'h00) begin
                ap_done_reg <= 1'b0;
                ap_ready_reg <= 1'b0;
            end
        end

        if (wr_do) begin
            aw_hold <= 1'b0;
            w_hold <= 1'b0;
            s_axi_control_bvalid <= 1'b1;
            case (aw_addr[6:2])
                5'h00: if (w_strb[0] && w_data[0]) ap_start_reg <= 1'b1;
                5'h01: if (w_strb[0]) gie_reg <= w_data[0];
                5'h02: if (w_strb[0]) ier_reg <= w_data[1:0];
                5'h03: if (w_strb[0]) isr_reg <= isr_reg ^ w_data[1:0];
                5'h04: cmd_reg <= merge(cmd_reg, w_data, w_strb);
                5'h06: count_reg <= merge(count_reg, w_data, w_strb);
                5'h08: level_reg <= merge(level_reg, w_data, w_strb);
                5'h0a: row_reg <= merge(row_reg, w_data, w_strb);
                5'h0c: seed_reg <= merge(seed_reg, w_data, w_strb);
                5'h0e: idx_addr_reg[31:0] <= merge(idx_addr_reg[31:0], w_data, w_strb);
                5'h0f: idx_addr_reg[63:32] <= merge(idx_addr_reg[63:32], w_data, w_strb);
                5'h10: word_addr_reg[31:0] <= merge(word_addr_reg[31:0], w_data, w_strb);
                5'h11: word_addr_reg[63:32] <= merge(word_addr_reg[63:32], w_data, w_strb);
                5'h12: rand_addr_reg[31:0] <= merge(rand_addr_reg[31:0], w_data, w_strb);
                5'h13: rand_addr_reg[63:32] <= merge(rand_addr_reg[63:32], w_data, w_strb);
                5'h14: res_addr_reg[31:0] <= merge(res_addr_reg[31:0], w_data, w_strb);
                5'h15: res_addr_reg[63:32] <= merge(res_addr_reg[63:32], w_data, w_strb);
                default: ;  // read-only and unmapped addresses ignore writes
            endcase
        end

        // End of a run: done and ready together (ap_ctrl_hs, no pipelining), start cleared.
        if (finish) begin
            ap_start_reg <= 1'b0;
            ap_done_reg <= 1'b1;
            ap_ready_reg <= 1'b1;
            if (ier_reg[0]) isr_reg[0] <= 1'b1;
            if (ier_reg[1]) isr_reg[1] <= 1'b1;
        end

        if (rst) begin
            aw_hold <= 1'b0;
            w_hold <= 1'b0;
            s_axi_control_bvalid <= 1'b0;
            s_axi_control_rvalid <= 1'b0;
            s_axi_control_rdata <= 32'd0;
            ap_start_reg <= 1'b0;
            ap_done_reg <= 1'b0;
            ap_ready_reg <= 1'b0;
            gie_reg <= 1'b0;
            ier_reg <= 2'b00;
            isr_reg <= 2'b00;
            cmd_reg <= 32'd0;
            count_reg <= 32'd0;
            level_reg <= 32'd0;
            row_reg <= 32'd0;
            seed_reg <= 32'd0;
            idx_addr_reg <= 64'd0;
            word_addr_reg <= 64'd0;
            rand_addr_reg <= 64'd0;
            res_addr_reg <= 64'd0;
        end
    end

    assign interrupt = gie_reg && (|isr_reg);

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

    // ------------------------------------------------------------------ AXI4 master
    reg rd_start, wr_start;
    reg [63:0] rd_addr, wr_addr;
    reg [31:0] rd_count, wr_count;
    wire rd_busy, wr_busy;
    wire [31:0] rd_data;
    wire rd_valid;
    reg rd_ready;
    reg [31:0] wr_data;
    reg wr_valid;
    wire wr_ready;

    hrl_axi_rd #(.ADDR_W(GA)) rd_inst (
        .clk(ap_clk), .rst(rst),
        .start(rd_start), .addr(rd_addr[GA-1:0]), .count(rd_count), .busy(rd_busy),
        .m_data(rd_data), .m_valid(rd_valid), .m_ready(rd_ready),
        .m_axi_arid(m_axi_gmem_arid), .m_axi_araddr(m_axi_gmem_araddr),
        .m_axi_arlen(m_axi_gmem_arlen), .m_axi_arsize(m_axi_gmem_arsize),
        .m_axi_arburst(m_axi_gmem_arburst), .m_axi_arvalid(m_axi_gmem_arvalid),
        .m_axi_arready(m_axi_gmem_arready), .m_axi_rid(m_axi_gmem_rid),
        .m_axi_rdata(m_axi_gmem_rdata), .m_axi_rresp(m_axi_gmem_rresp),
        .m_axi_rlast(m_axi_gmem_rlast), .m_axi_rvalid(m_axi_gmem_rvalid),
        .m_axi_rready(m_axi_gmem_rready)
    );

    hrl_axi_wr #(.ADDR_W(GA)) wr_inst (
        .clk(ap_clk), .rst(rst),
        .start(wr_start), .addr(wr_addr[GA-1:0]), .count(wr_count), .busy(wr_busy),
        .s_data(wr_data), .s_valid(wr_valid), .s_ready(wr_ready),
        .m_axi_awid(m_axi_gmem_awid), .m_axi_awaddr(m_axi_gmem_awaddr),
        .m_axi_awlen(m_axi_gmem_awlen), .m_axi_awsize(m_axi_gmem_awsize),
        .m_axi_awburst(m_axi_gmem_awburst), .m_axi_awvalid(m_axi_gmem_awvalid),
        .m_axi_awready(m_axi_gmem_awready), .m_axi_wdata(m_axi_gmem_wdata),
        .m_axi_wstrb(m_axi_gmem_wstrb), .m_axi_wlast(m_axi_gmem_wlast),
        .m_axi_wvalid(m_axi_gmem_wvalid), .m_axi_wready(m_axi_gmem_wready),
        .m_axi_bid(m_axi_gmem_bid), .m_axi_bresp(m_axi_gmem_bresp),
        .m_axi_bvalid(m_axi_gmem_bvalid), .m_axi_bready(m_axi_gmem_bready)
    );

    // ------------------------------------------------------------------ group packer
    // Items (one lane operation each, in batch order) fill lanes 0..P-1 of a group; a full
    // group, or the last item of a batch or chunk, is offered to the tree.
    reg item_valid, item_last;
    reg [1:0] item_op;
    reg [31:0] item_index, item_data;
    reg grp_valid;
    reg [LANE_W-1:0] grp_lane;
    wire item_ready = !grp_valid || rmm_s_ready;
    wire item_fire = item_valid && item_ready;
    assign rmm_s_valid = grp_valid;
    wire grp_fire = rmm_s_valid && rmm_s_ready;

    always @(posedge ap_clk) begin
        if (grp_fire) begin
            grp_valid <= 1'b0;
            grp_op <= {2*P{1'b0}};
        end
        if (item_fire) begin
            // A group just accepted leaves every lane NOP (above); this item opens lane 0
            // or continues the partial group.
            grp_op[2*grp_lane +: 2] <= item_op;
            grp_index[32*grp_lane +: 32] <= item_index;
            grp_data[32*grp_lane +: 32] <= item_data;
            if (item_last || {{(32-LANE_W){1'b0}}, grp_lane} == P - 1) begin
                grp_valid <= 1'b1;
                grp_lane <= {LANE_W{1'b0}};
            end else begin
                grp_lane <= grp_lane + 1'b1;
            end
        end
        if (rst) begin
            grp_valid <= 1'b0;
            grp_lane <= {LANE_W{1'b0}};
            grp_op <= {2*P{1'b0}};
            grp_index <= {32*P{1'b0}};
            grp_data <= {32*P{1'b0}};
        end
    end

    // ------------------------------------------------------------------ result unpacker
    // A result group is held while its lanes leave as two words each: index, random word.
    reg [P-1:0] unp_lanes;
    reg [32*P-1:0] unp_index, unp_rand;
    reg unp_phase;   // 0: index word, 1: random word
    reg [LANE_W-1:0] unp_lane;
    reg [P-1:0] unp_lane_bit;
    integer ul;
    always @* begin
        // The lowest lane still to send.
        unp_lane = {LANE_W{1'b0}};
        unp_lane_bit = {P{1'b0}};
        for (ul = P - 1; ul >= 0; ul = ul - 1)
            if (unp_lanes[ul]) begin
                unp_lane = ul[LANE_W-1:0];
                unp_lane_bit = {P{1'b0}};
                unp_lane_bit[ul] = 1'b1;
            end
    end
    wire unp_valid = |unp_lanes;
    wire [31:0] unp_word = unp_phase ? unp_rand[32*unp_lane +: 32] : unp_index[32*unp_lane +: 32];
    reg unp_take;   // the writer takes an unpacker word this cycle (from the FSM mux)
    wire unp_last = unp_take && unp_phase && unp_lanes == unp_lane_bit;
    assign rmm_m_ready = !unp_valid || unp_last;

    always @(posedge ap_clk) begin
        if (unp_take) begin
            unp_phase <= !unp_phase;
            if (unp_phase) unp_lanes <= unp_lanes & ~unp_lane_bit;
        end
        if (rmm_m_valid && rmm_m_ready) begin
            unp_lanes <= rmm_m_lane_valid;
            unp_index <= rmm_m_index;
            unp_rand <= rmm_m_rand;
        end
        if (rst) begin
            unp_lanes <= {P{1'b0}};
            unp_phase <= 1'b0;
        end
    end

    // ------------------------------------------------------------------ control FSM
    localparam [3:0] S_IDLE = 4'd0, S_WAIT = 4'd1, S_UPD_IDX = 4'd2, S_UPD_WORD = 4'd3,
        S_DIV = 4'd4, S_SMP = 4'd5, S_ROW_REQ = 4'd6, S_ROW_WAIT = 4'd7, S_ROW_EMIT = 4'd8,
        S_CLEAR = 4'd9, S_DRAIN = 4'd10, S_ROOT_REQ = 4'd11, S_ROOT_WAIT = 4'd12,
        S_UPD_NEXT = 4'd13;
    reg [3:0] state;
    reg [31:0] done_items;   // UPDATE: items of earlier chunks; SAMPLE_LFSR*: items issued
    reg [8:0] chunk_n;       // UPDATE: items in this chunk (1..256)
    reg [8:0] chunk_i;       // position in the chunk
    reg [31:0] idx_buf [0:CHUNK-1];
    reg [31:0] stride;       // SAMPLE_LFSR: (2**32-1) // count; SAMPLE_LFSR_IID: 0
    reg [31:0] div_rem;
    reg [5:0] div_step;
    reg [31:0] rows_left, row_cur;
    reg [K*W-1:0] row_buf;
    reg [KW:0] row_word;
    wire [31:0] items_left = count_reg - done_items;
    wire [2:0] cmd = cmd_reg[2:0];
    wire cmd_ok = cmd_reg <= 32'd5;
    wire [31:0] idx_buf_q = idx_buf[chunk_i[7:0]];
    wire [32:0] div_try = {div_rem, 1'b1};   // the dividend's bits are all ones

    // Source of the items and of the written words, per state.
    always @* begin
        item_valid = 1'b0;
        item_last = 1'b0;
        item_op = OP_UPDATE;
        item_index = 32'd0;
        item_data = 32'd0;
        rd_ready = 1'b0;
        wr_valid = 1'b0;
        wr_data = 32'd0;
        unp_take = 1'b0;
        case (state)
            S_UPD_IDX: rd_ready = 1'b1;
            S_UPD_WORD: begin
                item_valid = rd_valid;
                item_last = chunk_i == chunk_n - 9'd1;
                item_index = idx_buf_q;
                item_data = rd_data;
                rd_ready = item_ready;
            end
            S_SMP: begin
                if (cmd == CMD_SAMPLE) begin
                    item_valid = rd_valid;
                    item_op = OP_SAMPLE;
                    item_data = rd_data;
                    rd_ready = item_ready;
                    item_last = done_items == count_reg - 32'd1;
                end else begin
                    item_valid = done_items != count_reg;
                    item_op = OP_SAMPLE_LFSR;
                    item_index = done_items;
                    item_data = stride;
                    item_last = done_items == count_reg - 32'd1;
                end
            end
            default: ;
        endcase
        if (state == S_ROW_EMIT) begin
            wr_valid = 1'b1;
            wr_data = {32{1'b0}};
            wr_data[W-1:0] = row_buf[W*row_word[KW-1:0] +: W];
        end else begin
            wr_valid = unp_valid;
            wr_data = unp_word;
            unp_take = unp_valid && wr_ready;
        end
    end

    wire rd_fire = rd_valid && rd_ready;
    wire wr_fire = wr_valid && wr_ready;

    always @(posedge ap_clk) begin
        rd_start <= 1'b0;
        wr_start <= 1'b0;
        rmm_clear <= 1'b0;
        dbg_valid <= 1'b0;
        finish <= 1'b0;
        if (state != S_IDLE) cycles_reg <= cycles_reg + 32'd1;
        if (finish) ap_idle_reg <= 1'b1;   // with ap_done, not a cycle before
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
                    state <= S_UPD_NEXT;
                end else if (cmd == CMD_SAMPLE) begin
                    rd_start <= 1'b1;
                    rd_addr <= rand_addr_reg;
                    rd_count <= count_reg;
                    wr_start <= 1'b1;
                    wr_addr <= res_addr_reg;
                    wr_count <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end else if (cmd == CMD_SAMPLE_LFSR) begin
                    div_rem <= 32'd0;
                    div_step <= 6'd0;
                    stride <= 32'd0;
                    state <= S_DIV;
                end else if (cmd == CMD_SAMPLE_LFSR_IID) begin
                    stride <= 32'd0;
                    wr_start <= 1'b1;
                    wr_addr <= res_addr_reg;
                    wr_count <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end else if (cmd == CMD_READ_TREE) begin
                    wr_start <= 1'b1;
                    wr_addr <= res_addr_reg;
                    wr_count <= count_reg * K;
                    rows_left <= count_reg;
                    row_cur <= row_reg;
                    state <= S_ROW_REQ;
                end else begin
                    rmm_clear <= 1'b1;
                    state <= S_CLEAR;
                end
            end
            // UPDATE: per chunk, the indices into idx_buf, then the words with them.
            S_UPD_NEXT: begin
                chunk_i <= 9'd0;
                chunk_n <= (items_left > CHUNK) ? CHUNK[8:0] : items_left[8:0];
                rd_start <= 1'b1;
                rd_addr <= idx_addr_reg + {32'd0, done_items[29:0], 2'b00};
                rd_count <= (items_left > CHUNK) ? CHUNK : items_left;
                state <= S_UPD_IDX;
            end
            S_UPD_IDX: begin
                if (rd_fire) begin
                    idx_buf[chunk_i[7:0]] <= rd_data;
                    chunk_i <= chunk_i + 9'd1;
                    if (chunk_i == chunk_n - 9'd1) begin
                        chunk_i <= 9'd0;
                        rd_start <= 1'b1;
                        rd_addr <= word_addr_reg + {32'd0, done_items[29:0], 2'b00};
                        rd_count <= {23'd0, chunk_n};
                        state <= S_UPD_WORD;
                    end
                end
            end
            S_UPD_WORD: if (rd_fire) begin
                chunk_i <= chunk_i + 9'd1;
                if (chunk_i == chunk_n - 9'd1) begin
                    done_items <= done_items + {23'd0, chunk_n};
                    state <= (items_left == {23'd0, chunk_n}) ? S_DRAIN : S_UPD_NEXT;
                end
            end
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
                    wr_start <= 1'b1;
                    wr_addr <= res_addr_reg;
                    wr_count <= {count_reg[30:0], 1'b0};
                    state <= S_SMP;
                end
            end
            S_SMP: begin
                if (item_fire) done_items <= done_items + 32'd1;
                if (item_fire && item_last) state <= S_DRAIN;
            end
            // READ_TREE: one row per request through the debug port, K words out.
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
            S_ROW_EMIT: if (wr_fire) begin
                row_word <= row_word + 1'b1;
                if ({{(31-KW){1'b0}}, row_word} == K - 1) begin
                    rows_left <= rows_left - 32'd1;
                    row_cur <= row_cur + 32'd1;
                    state <= S_ROW_REQ;
                end
            end
            S_CLEAR: state <= S_DRAIN;   // rmm_clear was high for one cycle
            // Every effect visible: tree idle (clear sweep done), results all written.
            S_DRAIN: if (rmm_idle && !grp_valid && !rmm_m_valid && !unp_valid && !rd_busy &&
                         !wr_busy && !rd_start && !wr_start && !rmm_clear) begin
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
