// hrl_sim_axi_ram: simulation-only AXI4 slave memory (32-bit data) for the rtl backend.
//
// Stands in for the card's memory when the host side runs without a per-cycle bus model:
// the host (cocotb) fills and reads `mem` through the simulator (backdoor, the equivalent
// of xrt::bo::sync), and the kernel reaches it over AXI4. One read burst and one write
// burst at a time (arready/awready low while one is active), INCR bursts only, the word
// address wraps at 2**MEM_AW words. Not synthesizable as a memory controller; not a
// timing model of DDR (data follows the address by one cycle).
`default_nettype none

module hrl_sim_axi_ram #(
    // log2 of the memory size in 32-bit words.
    parameter MEM_AW = 20,
    // AXI address bits.
    parameter ADDR_W = 64
) (
    input  wire              clk,
    input  wire              rst,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        s_axi_awid,
    input  wire [ADDR_W-1:0] s_axi_awaddr,
    input  wire [7:0]        s_axi_awlen,
    input  wire [2:0]        s_axi_awsize,
    input  wire [1:0]        s_axi_awburst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              s_axi_awvalid,
    output wire              s_axi_awready,
    input  wire [31:0]       s_axi_wdata,
    input  wire [3:0]        s_axi_wstrb,
    input  wire              s_axi_wlast,
    input  wire              s_axi_wvalid,
    output wire              s_axi_wready,
    output wire [0:0]        s_axi_bid,
    output wire [1:0]        s_axi_bresp,
    output reg               s_axi_bvalid,
    input  wire              s_axi_bready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        s_axi_arid,
    input  wire [ADDR_W-1:0] s_axi_araddr,
    input  wire [2:0]        s_axi_arsize,
    input  wire [1:0]        s_axi_arburst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [7:0]        s_axi_arlen,
    input  wire              s_axi_arvalid,
    output wire              s_axi_arready,
    output wire [0:0]        s_axi_rid,
    output wire [31:0]       s_axi_rdata,
    output wire [1:0]        s_axi_rresp,
    output wire              s_axi_rlast,
    output wire              s_axi_rvalid,
    input  wire              s_axi_rready
);

    reg [31:0] mem [0:(1<<MEM_AW)-1] /* verilator public */;

    reg r_active, w_active;
    reg [MEM_AW-1:0] r_addr, w_addr;
    reg [8:0] r_left;

    assign s_axi_arready = !r_active;
    assign s_axi_rvalid = r_active;
    assign s_axi_rdata = mem[r_addr];
    assign s_axi_rlast = r_left == 9'd1;
    assign s_axi_rid = 1'b0;
    assign s_axi_rresp = 2'b00;

    assign s_axi_awready = !w_active && !s_axi_bvalid;
    assign s_axi_wready = w_active;
    assign s_axi_bid = 1'b0;
    assign s_axi_bresp = 2'b00;

    integer b;
    always @(posedge clk) begin
        if (s_axi_arvalid && s_axi_arready) begin
            r_active <= 1'b1;
            r_addr <= s_axi_araddr[MEM_AW+1:2];
            r_left <= {1'b0, s_axi_arlen} + 9'd1;
        end
        if (s_axi_rvalid && s_axi_rready) begin
            r_addr <= r_addr + 1'b1;
            r_left <= r_left - 9'd1;
            if (r_left == 9'd1) r_active <= 1'b0;
        end
        if (s_axi_awvalid && s_axi_awready) begin
            w_active <= 1'b1;
            w_addr <= s_axi_awaddr[MEM_AW+1:2];
        end
        if (s_axi_wvalid && s_axi_wready) begin
            for (b = 0; b < 4; b = b + 1)
                if (s_axi_wstrb[b]) mem[w_addr][8*b +: 8] <= s_axi_wdata[8*b +: 8];
            w_addr <= w_addr + 1'b1;
            if (s_axi_wlast) begin
                w_active <= 1'b0;
                s_axi_bvalid <= 1'b1;
            end
        end
        if (s_axi_bvalid && s_axi_bready) s_axi_bvalid <= 1'b0;
        if (rst) begin
            r_active <= 1'b0;
            w_active <= 1'b0;
            s_axi_bvalid <= 1'b0;
        end
    end

endmodule

`default_nettype wire
