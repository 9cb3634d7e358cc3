// hrl_rmm_kernel_sim: simulation top of the rtl-sim OpenCL device -- the kernel with its two
// AXI4 masters connected to a Verilog memory model (hrl_sim_axi_ram), so that the host side
// (hrl/replay/backends/_rtl_server.py) drives only s_axi_control and touches the memory
// through the simulator, and no Python runs per clock cycle while the kernel works.
// The testbench of the kernel itself (sim/test_hrl_rmm_kernel.py) uses cocotbext-axi
// models on the bare kernel instead.
`default_nettype none

module hrl_rmm_kernel_sim #(
    // Tree parameters, see hrl_rmm.
    parameter K = 4,
    parameter D = 4,
    parameter P = 1,
    parameter W = 32,
    // log2 of the memory model's size in 32-bit words.
    parameter MEM_AW = 21,
    // Data bits of the kernel's two AXI4 masters.
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

    wire [0:0] gmem0_awid;
    wire [63:0] gmem0_awaddr;
    wire [7:0] gmem0_awlen;
    wire [2:0] gmem0_awsize;
    wire [1:0] gmem0_awburst;
    wire [0:0] gmem0_awvalid;
    wire [0:0] gmem0_awready;
    wire [DW-1:0] gmem0_wdata;
    wire [DW/8-1:0] gmem0_wstrb;
    wire [0:0] gmem0_wlast;
    wire [0:0] gmem0_wvalid;
    wire [0:0] gmem0_wready;
    wire [0:0] gmem0_bid;
    wire [1:0] gmem0_bresp;
    wire [0:0] gmem0_bvalid;
    wire [0:0] gmem0_bready;
    wire [0:0] gmem0_arid;
    wire [63:0] gmem0_araddr;
    wire [7:0] gmem0_arlen;
    wire [2:0] gmem0_arsize;
    wire [1:0] gmem0_arburst;
    wire [0:0] gmem0_arvalid;
    wire [0:0] gmem0_arready;
    wire [0:0] gmem0_rid;
    wire [DW-1:0] gmem0_rdata;
    wire [1:0] gmem0_rresp;
    wire [0:0] gmem0_rlast;
    wire [0:0] gmem0_rvalid;
    wire [0:0] gmem0_rready;
    wire [0:0] gmem1_arid;
    wire [63:0] gmem1_araddr;
    wire [7:0] gmem1_arlen;
    wire [2:0] gmem1_arsize;
    wire [1:0] gmem1_arburst;
    wire [0:0] gmem1_arvalid;
    wire [0:0] gmem1_arready;
    wire [0:0] gmem1_rid;
    wire [DW-1:0] gmem1_rdata;
    wire [1:0] gmem1_rresp;
    wire [0:0] gmem1_rlast;
    wire [0:0] gmem1_rvalid;
    wire [0:0] gmem1_rready;

    hrl_rmm_kernel #(.K(K), .D(D), .P(P), .W(W), .C_M_AXI_GMEM_DATA_WIDTH(DW)) kernel_inst (
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
        .m_axi_gmem0_awid(gmem0_awid),
        .m_axi_gmem0_awaddr(gmem0_awaddr),
        .m_axi_gmem0_awlen(gmem0_awlen),
        .m_axi_gmem0_awsize(gmem0_awsize),
        .m_axi_gmem0_awburst(gmem0_awburst),
        .m_axi_gmem0_awvalid(gmem0_awvalid),
        .m_axi_gmem0_awready(gmem0_awready),
        .m_axi_gmem0_wdata(gmem0_wdata),
        .m_axi_gmem0_wstrb(gmem0_wstrb),
        .m_axi_gmem0_wlast(gmem0_wlast),
        .m_axi_gmem0_wvalid(gmem0_wvalid),
        .m_axi_gmem0_wready(gmem0_wready),
        .m_axi_gmem0_bid(gmem0_bid),
        .m_axi_gmem0_bresp(gmem0_bresp),
        .m_axi_gmem0_bvalid(gmem0_bvalid),
        .m_axi_gmem0_bready(gmem0_bready),
        .m_axi_gmem0_arid(gmem0_arid),
        .m_axi_gmem0_araddr(gmem0_araddr),
        .m_axi_gmem0_arlen(gmem0_arlen),
        .m_axi_gmem0_arsize(gmem0_arsize),
        .m_axi_gmem0_arburst(gmem0_arburst),
        .m_axi_gmem0_arvalid(gmem0_arvalid),
        .m_axi_gmem0_arready(gmem0_arready),
        .m_axi_gmem0_rid(gmem0_rid),
        .m_axi_gmem0_rdata(gmem0_rdata),
        .m_axi_gmem0_rresp(gmem0_rresp),
        .m_axi_gmem0_rlast(gmem0_rlast),
        .m_axi_gmem0_rvalid(gmem0_rvalid),
        .m_axi_gmem0_rready(gmem0_rready),
        .m_axi_gmem1_arid(gmem1_arid),
        .m_axi_gmem1_araddr(gmem1_araddr),
        .m_axi_gmem1_arlen(gmem1_arlen),
        .m_axi_gmem1_arsize(gmem1_arsize),
        .m_axi_gmem1_arburst(gmem1_arburst),
        .m_axi_gmem1_arvalid(gmem1_arvalid),
        .m_axi_gmem1_arready(gmem1_arready),
        .m_axi_gmem1_rid(gmem1_rid),
        .m_axi_gmem1_rdata(gmem1_rdata),
        .m_axi_gmem1_rresp(gmem1_rresp),
        .m_axi_gmem1_rlast(gmem1_rlast),
        .m_axi_gmem1_rvalid(gmem1_rvalid),
        .m_axi_gmem1_rready(gmem1_rready)
    );

    hrl_sim_axi_ram #(.MEM_AW(MEM_AW), .ADDR_W(64), .DW(DW)) ram_inst (
        .clk(ap_clk),
        .rst(!ap_rst_n),
        .s0_axi_awid(gmem0_awid),
        .s0_axi_awaddr(gmem0_awaddr),
        .s0_axi_awlen(gmem0_awlen),
        .s0_axi_awsize(gmem0_awsize),
        .s0_axi_awburst(gmem0_awburst),
        .s0_axi_awvalid(gmem0_awvalid),
        .s0_axi_awready(gmem0_awready),
        .s0_axi_wdata(gmem0_wdata),
        .s0_axi_wstrb(gmem0_wstrb),
        .s0_axi_wlast(gmem0_wlast),
        .s0_axi_wvalid(gmem0_wvalid),
        .s0_axi_wready(gmem0_wready),
        .s0_axi_bid(gmem0_bid),
        .s0_axi_bresp(gmem0_bresp),
        .s0_axi_bvalid(gmem0_bvalid),
        .s0_axi_bready(gmem0_bready),
        .s0_axi_arid(gmem0_arid),
        .s0_axi_araddr(gmem0_araddr),
        .s0_axi_arlen(gmem0_arlen),
        .s0_axi_arsize(gmem0_arsize),
        .s0_axi_arburst(gmem0_arburst),
        .s0_axi_arvalid(gmem0_arvalid),
        .s0_axi_arready(gmem0_arready),
        .s0_axi_rid(gmem0_rid),
        .s0_axi_rdata(gmem0_rdata),
        .s0_axi_rresp(gmem0_rresp),
        .s0_axi_rlast(gmem0_rlast),
        .s0_axi_rvalid(gmem0_rvalid),
        .s0_axi_rready(gmem0_rready),
        .s1_axi_arid(gmem1_arid),
        .s1_axi_araddr(gmem1_araddr),
        .s1_axi_arlen(gmem1_arlen),
        .s1_axi_arsize(gmem1_arsize),
        .s1_axi_arburst(gmem1_arburst),
        .s1_axi_arvalid(gmem1_arvalid),
        .s1_axi_arready(gmem1_arready),
        .s1_axi_rid(gmem1_rid),
        .s1_axi_rdata(gmem1_rdata),
        .s1_axi_rresp(gmem1_rresp),
        .s1_axi_rlast(gmem1_rlast),
        .s1_axi_rvalid(gmem1_rvalid),
        .s1_axi_rready(gmem1_rready)
    );

endmodule

`default_nettype wire
