// hrl_learn_rsqrt: the optimizer unit's reciprocal square root, one word per cycle, 7
// cycles of latency. Bit for bit hrl.fixed_point.rsqrt.rsqrt: a second-moment word V of the
// format (VW, VF), clamped to >= 1 (and doubled when VF is odd), is normalized by an even
// shift s (its leading one found by a priority encoder), its top 10 bits index the
// 768-entry ROM (hrl_learn_rsqrt_rom, generated from the reference's table), and the entry
// is shifted by 16 + s/2 - (RF + VF'/2), rounding to nearest with ties to even
// (hrl_learn_narrow), then clamped into the output format (RW, RF); `out_sat` says it
// clamped. Cost: a priority encoder, two barrel shifters, one ROM; no multiplier.
// Pipelined so that no register-to-register segment holds more than one of the encoder,
// the normalizing shift, the ROM read and the narrowing's segments (see
// experiments/results/fpga_learner/clock.md): 1 the leading one, 2 the shift and the
// ROM's address, 3 the ROM read, 4-6 the narrowing (PIPE = 3), 7 the output register.
`default_nettype none

module hrl_learn_rsqrt #(
    // Input (second-moment) format: width and fractional bits.
    parameter VW = 29,
    parameter VF = 20,
    // Output (rsqrt) format: width and fractional bits.
    parameter RW = 24,
    parameter RF = 12
) (
    input  wire          clk,
    input  wire          rst,
    input  wire          in_valid,
    input  wire [VW-1:0] in_v,        // a word >= 0 (negative ones read as 0)
    output reg           out_valid,
    output reg  [RW-1:0] out_r,
    output reg           out_sat
);
    localparam T = 10;                 // index bits of the ROM (rsqrt.INDEX_BITS)
    localparam P = 16;                 // TABLE[0] = 2**P (rsqrt.TABLE_BITS)
    localparam ODD = VF % 2;
    localparam F = VF + ODD;           // even fractional bits after the doubling
    localparam integer KMIN = P - RF - F / 2;           // the shift at s = 0
    localparam integer L = (KMIN < 0) ? -KMIN : 0;      // pre-shift so the shift is >= 0
    localparam IW = P + 2 + L;          // the entry, pre-shifted, with a sign bit
    localparam EW = (VW + 1 > 1) ? $clog2(VW + 1) : 1;  // bits of the leading-one index

    initial begin
        if (VW < 2 || VW > 30) $fatal(1, "hrl_learn_rsqrt: VW=%0d must be in 2..30", VW);
        if (RW < 2 || RW > 30) $fatal(1, "hrl_learn_rsqrt: RW=%0d must be in 2..30", RW);
        if (VF < 0 || VF > 40 || RF < 0 || RF > 40)
            $fatal(1, "hrl_learn_rsqrt: VF=%0d RF=%0d must be in 0..40", VF, RF);
        if (L > 30) $fatal(1, "hrl_learn_rsqrt: RF + VF/2 - 16 = %0d must be at most 30", L);
    end

    // ------------------------------------------------------------ normalize, read the ROM
    wire signed [VW-1:0] v_s = in_v;
    wire        [VW:0]   vc = (v_s <= 0) ? {{VW{1'b0}}, 1'b1} : {1'b0, in_v};
    wire        [VW:0]   vd = vc << ODD;
    reg         [EW-1:0] e;
    integer i;
    always @(*) begin
        e = {EW{1'b0}};
        for (i = 0; i <= VW; i = i + 1)
            if (vd[i]) e = i[EW-1:0];
    end
    // Stage 1 registers the normalized word and its leading one's (even) position.
    reg           v0;
    reg  [VW:0]   vd0;
    reg  [EW-1:0] e0;
    always @(posedge clk) begin
        v0 <= in_valid;
        vd0 <= vd;
        e0 <= e;
        if (rst) v0 <= 1'b0;
    end
    wire [EW-1:0] s = {e0[EW-1:1], 1'b0};
    wire [VW+T:0] up = {{T{1'b0}}, vd0} << (T - 2);  // vd * 2**(T-2), then >> s
    wire [VW+T:0] y_full = up >> s;
    wire [T-1:0]  y = y_full[T-1:0];
    wire [T-1:0]  addr = y - (1 << (T - 2));

    // The right shift of the entry, k + L = P + s/2 - RF - F/2 + L >= 0, clamped to IW (past
    // which every bit is out and the result is 0 either way).
    localparam integer K0 = KMIN + L;
    wire [EW-1:0] half_s = s >> 1;
    wire [7:0]    k_raw = K0[7:0] + {{(8 - EW){1'b0}}, half_s};
    wire [7:0]    k_c = (k_raw > IW[7:0]) ? IW[7:0] : k_raw;
    // Stage 2 registers the ROM's address; stage 3 is the ROM's own read register.
    reg           v1, v2;
    reg  [9:0]    addr1;
    reg  [7:0]    k1, k2;
    always @(posedge clk) begin
        v1 <= v0;
        addr1 <= addr;
        k1 <= k_c;
        v2 <= v1;
        k2 <= k1;
        if (rst) begin
            v1 <= 1'b0;
            v2 <= 1'b0;
        end
    end
    wire [P:0]    entry;
    hrl_learn_rsqrt_rom rom (.clk(clk), .addr(addr1), .data(entry));

    // ------------------------------------------------------------ shift, round, clamp
    wire signed [IW-1:0] x = {{(IW - P - 1){1'b0}}, entry} << L;
    wire [RW-1:0] r_w;
    wire          sat_w;
    hrl_learn_narrow #(.IW(IW), .OW(RW), .SMAX(IW), .PIPE(3)) narrow_r (
        .clk(clk), .x(x), .shift(k2), .width(RW[5:0]), .y(r_w), .sat(sat_w));
    reg           v3, v4, v5;   // beside the narrowing's three registers
    always @(posedge clk) begin
        v3 <= v2;
        v4 <= v3;
        v5 <= v4;
        out_valid <= v5;
        out_r <= r_w;
        out_sat <= sat_w;
        if (rst) begin
            v3 <= 1'b0;
            v4 <= 1'b0;
            v5 <= 1'b0;
            out_valid <= 1'b0;
        end
    end

    // Only the low T bits of the normalized word index the ROM; s is e rounded down to even.
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused = ^{y_full[VW+T:T], e0[0]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
