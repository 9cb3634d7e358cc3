// hrl_sim_axi_ram: simulation-only AXI4 slave memory with two ports on one array, for the
// rtl-sim OpenCL device: port 0 reads and writes (the kernel's m_axi_gmem0), port 1 reads
// (m_axi_gmem1). Beats of DW bits (DW/32 words of the 32-bit array, word 0 in the low bits).
//
// Stands in for the card's memory when the host side runs without a per-cycle bus model:
// the host (cocotb) fills and reads `mem` through the simulator (backdoor, the equivalent
// of the DMA behind clEnqueueWriteBuffer), and the kernel reaches it over AXI4. One read
// burst per port and one write burst at a time (arready/awready low while one is active),
// INCR bursts only, addresses DW/8-byte aligned, the word address wraps at 2**MEM_AW words.
// Not synthesizable as a memory controller; not a timing model of DDR (data follows the
// address by one cycle).
`default_nettype none

module hrl_sim_axi_ram #(
    // log2 of the memory size in 32-bit words.
    parameter MEM_AW = 20,
    // AXI address bits.
    parameter ADDR_W = 64,
    // Data bits per beat (32..512, a power of two).
    parameter DW = 32
) (
    input  wire              clk,
    input  wire              rst,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        s0_axi_awid,
    input  wire [ADDR_W-1:0] s0_axi_awaddr,
    input  wire [7:0]        s0_axi_awlen,
    input  wire [2:0]        s0_axi_awsize,
    input  wire [1:0]        s0_axi_awburst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              s0_axi_awvalid,
    output wire              s0_axi_awready,
    input  wire [DW-1:0]     s0_axi_wdata,
    input  wire [DW/8-1:0]   s0_axi_wstrb,
    input  wire              s0_axi_wlast,
    input  wire              s0_axi_wvalid,
    output wire              s0_axi_wready,
    output wire [0:0]        s0_axi_bid,
    output wire [1:0]        s0_axi_bresp,
    output reg               s0_axi_bvalid,
    input  wire              s0_axi_bready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        s0_axi_arid,
    input  wire [ADDR_W-1:0] s0_axi_araddr,
    input  wire [2:0]        s0_axi_arsize,
    input  wire [1:0]        s0_axi_arburst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [7:0]        s0_axi_arlen,
    input  wire              s0_axi_arvalid,
    output wire              s0_axi_arready,
    output wire [0:0]        s0_axi_rid,
    output wire [DW-1:0]     s0_axi_rdata,
    output wire [1:0]        s0_axi_rresp,
    output wire              s0_axi_rlast,
    output wire              s0_axi_rvalid,
    input  wire              s0_axi_rready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        s1_axi_arid,
    input  wire [ADDR_W-1:0] s1_axi_araddr,
    input  wire [2:0]        s1_axi_arsize,
    input  wire [1:0]        s1_axi_arburst,
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [7:0]        s1_axi_arlen,
    input  wire              s1_axi_arvalid,
    output wire              s1_axi_arready,
    output wire [0:0]        s1_axi_rid,
    output wire [DW-1:0]     s1_axi_rdata,
    output wire [1:0]        s1_axi_rresp,
    output wire              s1_axi_rlast,
    output wire              s1_axi_rvalid,
    input  wire              s1_axi_rready
);

    localparam NW = DW / 32;

    reg [31:0] mem [0:(1<<MEM_AW)-1] /* verilator public */;

    reg r0_active, r1_active, w_active;
    reg [MEM_AW-1:0] r0_addr, r1_addr, w_addr;
    reg [8:0] r0_left, r1_left;

    genvar g;
    generate
        for (g = 0; g < NW; g = g + 1) begin : beat_word
            assign s0_axi_rdata[32*g +: 32] = mem[r0_addr + g];
            assign s1_axi_rdata[32*g +: 32] = mem[r1_addr + g];
        end
    endgenerate

    assign s0_axi_arready = !r0_active;
    assign s0_axi_rvalid = r0_active;
    assign s0_axi_rlast = r0_left == 9'd1;
    assign s0_axi_rid = 1'b0;
    assign s0_axi_rresp = 2'b00;
    assign s1_axi_arready = !r1_active;
    assign s1_axi_rvalid = r1_active;
    assign s1_axi_rlast = r1_left == 9'd1;
    assign s1_axi_rid = 1'b0;
    assign s1_axi_rresp = 2'b00;

    assign s0_axi_awready = !w_active && !s0_axi_bvalid;
    assign s0_axi_wready = w_active;
    assign s0_axi_bid = 1'b0;
    assign s0_axi_bresp = 2'b00;

    integer b;
    always @(posedge clk) begin
        if (s0_axi_arvalid && s0_axi_arready) begin
            r0_active <= 1'b1;
            r0_addr <= s0_axi_araddr[MEM_AW+1:2];
            r0_left <= {1'b0, s0_axi_arlen} + 9'd1;
        end
        if (s0_axi_rvalid && s0_axi_rready) begin
            r0_addr <= r0_addr + NW[MEM_AW-1:0];
            r0_left <= r0_left - 9'd1;
            if (r0_left == 9'd1) r0_active <= 1'b0;
        end
        if (s1_axi_arvalid && s1_axi_arready) begin
            r1_active <= 1'b1;
            r1_addr <= s1_axi_araddr[MEM_AW+1:2];
            r1_left <= {1'b0, s1_axi_arlen} + 9'd1;
        end
        if (s1_axi_rvalid && s1_axi_rready) begin
            r1_addr <= r1_addr + NW[MEM_AW-1:0];
            r1_left <= r1_left - 9'd1;
            if (r1_left == 9'd1) r1_active <= 1'b0;
        end
        if (s0_axi_awvalid && s0_axi_awready) begin
            w_active <= 1'b1;
            w_addr <= s0_axi_awaddr[MEM_AW+1:2];
        end
        if (s0_axi_wvalid && s0_axi_wready) begin
            for (b = 0; b < DW / 8; b = b + 1)
                if (s0_axi_wstrb[b])
                    mem[{{(32-MEM_AW){1'b0}}, w_addr} + b / 4][8*(b%4) +: 8] <= s0_axi_wdata[8*b +: 8];
            w_addr <= w_addr + NW[MEM_AW-1:0];
            if (s0_axi_wlast) begin
                w_active <= 1'b0;
                s0_axi_bvalid <= 1'b1;
            end
        end
        if (s0_axi_bvalid && s0_axi_bready) s0_axi_bvalid <= 1'b0;
        if (rst) begin
            r0_active <= 1'b0;
            r1_active <= 1'b0;
            w_active <= 1'b0;
            s0_axi_bvalid <= 1'b0;
        end
    end

endmodule

`default_nettype wire
