// hrl_axi_rd: AXI4 read engine -- streams `count` consecutive 32-bit words from `addr`.
//
// A `start` pulse loads the job (addr must be 4-byte aligned; count may be 0). The engine
// issues INCR bursts of up to 256 beats that never cross a 4 KiB boundary (AXI4 rule) as
// fast as the interconnect accepts them (no outstanding limit: R is back-pressured by the
// consumer, so nothing is ever dropped) and hands the data beats, in order, to the m_*
// stream. `busy` is high from the cycle after `start` until the last word left on m_*.
`default_nettype none

module hrl_axi_rd #(
    // Address bits of the AXI4 master (Vitis: 64).
    parameter ADDR_W = 64
) (
    input  wire              clk,
    input  wire              rst,

    input  wire              start,
    input  wire [ADDR_W-1:0] addr,
    input  wire [31:0]       count,
    output wire              busy,

    output wire [31:0]       m_data,
    output wire              m_valid,
    input  wire              m_ready,

    output wire [0:0]        m_axi_arid,
    output wire [ADDR_W-1:0] m_axi_araddr,
    output wire [7:0]        m_axi_arlen,
    output wire [2:0]        m_axi_arsize,
    output wire [1:0]        m_axi_arburst,
    output wire              m_axi_arvalid,
    input  wire              m_axi_arready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        m_axi_rid,     // one ID: responses come back in order
    input  wire [1:0]        m_axi_rresp,   // errors are not reported to the host
    input  wire              m_axi_rlast,   // the word count, not rlast, ends the job
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [31:0]       m_axi_rdata,
    input  wire              m_axi_rvalid,
    output wire              m_axi_rready
);

    initial begin
        if (ADDR_W < 13 || ADDR_W > 64) $fatal(1, "%m: ADDR_W=%0d must be in [13, 64]", ADDR_W);
    end

    reg [ADDR_W-1:0] ar_addr_reg;
    reg [31:0] ar_left_reg;   // words not yet requested
    reg [31:0] r_left_reg;    // words not yet delivered

    // Beats of the next burst: min(words left, 256, words to the next 4 KiB boundary).
    wire [10:0] to_4k = 11'd1024 - {1'b0, ar_addr_reg[11:2]};
    reg [8:0] beats;
    always @* begin
        beats = 9'd256;
        if ({21'd0, to_4k} < {23'd0, beats}) beats = to_4k[8:0];
        if (ar_left_reg < {23'd0, beats}) beats = ar_left_reg[8:0];
    end

    assign m_axi_arid = 1'b0;
    assign m_axi_araddr = ar_addr_reg;
    assign m_axi_arlen = beats[7:0] - 8'd1;
    assign m_axi_arsize = 3'd2;      // 4 bytes per beat
    assign m_axi_arburst = 2'b01;    // INCR
    assign m_axi_arvalid = ar_left_reg != 32'd0;
    wire ar_fire = m_axi_arvalid && m_axi_arready;

    assign m_data = m_axi_rdata;
    assign m_valid = m_axi_rvalid && r_left_reg != 32'd0;
    assign m_axi_rready = m_ready && r_left_reg != 32'd0;
    wire r_fire = m_axi_rvalid && m_axi_rready;
    assign busy = r_left_reg != 32'd0;

    always @(posedge clk) begin
        if (ar_fire) begin
            ar_addr_reg <= ar_addr_reg + {{(ADDR_W-11){1'b0}}, beats, 2'b00};
            ar_left_reg <= ar_left_reg - {23'd0, beats};
        end
        if (r_fire) r_left_reg <= r_left_reg - 32'd1;
        if (start) begin
            ar_addr_reg <= addr;
            ar_left_reg <= count;
            r_left_reg <= count;
        end
        if (rst) begin
            ar_addr_reg <= {ADDR_W{1'b0}};
            ar_left_reg <= 32'd0;
            r_left_reg <= 32'd0;
        end
    end

endmodule

`default_nettype wire
