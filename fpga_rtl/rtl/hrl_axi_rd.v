// hrl_axi_rd: AXI4 read engine -- streams `count` consecutive data beats of DW bits from
// `addr`.
//
// A `start` pulse loads the job (addr aligned to DW/8 bytes; count in beats, may be 0). The
// engine issues INCR bursts of up to 256 beats that never cross a 4 KiB boundary (AXI4
// rule) as fast as the interconnect accepts them (no outstanding limit: R is back-pressured
// by the consumer, so nothing is ever dropped) and hands the data beats, in order, to the
// m_* stream. `busy` is high from the cycle after `start` until the last beat left on m_*.
//
// Timing: no port's logic runs through an adder or a wide compare. A burst's length is
// computed into a register the cycle after its address is known (from `start`, or from
// the previous burst's handshake) and its address goes out the cycle after that, so AR
// carries a burst at most every third cycle (bursts are up to 256 beats, so the data
// channel, not AR, sets the rate); "beats left" is a flag register, not a 32-bit compare.
`default_nettype none

module hrl_axi_rd #(
    // Address bits of the AXI4 master (Vitis: 64).
    parameter ADDR_W = 64,
    // Data bits per beat (32..512, a power of two).
    parameter DW = 32
) (
    input  wire              clk,
    input  wire              rst,

    input  wire              start,
    input  wire [ADDR_W-1:0] addr,
    input  wire [31:0]       count,
    output wire              busy,

    output wire [DW-1:0]     m_data,
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
    input  wire              m_axi_rlast,   // the beat count, not rlast, ends the job
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [DW-1:0]     m_axi_rdata,
    input  wire              m_axi_rvalid,
    output wire              m_axi_rready
);

    localparam LOG_BS = $clog2(DW / 8);   // log2 bytes per beat

    initial begin
        if (ADDR_W < 13 || ADDR_W > 64) $fatal(1, "%m: ADDR_W=%0d must be in [13, 64]", ADDR_W);
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: DW=%0d must be a power of two in [32, 512]", DW);
    end

    reg [ADDR_W-1:0] ar_addr_reg;
    reg [31:0] ar_left_reg;   // beats not yet requested
    reg [31:0] r_left_reg;    // beats not yet delivered
    reg        r_more_reg;    // r_left_reg != 0
    reg [8:0]  ar_beats_reg;  // the next burst's beats, once ar_ok_reg
    reg        ar_calc_reg;   // ar_addr_reg / ar_left_reg changed: compute ar_beats_reg
    reg        ar_ok_reg;     // ar_beats_reg is the burst at ar_addr_reg, and beats are left

    // Beats of the next burst: min(beats left, 256, beats to the next 4 KiB boundary).
    /* verilator lint_off WIDTHTRUNC */
    wire [12:0] to_4k = (13'd4096 - {1'b0, ar_addr_reg[11:0]}) >> LOG_BS;
    /* verilator lint_on WIDTHTRUNC */
    reg [8:0] beats;
    always @* begin
        beats = 9'd256;
        if ({19'd0, to_4k} < {23'd0, beats}) beats = to_4k[8:0];
        if (ar_left_reg < {23'd0, beats}) beats = ar_left_reg[8:0];
    end

    assign m_axi_arid = 1'b0;
    assign m_axi_araddr = ar_addr_reg;
    assign m_axi_arlen = ar_beats_reg[7:0] - 8'd1;
    assign m_axi_arsize = LOG_BS[2:0];   // DW/8 bytes per beat
    assign m_axi_arburst = 2'b01;        // INCR
    assign m_axi_arvalid = ar_ok_reg;
    wire ar_fire = m_axi_arvalid && m_axi_arready;

    assign m_data = m_axi_rdata;
    assign m_valid = m_axi_rvalid && r_more_reg;
    assign m_axi_rready = m_ready && r_more_reg;
    wire r_fire = m_axi_rvalid && m_axi_rready;
    assign busy = r_more_reg;

    always @(posedge clk) begin
        if (ar_calc_reg) begin
            ar_beats_reg <= beats;
            ar_ok_reg <= ar_left_reg != 32'd0;
            ar_calc_reg <= 1'b0;
        end
        if (ar_fire) begin
            ar_addr_reg <= ar_addr_reg + ({{(ADDR_W-9){1'b0}}, ar_beats_reg} << LOG_BS);
            ar_left_reg <= ar_left_reg - {23'd0, ar_beats_reg};
            ar_ok_reg <= 1'b0;
            ar_calc_reg <= 1'b1;
        end
        if (r_fire) begin
            r_left_reg <= r_left_reg - 32'd1;
            r_more_reg <= r_left_reg != 32'd1;
        end
        if (start) begin
            ar_addr_reg <= addr;
            ar_left_reg <= count;
            r_left_reg <= count;
            r_more_reg <= count != 32'd0;
            ar_ok_reg <= 1'b0;
            ar_calc_reg <= 1'b1;
        end
        if (rst) begin
            ar_addr_reg <= {ADDR_W{1'b0}};
            ar_left_reg <= 32'd0;
            r_left_reg <= 32'd0;
            r_more_reg <= 1'b0;
            ar_beats_reg <= 9'd0;
            ar_calc_reg <= 1'b0;
            ar_ok_reg <= 1'b0;
        end
    end

endmodule

`default_nettype wire
