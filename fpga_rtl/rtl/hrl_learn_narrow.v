// hrl_learn_narrow: the learning module's one narrowing. A signed IW-bit value
// x is shifted right by the run-time amount `shift` (left when negative, down to -4, which is
// exact), rounded to nearest with ties to the even result, then clamped into a signed format
// of run-time width `width` (2..OW); `sat` says the clamp changed the value. Bit for bit
// hrl.fixed_point.numerics.narrow / narrow_wide (value x with f_in fractional bits narrowed
// to Fx(width, f_out): shift = f_in - f_out).
//
// How: x is pre-shifted left by 4 (so the total right shift t = shift + 4 is never
// negative), the bits shifted out are compared with one half, and the result is clamped in
// IW + 5 bits, which hold every intermediate. Cost: one IW+5-bit barrel shifter, a mask
// compare and two comparators; no multiplier. PIPE = 1 registers the shifted value and the
// rounding decision (and the width) between the shift and the increment-and-clamp, halving
// the logic depth at one cycle of latency; PIPE = 0 is combinational.
`default_nettype none

module hrl_learn_narrow #(
    // Width of the signed input (an accumulator).
    parameter IW = 48,
    // Largest output width; `width` may be any of 2..OW, the output is sign-extended to OW.
    parameter OW = 16,
    // Largest right shift; `shift` is in -4..SMAX (at most IW: beyond it every bit is out).
    parameter SMAX = 40,
    // Register stages inside: 0 (combinational) or 1.
    parameter PIPE = 0
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                 clk,     // unused for PIPE = 0
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire signed [IW-1:0] x,
    input  wire signed [7:0]    shift,   // f_in - f_out, in -4..SMAX
    input  wire        [5:0]    width,   // output width, 2..OW
    output wire        [OW-1:0] y,
    output wire                 sat
);
    localparam XW = IW + 5;  // x << 4 plus a carry bit for the rounding increment

    initial begin
        if (IW < 2 || IW > 120) $fatal(1, "hrl_learn_narrow: IW=%0d must be in 2..120", IW);
        if (OW < 2 || OW > 32 || OW > IW + 4)
            $fatal(1, "hrl_learn_narrow: OW=%0d must be in 2..32 and at most IW+4", OW);
        if (SMAX < 0 || SMAX > IW || SMAX > 123)
            $fatal(1, "hrl_learn_narrow: SMAX=%0d must be in 0..IW (IW=%0d)", SMAX, IW);
        if (PIPE != 0 && PIPE != 1) $fatal(1, "hrl_learn_narrow: PIPE=%0d must be 0 or 1", PIPE);
    end

    wire signed [XW-1:0] xs = {{5{x[IW-1]}}, x} <<< 4;
    // t = shift + 4 in 0..SMAX+4 (shift is signed; the sum is taken in 9 bits).
    wire signed [8:0] t9 = {shift[7], shift} + 9'sd4;
    wire        [7:0] t = t9[7:0];
    wire signed [XW-1:0] fl = xs >>> t;
    wire        [XW-1:0] ones = {XW{1'b1}};
    wire        [XW-1:0] rem = xs & ~(ones << t);
    wire        [XW-1:0] half = (t == 8'd0) ? {XW{1'b0}} : ({{(XW-1){1'b0}}, 1'b1} << (t - 8'd1));
    wire up0 = (t != 8'd0) && ((rem > half) || ((rem == half) && fl[0]));

    reg signed [XW-1:0] fl_q;
    reg                 up_q;
    reg        [5:0]    width_q;
    always @(posedge clk) begin
        fl_q <= fl;
        up_q <= up0;
        width_q <= width;
    end
    wire signed [XW-1:0] fl_s = (PIPE != 0) ? fl_q : fl;
    wire                 up = (PIPE != 0) ? up_q : up0;
    wire        [5:0]    width_s = (PIPE != 0) ? width_q : width;
    wire signed [XW-1:0] r = fl_s + {{(XW-1){1'b0}}, up};

    // The format's range for the run-time width.
    wire signed [XW-1:0] maxv = ({{(XW-1){1'b0}}, 1'b1} << (width_s - 6'd1)) - 1;
    wire signed [XW-1:0] minv = -({{(XW-1){1'b0}}, 1'b1} << (width_s - 6'd1));
    wire hi = r > maxv;
    wire lo = r < minv;
    wire signed [XW-1:0] c = hi ? maxv : (lo ? minv : r);
    assign y = c[OW-1:0];
    assign sat = hi | lo;

    // Only the low OW bits of the clamped value are the output (it fits by construction).
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused = ^{c[XW-1:OW], t9[8]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
