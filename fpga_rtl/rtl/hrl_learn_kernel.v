// hrl_learn_kernel: the learning module's engine (hrl_learn_engine) as a Xilinx XRT/Vitis RTL
// kernel, in the form of hrl_rmm_kernel: AXI4-Lite control (ap_ctrl_hs) and an AXI4 master
// on the card's memory. With TRAIN = 1 the engine is hrl_learn_step's (the whole DQN SGD
// step above the engine, whose engine ports it passes through): one kernel both infers and
// trains, and the network's state (master weights, Adam's moments, the target masters, the
// operand words the array reads) stays in its banks from run to run. TRAIN = 2 is the same
// with hrl_learn_step_ddpg (DDPG's step: an actor and a critic in the same banks; its batch
// rows' action word is unused, the actions come in with the critic's input). TRAIN = 0
// builds the engine alone (the inference kernel: no optimizer banks, no loss or Adam lanes).
//
// One run is a program the host leaves in device memory: a list of bank loads, an op table
// and a list of bank stores. The kernel knows no network and no op kind: it copies matrices
// into the engine's banks, writes the op table word by word into the engine's, runs it, and
// copies matrices out. So any op kind the engine gains (and any network up to its sizes)
// needs no kernel change, only a different program (hrl.fixed_point.kernel_program writes them).
//
// Control registers (s_axi_control, held by hrl_axil_ctrl; byte offsets):
//   0x00 control  bit0 ap_start (host writes 1; cleared by the kernel at ap_done)
//                 bit1 ap_done (clear on read)  bit2 ap_idle  bit3 ap_ready (clear on read)
//   0x04 GIE      bit0 global interrupt enable
//   0x08 IER      bit0 done interrupt enable, bit1 ready interrupt enable
//   0x0c ISR      bit0 done, bit1 ready (toggle on write)
//   0x10 n_loads  load descriptors
//   0x18 n_ops    ops of the table (0: no engine run; 1..6 NL)
//   0x20 n_stores store descriptors
//   0x28 ops_at   byte offset in `prog` of the op table: n_ops x 16 u32, op o's field f
//                 at word 16 o + f (hrl_learn_engine's field numbers); 0xffffffff: read no
//                 table, run the one the engine holds (the last written: an inference
//                 after the first moves no table)
//   0x30 st_at    byte offset in `prog` of the n_stores store descriptors (16 u32 each)
//   0x38 prog     64-bit address (hi at 0x3c) of the program: the n_loads load descriptors
//                 (16 u32 each) at offset 0, then wherever the offsets above say
//   0x40 cycles   read only: clock cycles of the last run, ap_start seen to ap_done
//   0x44 engine   read only: the engine's cycles of the last run (its `cycles`)
//   0x48 sat      read only: saturated outputs of the last run (the engine's `sat_count`)
//   0x4c status   read only: bit0 the engine stopped at an op out of range (`error`;
//                 the stores skipped), bit1 the array refused a beat (`fault`, never
//                 expected), bit2 a descriptor out of range (the run stopped there), bit3
//                 n_ops out of range (no engine run, no store)
//   0x50 config0  read only: R [7:0], C [15:8], NL [23:16], OW [31:24]
//   0x54 config1  read only: NMAX [15:0], BMAX [31:16]
//   0x58 config2  read only: AW [7:0], BW [15:8], BSMAX [23:16]
//   0x5c config3  read only: AMAX [7:0], TRAIN [9:8]
//   0x60 op_first the first op of the table a run writes and the engine runs (ops op_first
//                 ..n_ops-1; 0: the whole table), so one table holds several programs' ops
//                 (the SGD step's and an inference's)
//   0x68 cmd      what the run starts after its loads: 0 the engine runs ops op_first..
//                 n_ops-1 (none if n_ops is 0); TRAIN only: 1 one SGD step of
//                 hrl_learn_step, 2 its init (both nets' operand words from the master and
//                 target banks); n_ops then only sizes the op table written (0: none). A
//                 step's saturations and cycles go to 0x48 and 0x44, its st_error to bit0
//                 of 0x4c.
//
// A descriptor (64 bytes, so that each lies on a beat boundary of up to 512 bits): word 0
// the bank (loads: 0 activations, 1 weights, 2 biases, 3 deltas, the engine's h_wr_sel;
// stores: 0 activations, 1 deltas, its h_rd_sel; TRAIN only, loads: 4..7 the step's
// parameter banks master, m, v, target, one block of C words per row (columns <= C, base
// the first block); 8 the step's registers, rows of (address, value); 9 the batch, one row
// per sample of (action, reward, discount, IS weight) words; stores: 2..5 the parameter
// banks as loads 4..7; 6 the last step's TD words, one row per sample of (td, |td|); 7 the
// status row (columns <= 4): the status bits (0x4c), the saturations (0x48), the engine's
// or step's cycles (0x44), the step counter (train_steps), which an OpenCL host, unable to
// read the registers, reads from memory), 1 the matrix's base in the bank, 2 its
// row stride log2 (slog), 3 rows, 4 columns (each 0..max(NMAX, BMAX); 0 skips it), 5 and 6
// the 64-bit byte offset of its words from `prog`, 7..15 unused. Offsets, not addresses:
// an OpenCL host knows its buffers, not their device addresses, so a program is one buffer
// (one pointer argument) that refers to itself. The words are rows x
// columns u32, row major: a load takes each word's low bits (the bank's width; the host
// writes the format's words), a store writes each word sign-extended from OW bits.
//
// A run: every load in order (each matrix written row block by row block through the
// engine's host port), the op table, the engine's run (if n_ops > 0), every store in order;
// ap_done once every store's words are in memory (the write responses came back). Loads
// feed one word per cycle (a row block of L words lands as its last word arrives); a store
// moves one row block of LA words per 7 cycles (its read, the engine's 5-cycle host read,
// the push) plus the memory's write path. The host must
// place every matrix inside the engine's banks (hrl_learn_engine's depths; the program
// writer checks them), must not change the argument registers while the kernel runs, and
// must align `prog` and every offset to DW/8 bytes (XRT aligns buffers to 4 KiB).
`default_nettype none

module hrl_learn_kernel #(
    // Rows of the engine's array (hrl_learn_engine R): a power of two, 1..64.
    parameter R = 4,
    // Columns of the engine's array (hrl_learn_engine C): a power of two, 1..64.
    parameter C = 4,
    // Width of an activation word as the array reads it (hrl_learn_engine AW).
    parameter AW = 16,
    // Width of a weight and bias word (hrl_learn_engine BW).
    parameter BW = 16,
    // Widest output word (hrl_learn_engine OW); stores sign-extend it to 32 bits.
    parameter OW = 24,
    // Largest layer width (hrl_learn_engine NMAX).
    parameter NMAX = 64,
    // Largest number of layers (hrl_learn_engine NL; the op table holds 6 NL ops).
    parameter NL = 4,
    // Largest batch (hrl_learn_engine BMAX).
    parameter BMAX = 32,
    // Largest bias shift (hrl_learn_engine BSMAX).
    parameter BSMAX = 24,
    // 1: the engine is hrl_learn_step's (DQN's SGD steps, cmd 1 and 2), 2: hrl_learn_step_ddpg's
    // (DDPG's), 0: the engine alone.
    parameter TRAIN = 0,
    // Largest number of actions of the step's loss unit (its AMAX; TRAIN only). The step's
    // word formats are its defaults (hrl.fixed_point.formats' DQN or DDPG Adam formats).
    parameter AMAX = 4,
    // AXI4-Lite control address bits (Vitis: large enough for the register map).
    parameter C_S_AXI_CONTROL_ADDR_WIDTH = 7,
    // AXI4 master address bits (Vitis: 64).
    parameter C_M_AXI_GMEM_ADDR_WIDTH = 64,
    // AXI4 master data bits (32..512; Alveo memory controllers: 512).
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

    // m_axi_gmem: the program and the matrices in (R), the outputs out (W).
    output wire [0:0]  m_axi_gmem_awid,
    output wire [C_M_AXI_GMEM_ADDR_WIDTH-1:0] m_axi_gmem_awaddr,
    output wire [7:0]  m_axi_gmem_awlen,
    output wire [2:0]  m_axi_gmem_awsize,
    output wire [1:0]  m_axi_gmem_awburst,
    output wire        m_axi_gmem_awvalid,
    input  wire        m_axi_gmem_awready,
    output wire [C_M_AXI_GMEM_DATA_WIDTH-1:0] m_axi_gmem_wdata,
    output wire [C_M_AXI_GMEM_DATA_WIDTH/8-1:0] m_axi_gmem_wstrb,
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
    input  wire [C_M_AXI_GMEM_DATA_WIDTH-1:0] m_axi_gmem_rdata,
    input  wire [1:0]  m_axi_gmem_rresp,
    input  wire        m_axi_gmem_rlast,
    input  wire        m_axi_gmem_rvalid,
    output wire        m_axi_gmem_rready
);

    localparam AA = C_S_AXI_CONTROL_ADDR_WIDTH;
    localparam GA = C_M_AXI_GMEM_ADDR_WIDTH;
    localparam DW = C_M_AXI_GMEM_DATA_WIDTH;
    localparam NW = DW / 32;                 // words per beat
    localparam LOG_NW = $clog2(NW);
    // The engine's port sizes (hrl_learn_engine's localparams, the same formulas).
    localparam LA = (R > C) ? R : C;
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
    localparam NOPS = (NL > 0) ? 6 * NL : 6;
    localparam OPB = $clog2((NL > 0) ? 6 * NL : 6);  // NOPS, spelt out for yosys
    localparam FW0 = (HAB > IW) ? HAB : IW;
    localparam FW = (FW0 > 8) ? FW0 : 8;
    localparam GWW = $clog2(LA + 1);         // bits of a store group's word count
    localparam LGC_1 = (C > 1) ? $clog2(C) : 1;  // bits of a lane of C
    // hrl_learn_step's sizes (its localparams and default formats, the same formulas)
    localparam AB = (AMAX > 1) ? $clog2(AMAX) : 1;
    localparam PDEPTH = NL * (NMAX + 1) * ((NMAX + C - 1) / C);
    localparam PAB = (PDEPTH > 1) ? $clog2(PDEPTH) : 1;
    localparam VW = 24;                      // the step's value words (TD, rewards)
    localparam PW = 17;                      // its probability words (discount, IS weight)
    localparam [31:0] MAX_LOAD = (TRAIN != 0) ? 32'd9 : 32'd3;
    localparam [31:0] MAX_STORE = (TRAIN != 0) ? 32'd7 : 32'd1;

    initial begin
        if (AA < 7 || AA > 16)
            $fatal(1, "%m: C_S_AXI_CONTROL_ADDR_WIDTH=%0d must be in [7, 16]", AA);
        if (GA < 32 || GA > 64)
            $fatal(1, "%m: C_M_AXI_GMEM_ADDR_WIDTH=%0d must be in [32, 64]", GA);
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: C_M_AXI_GMEM_DATA_WIDTH=%0d must be a power of two in [32, 512]",
                   DW);
        if (IW > 15)
            $fatal(1, "%m: NMAX=%0d, BMAX=%0d: max(NMAX, BMAX) must be below 2**15", NMAX, BMAX);
        if (TRAIN < 0 || TRAIN > 2) $fatal(1, "%m: TRAIN=%0d must be 0, 1 or 2", TRAIN);
        // R, C, AW, BW, OW, NMAX, NL, BMAX, BSMAX: hrl_learn_engine's own checks.
    end

    wire rst = !ap_rst_n;

    // ------------------------------------------------------------------ registers
    // The control block (AXI4-Lite, ap_ctrl_hs, interrupts) and the argument registers;
    // word i of the map above is args[32 i +: 32], the read-only words come from ro.
    localparam [31:0] ARG_WORDS = 32'h0500_d550;   // 0x10 .. 0x3c, 0x60, 0x68
    localparam [31:0] RO_WORDS = 32'h00ff_0000;    // 0x40 .. 0x5c
    reg ap_idle_reg;
    wire ap_start_reg;
    reg [31:0] cycles_reg, eng_cycles_reg, sat_reg;
    reg [3:0] status_reg;
    localparam [7:0] CFG_R = R[7:0], CFG_C = C[7:0], CFG_NL = NL[7:0], CFG_OW = OW[7:0];
    localparam [7:0] CFG_AW = AW[7:0], CFG_BW = BW[7:0], CFG_BS = BSMAX[7:0];
    localparam [15:0] CFG_NMAX = NMAX[15:0], CFG_BMAX = BMAX[15:0];
    localparam [7:0] CFG_AMAX = AMAX[7:0];
    localparam [1:0] CFG_TRAIN = TRAIN[1:0];
    reg finish;   // the run ends this cycle (from the FSM)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [1023:0] args;   // the words of ARG_WORDS; the others are 0
    /* verilator lint_on UNUSEDSIGNAL */
    wire [1023:0] ro = {256'd0,
                        {22'd0, CFG_TRAIN, CFG_AMAX},          // 0x5c config3
                        {8'd0, CFG_BS, CFG_BW, CFG_AW},        // 0x58 config2
                        {CFG_BMAX, CFG_NMAX},                  // 0x54 config1
                        {CFG_OW, CFG_NL, CFG_C, CFG_R},        // 0x50 config0
                        {28'd0, status_reg}, sat_reg,          // 0x4c, 0x48
                        eng_cycles_reg, cycles_reg,            // 0x44, 0x40
                        512'd0};

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
    wire [31:0] nld_reg = args[32*4 +: 32];
    wire [31:0] nop_reg = args[32*6 +: 32];
    wire [31:0] nst_reg = args[32*8 +: 32];
    wire [31:0] op_at_reg = args[32*10 +: 32];
    wire [31:0] st_at_reg = args[32*12 +: 32];
    wire [63:0] prog_reg = args[32*14 +: 64];
    wire [31:0] first_reg = args[32*24 +: 32];
    wire [31:0] cmd_reg = args[32*26 +: 32];
    // The command decoded into registers (the host writes the arguments while the kernel is
    // idle, long before a run reads them): its 32-bit compares stay out of the run's states'
    // flip-flop enables.
    reg cmd_eng, cmd_init;   // an engine run (0), the step module's init (2)
    always @(posedge ap_clk) begin
        cmd_eng <= cmd_reg == 32'd0;
        cmd_init <= cmd_reg == 32'd2;
    end
    /* verilator lint_on UNUSEDSIGNAL */

    // ------------------------------------------------------------------ AXI4 master
    // One port: the program and the matrices come in one word per cycle (hrl_axi_rd, then
    // hrl_beats_to_words in groups of one word); outputs leave a row block of up to LA
    // words per group (hrl_words_to_beats, then hrl_axi_wr).
    reg rd_start, wr_start;
    reg [63:0] rd_addr, wr_addr;
    reg [31:0] rd_words, wr_words;
    /* verilator lint_off UNUSEDSIGNAL */
    wire rd_busy;      // the word counts end the reads instead
    wire cv_busy;
    /* verilator lint_on UNUSEDSIGNAL */
    wire wr_busy;
    wire [DW-1:0] rd_data, wr_data;
    wire [DW/8-1:0] wr_strb;
    wire rd_valid, rd_ready, wr_valid, wr_ready;

    // Beats for a number of words (the last beat may be partial).
    /* verilator lint_off UNUSEDSIGNAL */
    localparam [31:0] NW_M1_32 = NW - 1;
    localparam [39:0] NW_M1 = {8'd0, NW_M1_32};
    function [31:0] beats_for(input [31:0] words);
        reg [39:0] up;
        begin
            up = ({8'd0, words} + NW_M1) >> LOG_NW;
            beats_for = up[31:0];
        end
    endfunction
    /* verilator lint_on UNUSEDSIGNAL */

    hrl_axi_rd #(.ADDR_W(GA), .DW(DW)) rd_inst (
        .clk(ap_clk), .rst(rst),
        .start(rd_start), .addr(rd_addr[GA-1:0]), .count(beats_for(rd_words)),
        .busy(rd_busy), .m_data(rd_data), .m_valid(rd_valid), .m_ready(rd_ready),
        .m_axi_arid(m_axi_gmem_arid), .m_axi_araddr(m_axi_gmem_araddr),
        .m_axi_arlen(m_axi_gmem_arlen), .m_axi_arsize(m_axi_gmem_arsize),
        .m_axi_arburst(m_axi_gmem_arburst), .m_axi_arvalid(m_axi_gmem_arvalid),
        .m_axi_arready(m_axi_gmem_arready), .m_axi_rid(m_axi_gmem_rid),
        .m_axi_rdata(m_axi_gmem_rdata), .m_axi_rresp(m_axi_gmem_rresp),
        .m_axi_rlast(m_axi_gmem_rlast), .m_axi_rvalid(m_axi_gmem_rvalid),
        .m_axi_rready(m_axi_gmem_rready)
    );

    hrl_axi_wr #(.ADDR_W(GA), .DW(DW)) wr_inst (
        .clk(ap_clk), .rst(rst),
        .start(wr_start), .addr(wr_addr[GA-1:0]), .count(beats_for(wr_words)),
        .busy(wr_busy), .s_data(wr_data), .s_strb(wr_strb), .s_valid(wr_valid),
        .s_ready(wr_ready),
        .m_axi_awid(m_axi_gmem_awid), .m_axi_awaddr(m_axi_gmem_awaddr),
        .m_axi_awlen(m_axi_gmem_awlen), .m_axi_awsize(m_axi_gmem_awsize),
        .m_axi_awburst(m_axi_gmem_awburst), .m_axi_awvalid(m_axi_gmem_awvalid),
        .m_axi_awready(m_axi_gmem_awready), .m_axi_wdata(m_axi_gmem_wdata),
        .m_axi_wstrb(m_axi_gmem_wstrb), .m_axi_wlast(m_axi_gmem_wlast),
        .m_axi_wvalid(m_axi_gmem_wvalid), .m_axi_wready(m_axi_gmem_wready),
        .m_axi_bid(m_axi_gmem_bid), .m_axi_bresp(m_axi_gmem_bresp),
        .m_axi_bvalid(m_axi_gmem_bvalid), .m_axi_bready(m_axi_gmem_bready)
    );

    wire [31:0] in_word;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [0:0] in_count;   // always 1: groups of one word
    /* verilator lint_on UNUSEDSIGNAL */
    wire in_valid;
    wire in_take;

    hrl_beats_to_words #(.DW(DW), .G(1), .CW(1)) in_conv (
        .clk(ap_clk), .rst(rst), .start(rd_start), .count(rd_words), .busy(cv_busy),
        .s_data(rd_data), .s_valid(rd_valid), .s_ready(rd_ready),
        .m_words(in_word), .m_count(in_count), .m_valid(in_valid), .m_ready(in_take)
    );

    reg [32*LA-1:0] out_words;
    reg [GWW-1:0] out_count;
    wire out_valid;
    wire out_ready;

    hrl_words_to_beats #(.DW(DW), .G(LA), .CW(GWW)) out_conv (
        .clk(ap_clk), .rst(rst), .start(wr_start), .count(wr_words),
        .s_words(out_words), .s_count(out_count), .s_valid(out_valid), .s_ready(out_ready),
        .m_data(wr_data), .m_strb(wr_strb), .m_valid(wr_valid), .m_ready(wr_ready)
    );

    // ------------------------------------------------------------------ the engine
    reg eng_start;
    wire eng_busy, eng_done, eng_error, eng_fault;
    wire [31:0] eng_cycles, eng_sat;
    reg op_wr_en;
    reg [OPB-1:0] op_wr_op;
    reg [3:0] op_wr_field;
    reg [FW-1:0] op_wr_data;
    reg h_wr_en;
    reg [3:0] d_sel;               // the descriptor's bank
    reg [HAB-1:0] d_base;
    reg [4:0] d_slog;
    reg [IW-1:0] d_rows, d_cols;
    reg [IW-1:0] ii, jj;           // the element (loads) or row block (stores) at hand
    reg [IW-1:0] wj;               // the written row block's first column
    reg [IW-1:0] wi;               // its row
    reg [LA-1:0] pack_mask, wr_mask;
    reg [LA*HW-1:0] pack_data, wr_data_r;
    wire [LA*OW-1:0] h_rd_data;
    reg h_rd_en;

    // The step's ports (TRAIN = 1 or 2; tied off otherwise): registers of the run below.
    reg st_start, st_cmd;
    wire st_busy, st_done, st_error;
    wire [31:0] st_sat, st_cycles, st_steps;
    reg st_cfg_en;
    reg [11:0] st_cfg_addr;
    reg [31:0] st_cfg_data;
    reg st_bt_en;
    reg [IW-1:0] st_bt_i;
    reg [AB-1:0] st_bt_action;
    reg [VW-1:0] st_bt_reward;
    reg [PW-1:0] st_bt_discount, st_bt_weight;
    reg st_p_wr_en, st_p_rd_en;
    reg [1:0] st_p_wr_sel, st_p_rd_sel;
    reg [PAB-1:0] st_p_wr_addr, st_p_rd_addr;
    reg [C*32-1:0] st_p_wr_data;
    wire [C*32-1:0] st_p_rd_data;
    wire [VW-1:0] st_td, st_abs_td;

    generate
        if (TRAIN == 1) begin : g_step
            /* verilator lint_off UNUSEDSIGNAL */
            wire [31:0] cyc_fwd, cyc_loss, cyc_bwd, cyc_upd, cyc_tgt;  // the phases' cycles
            /* verilator lint_on UNUSEDSIGNAL */
            hrl_learn_step #(.R(R), .C(C), .AW(AW), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL),
                             .BMAX(BMAX), .BSMAX(BSMAX), .SW(32), .AMAX(AMAX)) step (
                .clk(ap_clk), .rst(rst),
                .start(eng_start), .n_ops(nop_reg[OPB:0]), .op_first(first_reg[OPB-1:0]),
                .busy(eng_busy), .done(eng_done),
                .error(eng_error), .fault(eng_fault), .cycles(eng_cycles), .sat_count(eng_sat),
                .op_wr_en(op_wr_en), .op_wr_op(op_wr_op), .op_wr_field(op_wr_field),
                .op_wr_data(op_wr_data),
                .h_wr_en(h_wr_en), .h_wr_sel(d_sel[1:0]), .h_wr_base(d_base),
                .h_wr_slog(d_slog),
                .h_wr_i(wi), .h_wr_j(wj), .h_wr_mask(wr_mask), .h_wr_data(wr_data_r),
                .h_rd_en(h_rd_en), .h_rd_sel(d_sel[0]), .h_rd_base(d_base),
                .h_rd_slog(d_slog),
                .h_rd_i(ii), .h_rd_j(jj), .h_rd_rows(d_rows), .h_rd_cols(d_cols),
                .h_rd_data(h_rd_data),
                .st_start(st_start), .st_cmd(st_cmd), .st_busy(st_busy), .st_done(st_done),
                .st_error(st_error), .st_sat(st_sat), .st_cycles(st_cycles),
                .st_cyc_fwd(cyc_fwd), .st_cyc_loss(cyc_loss), .st_cyc_bwd(cyc_bwd),
                .st_cyc_upd(cyc_upd), .st_cyc_tgt(cyc_tgt), .st_steps(st_steps),
                .st_cfg_en(st_cfg_en), .st_cfg_addr(st_cfg_addr), .st_cfg_data(st_cfg_data),
                .st_bt_en(st_bt_en), .st_bt_i(st_bt_i), .st_bt_action(st_bt_action),
                .st_bt_reward(st_bt_reward), .st_bt_discount(st_bt_discount),
                .st_bt_weight(st_bt_weight),
                .st_p_wr_en(st_p_wr_en), .st_p_wr_sel(st_p_wr_sel),
                .st_p_wr_addr(st_p_wr_addr), .st_p_wr_data(st_p_wr_data),
                .st_p_rd_en(st_p_rd_en), .st_p_rd_sel(st_p_rd_sel),
                .st_p_rd_addr(st_p_rd_addr), .st_p_rd_data(st_p_rd_data),
                .st_td_i(ii), .st_td(st_td), .st_abs_td(st_abs_td));
        end else if (TRAIN == 2) begin : g_step_ddpg
            /* verilator lint_off UNUSEDSIGNAL */
            wire [31:0] cyc_fwd, cyc_loss, cyc_clip, cyc_bwd, cyc_upd, cyc_tgt;
            wire unused_action = ^st_bt_action;  // DDPG's actions are the critic's input
            /* verilator lint_on UNUSEDSIGNAL */
            hrl_learn_step_ddpg #(.R(R), .C(C), .AW(AW), .BW(BW), .OW(OW), .NMAX(NMAX),
                                  .NL(NL), .BMAX(BMAX), .BSMAX(BSMAX), .SW(32),
                                  .AMAX(AMAX)) step (
                .clk(ap_clk), .rst(rst),
                .start(eng_start), .n_ops(nop_reg[OPB:0]), .op_first(first_reg[OPB-1:0]),
                .busy(eng_busy), .done(eng_done),
                .error(eng_error), .fault(eng_fault), .cycles(eng_cycles), .sat_count(eng_sat),
                .op_wr_en(op_wr_en), .op_wr_op(op_wr_op), .op_wr_field(op_wr_field),
                .op_wr_data(op_wr_data),
                .h_wr_en(h_wr_en), .h_wr_sel(d_sel[1:0]), .h_wr_base(d_base),
                .h_wr_slog(d_slog),
                .h_wr_i(wi), .h_wr_j(wj), .h_wr_mask(wr_mask), .h_wr_data(wr_data_r),
                .h_rd_en(h_rd_en), .h_rd_sel(d_sel[0]), .h_rd_base(d_base),
                .h_rd_slog(d_slog),
                .h_rd_i(ii), .h_rd_j(jj), .h_rd_rows(d_rows), .h_rd_cols(d_cols),
                .h_rd_data(h_rd_data),
                .st_start(st_start), .st_cmd(st_cmd), .st_busy(st_busy), .st_done(st_done),
                .st_error(st_error), .st_sat(st_sat), .st_cycles(st_cycles),
                .st_cyc_fwd(cyc_fwd), .st_cyc_loss(cyc_loss), .st_cyc_clip(cyc_clip),
                .st_cyc_bwd(cyc_bwd), .st_cyc_upd(cyc_upd), .st_cyc_tgt(cyc_tgt),
                .st_steps(st_steps),
                .st_cfg_en(st_cfg_en), .st_cfg_addr(st_cfg_addr), .st_cfg_data(st_cfg_data),
                .st_bt_en(st_bt_en), .st_bt_i(st_bt_i), .st_bt_reward(st_bt_reward),
                .st_bt_discount(st_bt_discount), .st_bt_weight(st_bt_weight),
                .st_p_wr_en(st_p_wr_en), .st_p_wr_sel(st_p_wr_sel),
                .st_p_wr_addr(st_p_wr_addr), .st_p_wr_data(st_p_wr_data),
                .st_p_rd_en(st_p_rd_en), .st_p_rd_sel(st_p_rd_sel),
                .st_p_rd_addr(st_p_rd_addr), .st_p_rd_data(st_p_rd_data),
                .st_td_i(ii), .st_td(st_td), .st_abs_td(st_abs_td));
        end else begin : g_engine
            hrl_learn_engine #(.R(R), .C(C), .AW(AW), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL),
                               .BMAX(BMAX), .BSMAX(BSMAX), .SW(32)) engine (
                .clk(ap_clk), .rst(rst),
                .start(eng_start), .n_ops(nop_reg[OPB:0]), .op_first(first_reg[OPB-1:0]),
                .busy(eng_busy), .done(eng_done),
                .error(eng_error), .fault(eng_fault), .cycles(eng_cycles), .sat_count(eng_sat),
                .op_wr_en(op_wr_en), .op_wr_op(op_wr_op), .op_wr_field(op_wr_field),
                .op_wr_data(op_wr_data),
                .h_wr_en(h_wr_en), .h_wr_sel(d_sel[1:0]), .h_wr_base(d_base),
                .h_wr_slog(d_slog),
                .h_wr_i(wi), .h_wr_j(wj), .h_wr_mask(wr_mask), .h_wr_data(wr_data_r),
                .h_rd_en(h_rd_en), .h_rd_sel(d_sel[0]), .h_rd_base(d_base),
                .h_rd_slog(d_slog),
                .h_rd_i(ii), .h_rd_j(jj), .h_rd_rows(d_rows), .h_rd_cols(d_cols),
                .h_rd_data(h_rd_data)
            );
            assign st_busy = 1'b0;
            assign st_done = 1'b0;
            assign st_error = 1'b0;
            assign st_sat = 32'd0;
            assign st_cycles = 32'd0;
            assign st_steps = 32'd0;
            assign st_p_rd_data = {(C*32){1'b0}};
            assign st_td = {VW{1'b0}};
            assign st_abs_td = {VW{1'b0}};
            /* verilator lint_off UNUSEDSIGNAL */
            wire unused_step = ^{st_start, st_cmd, st_cfg_en, st_cfg_addr, st_cfg_data,
                                 st_bt_en, st_bt_i, st_bt_action, st_bt_reward,
                                 st_bt_discount, st_bt_weight, st_p_wr_en, st_p_rd_en,
                                 st_p_wr_sel, st_p_rd_sel, st_p_wr_addr, st_p_rd_addr,
                                 st_p_wr_data};
            /* verilator lint_on UNUSEDSIGNAL */
        end
    endgenerate

    // A row block read back, sign-extended to 32-bit words.
    wire [32*LA-1:0] rd_words32;
    genvar g;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_sext
            if (OW < 32) begin : g_ext
                assign rd_words32[32*g +: 32] = {{(32-OW){h_rd_data[g*OW+OW-1]}},
                                                 h_rd_data[g*OW +: OW]};
            end else begin : g_full
                assign rd_words32[32*g +: 32] = h_rd_data[g*OW +: 32];
            end
        end
    endgenerate

    // ------------------------------------------------------------------ the run
    localparam [3:0] S_IDLE = 4'd0, S_DESC = 4'd1, S_DESC_W = 4'd2, S_LOAD = 4'd3,
                     S_OPS = 4'd4, S_RUN = 4'd5, S_RUN_W = 4'd6, S_ST_RD = 4'd7,
                     S_ST_W = 4'd8, S_ST_PUSH = 4'd10, S_ST_WAIT = 4'd11, S_NEXT = 4'd12,
                     S_DONE = 4'd13, S_NEXT2 = 4'd9;
    // A store's read waits in S_ST_W for the engine's host read (5 cycles: its port's
    // register and its bank's 4): ST_WAIT + 1 cycles there, the words in the push's cycle.
    localparam [2:0] ST_WAIT = 3'd4;
    reg [2:0] st_wait;
    (* fsm_encoding = "one-hot" *) reg [3:0] state;
    reg storing;                   // the descriptors at hand are stores
    reg [31:0] di;                 // the descriptor at hand
    reg [31:0] wc;                 // words of the read at hand taken so far
    reg [31:0] ops_last;           // the op table's last word (wc's), set as its read starts
    reg [31:0] d_w [0:6];          // the descriptor's words 0..6
    reg out_full;                  // out_words holds a row block to push
    assign out_valid = out_full && state == S_ST_PUSH;

    localparam [31:0] DMAX32 = DMAX;
    localparam [31:0] KEEP_OPS = 32'hFFFF_FFFF;   // ops_at: run the table the engine holds
    localparam [31:0] NOPS32 = NOPS;
    localparam [31:0] CMD_MAX = (TRAIN != 0) ? 32'd2 : 32'd0;
    wire [31:0] n_table = nop_reg - first_reg;     // ops of the table a run writes
    reg [PAB-1:0] p_base;                          // a parameter bank's first block
    reg [C*32-1:0] p_pack;                         // a parameter block being gathered
    // A word into its lane: a decoder of `lane` per lane (loops over constant lanes), not
    // a part-select at a computed offset, which synthesizes into a shifter as wide as the
    // block behind the index's arithmetic.
    integer q;
    reg [31:0] x_w [0:3];                          // a register's or a sample's words
    wire [IW+1:0] jj_x = {2'b00, jj};
    wire [PAB+IW-1:0] ii_px = {{PAB{1'b0}}, ii};   // a row as a block address
    // A store's row block from the parameter banks (C <= LA words) or from the TD and
    // status rows (words jj.. of a 4-word row).
    wire [32*LA-1:0] par_words = {{(32*(LA-C)){1'b0}}, st_p_rd_data};
    wire [31:0] x_row [0:3];
    assign x_row[0] = (d_sel == 4'd6) ? {{(32-VW){st_td[VW-1]}}, st_td} : {28'd0, status_reg};
    assign x_row[1] = (d_sel == 4'd6) ? {{(32-VW){st_abs_td[VW-1]}}, st_abs_td} : sat_reg;
    assign x_row[2] = (d_sel == 4'd6) ? 32'd0 : eng_cycles_reg;
    assign x_row[3] = (d_sel == 4'd6) ? 32'd0 : st_steps;
    wire [32*LA-1:0] x_words;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_xw
            wire [IW+7:0] xi = {8'd0, jj} + g;
            assign x_words[32*g +: 32] = (xi < 4) ? x_row[xi[1:0]] : 32'd0;
        end
    endgenerate
    localparam [IW-1:0] LAI = LA[IW-1:0];
    localparam [IW-1:0] CI = C[IW-1:0];
    // weight, bias and parameter banks: C lanes
    wire lanes_c = d_sel == 4'd1 || d_sel == 4'd2 || (d_sel >= 4'd4 && d_sel <= 4'd7);
    wire eng_bank = d_sel <= 4'd3;                      // a load into the engine's banks
    wire par_load = d_sel >= 4'd4 && d_sel <= 4'd7;    // ... into a parameter bank
    wire [IW-1:0] lane_mask = lanes_c ? CI - 1'b1 : LAI - 1'b1;
    wire [IW-1:0] lane = jj & lane_mask;
    wire [31:0]   lane32 = {{(32-IW){1'b0}}, lane};                 // (the loops' compares)
    wire [31:0]   lane_c32 = {{(32-LGC_1){1'b0}}, lane[LGC_1-1:0]};  // a lane of C
    wire last_col = jj + 1'b1 == d_cols;
    wire block_end = last_col || lane == lane_mask;
    // Words of the matrix (IW <= 15: the product fits 30 bits).
    wire [2*IW-1:0] d_words = d_w[3][IW-1:0] * d_w[4][IW-1:0];
    wire [31:0] d_words32 = {{(32-2*IW){1'b0}}, d_words};
    // The descriptor words in range: the bank, rows and columns (a matrix of max(NMAX,
    // BMAX) rows and columns at most), the stride (a 32-bit shift fits only 5 bits).
    // Parameter banks: blocks base..base+rows-1 of PDEPTH, rows of at most C words; the
    // step's registers 2 words a row, the batch 4, the TD rows 2, the status row 4.
    localparam [31:0] PDEPTH32 = PDEPTH;
    localparam [31:0] C32 = C;
    wire d_par = storing ? (d_w[0] >= 32'd2 && d_w[0] <= 32'd5)
                         : (d_w[0] >= 32'd4 && d_w[0] <= 32'd7);
    wire [31:0] d_cols_max = d_par ? C32
                           : (!storing && d_w[0] == 32'd8) ? 32'd2
                           : (!storing && d_w[0] == 32'd9) ? 32'd4
                           : (storing && d_w[0] == 32'd6) ? 32'd2
                           : (storing && d_w[0] == 32'd7) ? 32'd4 : DMAX32;
    // The checks are registered in three stages as the descriptor's last words (7..15, which
    // are dropped) arrive, so S_DESC reads one flag: no path runs from the words through the
    // compares into the run's state.
    reg dk_sel, dk_rows, dk_cols, dk_slog, dk_par, dk_pbase, dk_pend, dk_base, desc_ok;
    reg [31:0] d_cols_max_r;
    reg [31:0] d_words32_r;
    always @(posedge ap_clk) begin
        d_cols_max_r <= d_cols_max;
        d_words32_r <= d_words32;
        dk_sel <= d_w[0] <= (storing ? MAX_STORE : MAX_LOAD);
        dk_rows <= d_w[3] <= DMAX32;
        dk_cols <= d_w[4] <= d_cols_max_r;
        dk_slog <= d_w[2] < 32'd32;
        dk_par <= d_par;
        dk_pbase <= d_w[1] < PDEPTH32;
        dk_pend <= d_w[1] + d_w[3] <= PDEPTH32;
        dk_base <= d_w[1] < (32'd1 << HAB);
        desc_ok <= dk_sel && dk_rows && dk_cols && dk_slog
                   && (dk_par ? dk_pbase && dk_pend : dk_base);
    end
    // S_NEXT's decision, registered (S_NEXT2 takes it): the counts and the run's words are
    // 32-bit registers, and their compares reach no state register in the cycle they are made.
    reg nx_ld, nx_ops, nx_bad, nx_keep, nx_st, nx_done;
    always @(posedge ap_clk) begin
        nx_ld <= !storing && di < nld_reg;
        nx_ops <= !storing && (nop_reg != 32'd0 || cmd_reg != 32'd0);
        nx_bad <= nop_reg > NOPS32 || cmd_reg > CMD_MAX
                  || (nop_reg != 32'd0 && first_reg >= nop_reg);
        nx_keep <= op_at_reg == KEEP_OPS || nop_reg == 32'd0;
        nx_st <= storing && di < nst_reg;
        nx_done <= storing || nst_reg == 32'd0;
    end
    // Loads take every word of the read; descriptors words 0..6 (the rest are dropped).
    assign in_take = state == S_DESC_W || state == S_LOAD || state == S_OPS;
    wire in_fire = in_valid && in_take;
    // Words of the row block at hand (LA may exceed max(NMAX, BMAX): 8 more bits).
    localparam [IW+7:0] LA8 = LA[IW+7:0];
    wire [IW+7:0] st_left = {8'd0, d_cols} - {8'd0, jj};
    wire [IW+7:0] st_n = (st_left < LA8) ? st_left : LA8;

    always @(posedge ap_clk) begin
        finish <= 1'b0;
        rd_start <= 1'b0;
        wr_start <= 1'b0;
        eng_start <= 1'b0;
        op_wr_en <= 1'b0;
        h_wr_en <= 1'b0;
        h_rd_en <= 1'b0;
        st_start <= 1'b0;
        st_cfg_en <= 1'b0;
        st_bt_en <= 1'b0;
        st_p_wr_en <= 1'b0;
        st_p_rd_en <= 1'b0;
        if (state != S_IDLE) cycles_reg <= cycles_reg + 32'd1;
        if (finish) ap_idle_reg <= 1'b1;   // with ap_done, not a cycle before
        if (in_fire) wc <= wc + 32'd1;
        case (state)
            S_IDLE: if (ap_start_reg && !finish) begin
                ap_idle_reg <= 1'b0;
                cycles_reg <= 32'd1;
                status_reg <= 4'd0;
                eng_cycles_reg <= 32'd0;
                sat_reg <= 32'd0;
                storing <= 1'b0;
                di <= 32'd0;
                state <= S_NEXT;
            end
            // The next descriptor of the list at hand, or the next part of the run: S_NEXT
            // registers the decision's compares (nx_*), S_NEXT2 takes it.
            S_NEXT: state <= S_NEXT2;
            S_NEXT2: begin
                if (nx_ld) begin
                    rd_addr <= prog_reg + {26'd0, di, 6'd0};
                    rd_words <= 32'd16;
                    rd_start <= 1'b1;
                    wc <= 32'd0;
                    state <= S_DESC_W;
                end else if (nx_ops) begin
                    storing <= 1'b1;
                    di <= 32'd0;
                    if (nx_bad) begin
                        status_reg[3] <= 1'b1;
                        state <= S_DONE;
                    end else if (nx_keep) begin
                        state <= S_RUN;   // the table the engine holds
                    end else begin
                        rd_addr <= prog_reg + {32'd0, op_at_reg};
                        rd_words <= {n_table[27:0], 4'd0};
                        ops_last <= {n_table[27:0], 4'd0} - 32'd1;
                        rd_start <= 1'b1;
                        wc <= 32'd0;
                        state <= S_OPS;
                    end
                end else if (nx_st) begin
                    rd_addr <= prog_reg + {32'd0, st_at_reg} + {26'd0, di, 6'd0};
                    rd_words <= 32'd16;
                    rd_start <= 1'b1;
                    wc <= 32'd0;
                    state <= S_DESC_W;
                end else if (nx_done) begin
                    state <= S_DONE;
                end else begin
                    storing <= 1'b1;   // no ops: straight to the stores
                    di <= 32'd0;
                    state <= S_NEXT;
                end
            end
            S_DESC_W: begin
                if (in_fire && wc < 32'd7) d_w[wc[2:0]] <= in_word;
                if (in_fire && wc == 32'd15) state <= S_DESC;
            end
            S_DESC: begin
                d_sel <= d_w[0][3:0];
                d_base <= d_w[1][HAB-1:0];
                p_base <= d_w[1][PAB-1:0];
                d_slog <= d_w[2][4:0];
                d_rows <= d_w[3][IW-1:0];
                d_cols <= d_w[4][IW-1:0];
                ii <= {IW{1'b0}};
                jj <= {IW{1'b0}};
                pack_mask <= {LA{1'b0}};
                out_full <= 1'b0;
                di <= di + 32'd1;
                if (!desc_ok) begin
                    status_reg[2] <= 1'b1;
                    state <= S_DONE;
                end else if (d_w[3] == 32'd0 || d_w[4] == 32'd0) begin
                    state <= S_NEXT;
                end else if (!storing) begin
                    rd_addr <= prog_reg + {d_w[6], d_w[5]};
                    rd_words <= d_words32_r;
                    rd_start <= 1'b1;
                    state <= S_LOAD;
                end else begin
                    wr_addr <= prog_reg + {d_w[6], d_w[5]};
                    wr_words <= d_words32_r;
                    wr_start <= 1'b1;
                    state <= S_ST_RD;
                end
            end
            // A word into its lane; a full (or the row's last) row block into the bank.
            S_LOAD: if (in_fire) begin
                for (q = 0; q < LA; q = q + 1)
                    if (lane32 == q) pack_data[q*HW +: HW] <= in_word[HW-1:0];
                for (q = 0; q < C; q = q + 1)
                    if (par_load && lane_c32 == q) p_pack[q*32 +: 32] <= in_word;
                x_w[jj_x[1:0]] <= in_word;
                if (!eng_bank) begin
                    // the step's words: a block, a register, a sample, at the row's end
                    if (last_col) begin
                        st_p_wr_en <= par_load;
                        st_p_wr_sel <= d_sel[1:0];
                        st_p_wr_addr <= p_base + ii_px[PAB-1:0];
                        st_p_wr_data <= p_pack;
                        for (q = 0; q < C; q = q + 1)
                            if (lane_c32 == q) st_p_wr_data[q*32 +: 32] <= in_word;
                        st_cfg_en <= d_sel == 4'd8;
                        st_cfg_addr <= x_w[0][11:0];
                        st_cfg_data <= in_word;
                        st_bt_en <= d_sel == 4'd9;
                        st_bt_i <= ii;
                        st_bt_action <= x_w[0][AB-1:0];
                        st_bt_reward <= x_w[1][VW-1:0];
                        st_bt_discount <= x_w[2][PW-1:0];
                        st_bt_weight <= in_word[PW-1:0];
                        p_pack <= {(C*32){1'b0}};
                    end
                end else if (block_end) begin
                    h_wr_en <= 1'b1;
                    wi <= ii;
                    wj <= jj & ~lane_mask;
                    wr_mask <= pack_mask | ({{(LA-1){1'b0}}, 1'b1} << lane);
                    wr_data_r <= pack_data;
                    for (q = 0; q < LA; q = q + 1)
                        if (lane32 == q) wr_data_r[q*HW +: HW] <= in_word[HW-1:0];
                    pack_mask <= {LA{1'b0}};
                end else begin
                    pack_mask <= pack_mask | ({{(LA-1){1'b0}}, 1'b1} << lane);
                end
                if (last_col) begin
                    jj <= {IW{1'b0}};
                    ii <= ii + 1'b1;
                    if (ii + 1'b1 == d_rows) state <= S_NEXT;
                end else begin
                    jj <= jj + 1'b1;
                end
            end
            // The op table, word 16 o + f to op o's field f.
            S_OPS: if (in_fire) begin
                op_wr_en <= 1'b1;
                op_wr_op <= first_reg[OPB-1:0] + wc[OPB+3:4];
                op_wr_field <= wc[3:0];
                op_wr_data <= in_word[FW-1:0];
                if (wc == ops_last) state <= S_RUN;
            end
            S_RUN: begin
                eng_start <= cmd_eng;
                st_start <= !cmd_eng;
                st_cmd <= cmd_init;
                state <= S_RUN_W;
            end
            S_RUN_W: if (cmd_eng && eng_done) begin
                eng_cycles_reg <= eng_cycles;
                sat_reg <= eng_sat;
                status_reg[1:0] <= {eng_fault, eng_error};
                state <= eng_error ? S_DONE : S_NEXT;   // no store of what did not run
            end else if (!cmd_eng && st_done) begin
                eng_cycles_reg <= st_cycles;
                sat_reg <= st_sat;
                status_reg[0] <= st_error;
                state <= st_error ? S_DONE : S_NEXT;
            end
            // A store: row block (ii, jj) read (5 cycles: the engine's host port), pushed,
            // the next one.
            S_ST_RD: begin
                h_rd_en <= d_sel <= 4'd1;
                st_p_rd_en <= d_sel >= 4'd2 && d_sel <= 4'd5;
                st_p_rd_sel <= d_sel[1:0] - 2'd2;
                st_p_rd_addr <= p_base + ii_px[PAB-1:0];
                st_wait <= ST_WAIT;
                state <= S_ST_W;
            end
            S_ST_W: if (st_wait == 3'd0) state <= S_ST_PUSH; else st_wait <= st_wait - 3'd1;
            S_ST_PUSH: begin
                if (!out_full) begin
                    out_words <= (d_sel <= 4'd1) ? rd_words32
                               : (d_sel <= 4'd5) ? par_words : x_words;
                    out_count <= st_n[GWW-1:0];
                    out_full <= 1'b1;
                end else if (out_ready) begin
                    out_full <= 1'b0;
                    if ({8'd0, jj} + LA8 >= {8'd0, d_cols}) begin
                        jj <= {IW{1'b0}};
                        ii <= ii + 1'b1;
                        state <= (ii + 1'b1 == d_rows) ? S_ST_WAIT : S_ST_RD;
                    end else begin
                        jj <= jj + LAI;
                        state <= S_ST_RD;
                    end
                end
            end
            // Every word of the store acknowledged by the memory.
            S_ST_WAIT: if (!wr_busy) state <= S_NEXT;
            S_DONE: begin
                finish <= 1'b1;
                state <= S_IDLE;
            end
            default: state <= S_IDLE;
        endcase
        if (rst) begin
            state <= S_IDLE;
            ap_idle_reg <= 1'b1;
            cycles_reg <= 32'd0;
            eng_cycles_reg <= 32'd0;
            sat_reg <= 32'd0;
            status_reg <= 4'd0;
            out_full <= 1'b0;
            storing <= 1'b0;
            di <= 32'd0;
            wc <= 32'd0;
        end
    end

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused = ^{eng_busy, st_n, st_busy, n_table[31:28], jj_x, ii_px};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
