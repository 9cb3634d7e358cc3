// hrl_learn_narrow: the learning module's one narrowing. A signed IW-bit value
// x is shifted right by the run-time amount `shift` (left when negative, down to -4, which is
// exact), rounded to nearest with ties to the even result, then clamped into a signed format
// of run-time width `width` (2..OW); `sat` says the clamp changed the value. Bit for bit
// hrl.fixed_point.numerics.narrow / narrow_wide (value x with f_in fractional bits narrowed
// to Fx(width, f_out): shift = f_in - f_out).
//
// How: x is pre-shifted left by 4 (so the total right shift t = shift + 4 is never
// negative), the first bit shifted out (round) and the OR of those below it (sticky)
// decide the increment, and the result is clamped in IW + 5 bits, which hold every
// intermediate. Cost: one IW+5-bit barrel shifter, two mask-and-OR trees, an incrementer
// and two comparators; no multiplier. Four segments: the decode of the shift and width
// into masks, the shift (with the round and sticky bits), the rounding increment, the
// clamp. PIPE = 1 registers after the shift, 2 after the increment too, 3 after the decode
// too (PIPE cycles of latency); PIPE = 0 is combinational.
`default_nettype none

module hrl_learn_narrow #(
    // Width of the signed input (an accumulator).
    parameter IW = 48,
    // Largest output width; `width` may be any of 2..OW, the output is sign-extended to OW.
    parameter OW = 16,
    // Largest right shift; `shift` is in -4..SMAX (at most IW: beyond it every bit is out).
    parameter SMAX = 40,
    // Register stages inside: 0 (combinational) to 3.
    parameter PIPE = 0
) (
    input  wire                 clk,     // unused for PIPE = 0
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
        if (PIPE < 0 || PIPE > 3) $fatal(1, "hrl_learn_narrow: PIPE=%0d must be in 0..3", PIPE);
    end

    // x >>> t (arithmetic), one stage of 2:1 multiplexers per bit of t: a variable shift
    // written as >>> maps to wide-LUT trees whose depth varies with what synthesis merges
    // around it (a level over the clock's in the array's context).
    function automatic signed [XW-1:0] shift_right(input signed [XW-1:0] v, input [7:0] n);
        integer stage;
        begin
            shift_right = v;
            for (stage = 0; stage < 8; stage = stage + 1)
                if (n[stage]) shift_right = shift_right >>> (1 << stage);
        end
    endfunction

    wire signed [XW-1:0] xs0 = {{5{x[IW-1]}}, x} <<< 4;
    // Segment D (decode): t = shift + 4 in 0..SMAX+4 (shift is signed; the sum is taken in
    // 9 bits), the masks of the first bit shifted out (one half of the output's step) and
    // of the bits below it, the format's range for the run-time width.
    wire signed [8:0] t9 = {shift[7], shift} + 9'sd4;
    wire        [7:0] td = t9[7:0];
    wire        [XW-1:0] ones = {XW{1'b1}};
    wire        [XW-1:0] halfd = (td == 8'd0) ? {XW{1'b0}} : ({{(XW-1){1'b0}}, 1'b1} << (td - 8'd1));
    wire        [XW-1:0] belowd = (td == 8'd0) ? {XW{1'b0}} : ~(ones << (td - 8'd1));
    wire signed [XW-1:0] maxvd = ({{(XW-1){1'b0}}, 1'b1} << (width - 6'd1)) - 1;
    wire signed [XW-1:0] minvd = -({{(XW-1){1'b0}}, 1'b1} << (width - 6'd1));

    reg signed [XW-1:0] xs_d, maxv_d, minv_d;
    reg        [XW-1:0] half_d, below_d;
    reg        [7:0]    t_d;
    always @(posedge clk) begin
        xs_d <= xs0;
        t_d <= td;
        half_d <= halfd;
        below_d <= belowd;
        maxv_d <= maxvd;
        minv_d <= minvd;
    end
    wire signed [XW-1:0] xs = (PIPE >= 3) ? xs_d : xs0;
    wire        [7:0]    t = (PIPE >= 3) ? t_d : td;
    wire        [XW-1:0] half0 = (PIPE >= 3) ? half_d : halfd;
    wire        [XW-1:0] below0 = (PIPE >= 3) ? below_d : belowd;
    wire signed [XW-1:0] maxv0 = (PIPE >= 3) ? maxv_d : maxvd;
    wire signed [XW-1:0] minv0 = (PIPE >= 3) ? minv_d : minvd;

    // Segment 0: the shift; round (the first bit shifted out) and sticky (any bit below
    // it): rem > half is round & sticky, rem == half is round & !sticky. OR trees instead
    // of a wide compare, so no carry chain here.
    wire signed [XW-1:0] fl0 = shift_right(xs, t);
    wire round0 = |(xs & half0);
    wire sticky0 = |(xs & below0);

    reg signed [XW-1:0] fl_q, maxv_q, minv_q, r_q, maxv_r, minv_r;
    reg                 round_q, sticky_q, tz_q;
    always @(posedge clk) begin
        fl_q <= fl0;
        round_q <= round0;
        sticky_q <= sticky0;
        tz_q <= (t == 8'd0);
        maxv_q <= maxv0;
        minv_q <= minv0;
    end
    wire signed [XW-1:0] fl = (PIPE >= 1) ? fl_q : fl0;
    wire                 round = (PIPE >= 1) ? round_q : round0;
    wire                 sticky = (PIPE >= 1) ? sticky_q : sticky0;
    wire                 tz = (PIPE >= 1) ? tz_q : (t == 8'd0);
    wire signed [XW-1:0] maxv1 = (PIPE >= 1) ? maxv_q : maxv0;
    wire signed [XW-1:0] minv1 = (PIPE >= 1) ? minv_q : minv0;

    // Segment 1: round half to even.
    wire up = !tz && round && (sticky || fl[0]);
    wire signed [XW-1:0] r1 = fl + {{(XW-1){1'b0}}, up};
    always @(posedge clk) begin
        r_q <= r1;
        maxv_r <= maxv1;
        minv_r <= minv1;
    end
    wire signed [XW-1:0] r = (PIPE >= 2) ? r_q : r1;
    wire signed [XW-1:0] maxv = (PIPE >= 2) ? maxv_r : maxv1;
    wire signed [XW-1:0] minv = (PIPE >= 2) ? minv_r : minv1;

    // Segment 2: saturate.
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
