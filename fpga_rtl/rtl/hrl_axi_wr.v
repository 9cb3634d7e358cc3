// hrl_axi_wr: AXI4 write engine -- writes `count` consecutive data beats of DW bits (with
// byte strobes) to `addr` from the s_* stream.
//
// A `start` pulse loads the job (addr aligned to DW/8 bytes; count in beats, may be 0).
// Bursts are INCR, up to 256 beats, never across a 4 KiB boundary. Addresses run ahead of
// data; a burst's data beats are sent only after its address was accepted (some
// interconnects require it). `busy` is high from the cycle after `start` until the last
// write response came back, so when it falls every word is in memory.
//
// Timing: no port's logic runs through an adder or a wide compare. A burst's length is
// computed into a register the cycle after its address is known (from `start`, or from
// the previous burst's handshake) and its address goes out the cycle after that, so AW
// carries a burst at most every third cycle (the data channel, not AW, sets the rate). The
// lengths of the bursts whose address went out wait in a queue of AHEAD entries for their
// data (AW waits while it is full), so W reads a burst's length instead of computing it;
// "beats left" and "responses owed" are flag registers, not 32-bit compares.
`default_nettype none

module hrl_axi_wr #(
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

    input  wire [DW-1:0]     s_data,
    input  wire [DW/8-1:0]   s_strb,
    input  wire              s_valid,
    output wire              s_ready,

    output wire [0:0]        m_axi_awid,
    output wire [ADDR_W-1:0] m_axi_awaddr,
    output wire [7:0]        m_axi_awlen,
    output wire [2:0]        m_axi_awsize,
    output wire [1:0]        m_axi_awburst,
    output wire              m_axi_awvalid,
    input  wire              m_axi_awready,
    output wire [DW-1:0]     m_axi_wdata,
    output wire [DW/8-1:0]   m_axi_wstrb,
    output wire              m_axi_wlast,
    output wire              m_axi_wvalid,
    input  wire              m_axi_wready,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [0:0]        m_axi_bid,     // one ID
    input  wire [1:0]        m_axi_bresp,   // errors are not reported to the host
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire              m_axi_bvalid,
    output wire              m_axi_bready
);

    localparam LOG_BS = $clog2(DW / 8);   // log2 bytes per beat
    localparam AHEAD = 4;                 // bursts whose address may run ahead of their data

    initial begin
        if (ADDR_W < 13 || ADDR_W > 64) $fatal(1, "%m: ADDR_W=%0d must be in [13, 64]", ADDR_W);
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: DW=%0d must be a power of two in [32, 512]", DW);
    end

    reg [ADDR_W-1:0] aw_addr_reg;
    reg [31:0] aw_left_reg, w_left_reg;   // beats whose address / data is not yet sent
    reg [8:0]  aw_beats_reg;              // the next burst's beats, once aw_ok_reg
    reg        aw_calc_reg;               // aw_addr_reg / aw_left_reg changed: compute it
    reg        aw_ok_reg;                 // aw_beats_reg is the burst at aw_addr_reg
    reg        w_more_reg;                // w_left_reg != 0
    reg [8:0]  w_beats_reg;               // beats left in the current data burst (0: none)
    reg        w_open_reg;                // w_beats_reg == 0: the next beat opens a burst
    reg [31:0] b_wait_reg;                // bursts whose response has not come back
    reg        b_more_reg;                // b_wait_reg != 0
    // The lengths of the bursts whose address went out and whose data has not started.
    reg [8:0]  q_len [0:AHEAD-1];
    reg [1:0]  q_wr, q_rd;
    reg [2:0]  q_count;

    // Burst length from an address and a beat count: min(left, 256, beats to 4 KiB).
    function [8:0] burst_beats(input [11:0] byte_in_4k, input [31:0] left);
        reg [12:0] to_4k;
        begin
            to_4k = (13'd4096 - {1'b0, byte_in_4k}) >> LOG_BS;
            burst_beats = 9'd256;
            if ({19'd0, to_4k} < 32'd256) burst_beats = to_4k[8:0];
            if (left < {23'd0, burst_beats}) burst_beats = left[8:0];
        end
    endfunction

    assign m_axi_awid = 1'b0;
    assign m_axi_awaddr = aw_addr_reg;
    assign m_axi_awlen = aw_beats_reg[7:0] - 8'd1;
    assign m_axi_awsize = LOG_BS[2:0];
    assign m_axi_awburst = 2'b01;
    assign m_axi_awvalid = aw_ok_reg && q_count != AHEAD[2:0];
    wire aw_fire = m_axi_awvalid && m_axi_awready;

    // The beat on W opens a new burst when w_beats_reg is 0; it may only do so once that
    // burst's address went out (its length is in the queue).
    wire w_open = w_open_reg;
    wire [8:0] w_cur = w_open ? q_len[q_rd] : w_beats_reg;
    wire w_can = w_more_reg && (!w_open || q_count != 3'd0);
    assign m_axi_wdata = s_data;
    assign m_axi_wstrb = s_strb;
    assign m_axi_wlast = w_cur == 9'd1;
    assign m_axi_wvalid = w_can && s_valid;
    assign s_ready = w_can && m_axi_wready;
    wire w_fire = m_axi_wvalid && m_axi_wready;
    wire q_pop = w_fire && w_open;

    assign m_axi_bready = 1'b1;
    wire b_fire = m_axi_bvalid;
    assign busy = aw_calc_reg || aw_ok_reg || w_more_reg || b_more_reg;

    always @(posedge clk) begin
        if (aw_calc_reg) begin
            aw_beats_reg <= burst_beats(aw_addr_reg[11:0], aw_left_reg);
            aw_ok_reg <= aw_left_reg != 32'd0;
            aw_calc_reg <= 1'b0;
        end
        if (aw_fire) begin
            aw_addr_reg <= aw_addr_reg + ({{(ADDR_W-9){1'b0}}, aw_beats_reg} << LOG_BS);
            aw_left_reg <= aw_left_reg - {23'd0, aw_beats_reg};
            aw_ok_reg <= 1'b0;
            aw_calc_reg <= 1'b1;
            q_len[q_wr] <= aw_beats_reg;
            q_wr <= q_wr + 2'd1;
        end
        if (q_pop) q_rd <= q_rd + 2'd1;
        q_count <= q_count + {2'd0, aw_fire} - {2'd0, q_pop};
        b_wait_reg <= b_wait_reg + {31'd0, aw_fire} - {31'd0, b_fire};
        if (aw_fire && !b_fire) b_more_reg <= 1'b1;
        else if (b_fire && !aw_fire) b_more_reg <= b_wait_reg != 32'd1;
        if (w_fire) begin
            w_left_reg <= w_left_reg - 32'd1;
            w_more_reg <= w_left_reg != 32'd1;
            w_beats_reg <= w_cur - 9'd1;
            w_open_reg <= w_cur == 9'd1;
        end
        if (start) begin
            aw_addr_reg <= addr;
            aw_left_reg <= count;
            w_left_reg <= count;
            w_more_reg <= count != 32'd0;
            w_beats_reg <= 9'd0;
            w_open_reg <= 1'b1;
            aw_ok_reg <= 1'b0;
            aw_calc_reg <= count != 32'd0;
        end
        if (rst) begin
            aw_addr_reg <= {ADDR_W{1'b0}};
            aw_left_reg <= 32'd0;
            aw_beats_reg <= 9'd0;
            aw_calc_reg <= 1'b0;
            aw_ok_reg <= 1'b0;
            w_left_reg <= 32'd0;
            w_more_reg <= 1'b0;
            w_beats_reg <= 9'd0;
            w_open_reg <= 1'b1;
            b_wait_reg <= 32'd0;
            b_more_reg <= 1'b0;
            q_wr <= 2'd0;
            q_rd <= 2'd0;
            q_count <= 3'd0;
        end
    end

endmodule

`default_nettype wire
