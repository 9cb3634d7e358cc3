// hrl_learn_kernel_sim: simulation top of the learner's kernel on the rtl-sim OpenCL device --
// hrl_learn_kernel with its AXI4 master connected to the Verilog memory model
// (hrl_sim_axi_ram, port 0; its read-only port 1 idle), so that the host side
// (hrl/replay/backends/_rtl_server.py) drives only s_axi_control and touches the memory
// through the simulator, and no Python runs per clock cycle while the kernel works. The
// kernel's own testbench (sim/hrl_learn_kernel/) uses cocotbext-axi models instead.
`default_nettype none

module hrl_learn_kernel_sim #(
    // The engine's parameters, see hrl_learn_kernel / hrl_learn_engine.
    parameter R = 4,
    parameter C = 4,
    parameter AW = 16,
    parameter BW = 16,
    parameter OW = 24,
    parameter NMAX = 64,
    parameter NL = 4,
    parameter BMAX = 32,
    parameter BSMAX = 24,
    // hrl_learn_kernel's TRAIN (1: the SGD step's module) and AMAX (its loss unit's lanes).
    parameter TRAIN = 0,
    parameter AMAX = 4,
    // log2 of the memory model's size in 32-bit words.
    parameter MEM_AW = 19,
    // Data bits of the kernel's AXI4 master.
    parameter DW = 512
) (
    input  wire        ap_clk,
    input  wire        ap_rst_n,
    /* verilator lint_off SYMRSVDWORD */
    output wire        interrupt,
    /* verilator lint_on SYMRSVDWORD */
    input  wire [AA-1:0] s_axi_control_awaddr,
    input  wire s_axi_control_awvalid,
    output wire s_axi_control_awready,
    input  wire [31:0] s_axi_control_wdata,
    input  wire [3:0] s_axi_control_wstrb,
    input  wire s_axi_control_wvalid,
    output wire s_axi_control_wready,
    output wire [1:0] s_axi_control_bresp,
    output wire s_axi_control_bvalid,
    input  wire s_axi_control_bready,
    input  wire [AA-1:0] s_axi_control_araddr,
    input  wire s_axi_control_arvalid,
    output wire s_axi_control_arready,
    output wire [31:0] s_axi_control_rdata,
    output wire [1:0] s_axi_control_rresp,
    output wire s_axi_control_rvalid,
    input  wire s_axi_control_rready
);
    localparam AA = 7;

    wire [0:0] gmem_awid;
    wire [63:0] gmem_awaddr;
    wire [7:0] gmem_awlen;
    wire [2:0] gmem_awsize;
    wire [1:0] gmem_awburst;
    wire gmem_awvalid;
    wire gmem_awready;
    wire [DW-1:0] gmem_wdata;
    wire [DW/8-1:0] gmem_wstrb;
    wire gmem_wlast;
    wire gmem_wvalid;
    wire gmem_wready;
    wire [0:0] gmem_bid;
    wire [1:0] gmem_bresp;
    wire gmem_bvalid;
    wire gmem_bready;
    wire [0:0] gmem_arid;
    wire [63:0] gmem_araddr;
    wire [7:0] gmem_arlen;
    wire [2:0] gmem_arsize;
    wire [1:0] gmem_arburst;
    wire gmem_arvalid;
    wire gmem_arready;
    wire [0:0] gmem_rid;
    wire [DW-1:0] gmem_rdata;
    wire [1:0] gmem_rresp;
    wire gmem_rlast;
    wire gmem_rvalid;
    wire gmem_rready;
    // port 1 of the memory (read only) is not used
    /* verilator lint_off UNUSEDSIGNAL */
    wire p1_arready, p1_rlast, p1_rvalid;
    wire [0:0] p1_rid;
    wire [1:0] p1_rresp;
    wire [DW-1:0] p1_rdata;
    /* verilator lint_on UNUSEDSIGNAL */

    hrl_learn_kernel #(.R(R), .C(C), .AW(AW), .BW(BW), .OW(OW), .NMAX(NMAX), .NL(NL),
                       .BMAX(BMAX), .BSMAX(BSMAX), .TRAIN(TRAIN), .AMAX(AMAX),
                       .C_M_AXI_GMEM_DATA_WIDTH(DW)) kernel_inst (
        .ap_clk(ap_clk),
        .ap_rst_n(ap_rst_n),
        .interrupt(interrupt),
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
        .m_axi_gmem_awid(gmem_awid),
        .m_axi_gmem_awaddr(gmem_awaddr),
        .m_axi_gmem_awlen(gmem_awlen),
        .m_axi_gmem_awsize(gmem_awsize),
        .m_axi_gmem_awburst(gmem_awburst),
        .m_axi_gmem_awvalid(gmem_awvalid),
        .m_axi_gmem_awready(gmem_awready),
        .m_axi_gmem_wdata(gmem_wdata),
        .m_axi_gmem_wstrb(gmem_wstrb),
        .m_axi_gmem_wlast(gmem_wlast),
        .m_axi_gmem_wvalid(gmem_wvalid),
        .m_axi_gmem_wready(gmem_wready),
        .m_axi_gmem_bid(gmem_bid),
        .m_axi_gmem_bresp(gmem_bresp),
        .m_axi_gmem_bvalid(gmem_bvalid),
        .m_axi_gmem_bready(gmem_bready),
        .m_axi_gmem_arid(gmem_arid),
        .m_axi_gmem_araddr(gmem_araddr),
        .m_axi_gmem_arlen(gmem_arlen),
        .m_axi_gmem_arsize(gmem_arsize),
        .m_axi_gmem_arburst(gmem_arburst),
        .m_axi_gmem_arvalid(gmem_arvalid),
        .m_axi_gmem_arready(gmem_arready),
        .m_axi_gmem_rid(gmem_rid),
        .m_axi_gmem_rdata(gmem_rdata),
        .m_axi_gmem_rresp(gmem_rresp),
        .m_axi_gmem_rlast(gmem_rlast),
        .m_axi_gmem_rvalid(gmem_rvalid),
        .m_axi_gmem_rready(gmem_rready)
    );

    hrl_sim_axi_ram #(.MEM_AW(MEM_AW), .ADDR_W(64), .DW(DW)) ram_inst (
        .clk(ap_clk),
        .rst(!ap_rst_n),
        .s0_axi_awid(gmem_awid),
        .s0_axi_awaddr(gmem_awaddr),
        .s0_axi_awlen(gmem_awlen),
        .s0_axi_awsize(gmem_awsize),
        .s0_axi_awburst(gmem_awburst),
        .s0_axi_awvalid(gmem_awvalid),
        .s0_axi_awready(gmem_awready),
        .s0_axi_wdata(gmem_wdata),
        .s0_axi_wstrb(gmem_wstrb),
        .s0_axi_wlast(gmem_wlast),
        .s0_axi_wvalid(gmem_wvalid),
        .s0_axi_wready(gmem_wready),
        .s0_axi_bid(gmem_bid),
        .s0_axi_bresp(gmem_bresp),
        .s0_axi_bvalid(gmem_bvalid),
        .s0_axi_bready(gmem_bready),
        .s0_axi_arid(gmem_arid),
        .s0_axi_araddr(gmem_araddr),
        .s0_axi_arlen(gmem_arlen),
        .s0_axi_arsize(gmem_arsize),
        .s0_axi_arburst(gmem_arburst),
        .s0_axi_arvalid(gmem_arvalid),
        .s0_axi_arready(gmem_arready),
        .s0_axi_rid(gmem_rid),
        .s0_axi_rdata(gmem_rdata),
        .s0_axi_rresp(gmem_rresp),
        .s0_axi_rlast(gmem_rlast),
        .s0_axi_rvalid(gmem_rvalid),
        .s0_axi_rready(gmem_rready),
        .s1_axi_arid(1'b0),
        .s1_axi_araddr(64'd0),
        .s1_axi_arlen(8'd0),
        .s1_axi_arsize(3'd0),
        .s1_axi_arburst(2'd1),
        .s1_axi_arvalid(1'b0),
        .s1_axi_arready(p1_arready),
        .s1_axi_rid(p1_rid),
        .s1_axi_rdata(p1_rdata),
        .s1_axi_rresp(p1_rresp),
        .s1_axi_rlast(p1_rlast),
        .s1_axi_rvalid(p1_rvalid),
        .s1_axi_rready(1'b1)
    );

endmodule

`default_nettype wire
