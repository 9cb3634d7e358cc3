// hrl_rmm_kernel_sim: simulation top of the rtl replay backend -- the kernel with its
// AXI4 master connected to a Verilog memory model (hrl_sim_axi_ram), so that the host side
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
    parameter MEM_AW = 21
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
    wire [0:0] gmem_awvalid;
    wire [0:0] gmem_awready;
    wire [31:0] gmem_wdata;
    wire [3:0] gmem_wstrb;
    wire [0:0] gmem_wlast;
    wire [0:0] gmem_wvalid;
    wire [0:0] gmem_wready;
    wire [0:0] gmem_bid;
    wire [1:0] gmem_bresp;
    wire [0:0] gmem_bvalid;
    wire [0:0] gmem_bready;
    wire [0:0] gmem_arid;
    wire [63:0] gmem_araddr;
    wire [7:0] gmem_arlen;
    wire [2:0] gmem_arsize;
    wire [1:0] gmem_arburst;
    wire [0:0] gmem_arvalid;
    wire [0:0] gmem_arready;
    wire [0:0] gmem_rid;
    wire [31:0] gmem_rdata;
    wire [1:0] gmem_rresp;
    wire [0:0] gmem_rlast;
    wire [0:0] gmem_rvalid;
    wire [0:0] gmem_rready;

    hrl_rmm_kernel #(.K(K), .D(D), .P(P), .W(W)) kernel_inst (
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

    hrl_sim_axi_ram #(.MEM_AW(MEM_AW), .ADDR_W(64)) ram_inst (
        .clk(ap_clk),
        .rst(!ap_rst_n),
        .s_axi_awid(gmem_awid),
        .s_axi_awaddr(gmem_awaddr),
        .s_axi_awlen(gmem_awlen),
        .s_axi_awsize(gmem_awsize),
        .s_axi_awburst(gmem_awburst),
        .s_axi_awvalid(gmem_awvalid),
        .s_axi_awready(gmem_awready),
        .s_axi_wdata(gmem_wdata),
        .s_axi_wstrb(gmem_wstrb),
        .s_axi_wlast(gmem_wlast),
        .s_axi_wvalid(gmem_wvalid),
        .s_axi_wready(gmem_wready),
        .s_axi_bid(gmem_bid),
        .s_axi_bresp(gmem_bresp),
        .s_axi_bvalid(gmem_bvalid),
        .s_axi_bready(gmem_bready),
        .s_axi_arid(gmem_arid),
        .s_axi_araddr(gmem_araddr),
        .s_axi_arlen(gmem_arlen),
        .s_axi_arsize(gmem_arsize),
        .s_axi_arburst(gmem_arburst),
        .s_axi_arvalid(gmem_arvalid),
        .s_axi_arready(gmem_arready),
        .s_axi_rid(gmem_rid),
        .s_axi_rdata(gmem_rdata),
        .s_axi_rresp(gmem_rresp),
        .s_axi_rlast(gmem_rlast),
        .s_axi_rvalid(gmem_rvalid),
        .s_axi_rready(gmem_rready)
    );

endmodule

`default_nettype wire
