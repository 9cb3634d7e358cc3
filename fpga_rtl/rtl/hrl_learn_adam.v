// hrl_learn_adam: the optimizer unit's Adam step (no bias correction), one parameter per
// cycle, 6 cycles of latency. Bit for bit hrl.fixed_point.optim.adam:
//   m'     = narrow(c1 * (g - m) + m)              (moment; g - m exact)
//   sq     = narrow(g * g)                         (second)
//   v'     = narrow(c2 * (sq - v) + v)             (second; sq - v exact)
//   r      = rsqrt(max(v', v_floor))               (rsqrt: hrl_learn_rsqrt)
//   step   = narrow(m' * r)                        (step)
//   w'     = narrow(-lr * step + w)                (master)
// Each narrowing rounds to nearest with ties to even and saturates (hrl_learn_narrow);
// `out_sat` counts the parameter's saturations (0..6). c1 = 1 - beta1 and c2 = 1 - beta2 are
// unit words (UW, UF), lr a rate word (LW, LF), v_floor a second-moment word: run-time
// inputs, held for a whole pass (the host writes them per step; the rate follows its
// schedule). Cost per lane: four multipliers (c1, g*g, c2, m*r) plus the rate's, one ROM.
`default_nettype none

module hrl_learn_adam #(
    // Gradient format (GW bits, GF fractional): the array's weight-gradient words.
    parameter GW = 24,
    parameter GF = 12,
    // First moment.
    parameter MW = 28,
    parameter MF = 16,
    // Second moment.
    parameter SW = 29,
    parameter SF = 20,
    // Reciprocal square root.
    parameter RW = 24,
    parameter RF = 12,
    // Normalized step.
    parameter TW = 20,
    parameter TF = 16,
    // Master weights.
    parameter WW = 28,
    parameter WF = 24,
    // Unit words (c1, c2).
    parameter UW = 16,
    parameter UF = 15,
    // Rate word.
    parameter LW = 24,
    parameter LF = 24
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [UW-1:0] c1,
    input  wire [UW-1:0] c2,
    input  wire [LW-1:0] lr,
    input  wire [SW-1:0] v_floor,
    input  wire          in_valid,
    input  wire [WW-1:0] in_w,
    input  wire [MW-1:0] in_m,
    input  wire [SW-1:0] in_v,
    input  wire [GW-1:0] in_g,
    output reg           out_valid,
    output reg  [WW-1:0] out_w,
    output reg  [MW-1:0] out_m,
    output reg  [SW-1:0] out_v,
    output reg  [2:0]    out_sat
);
    localparam DF = (GF > MF) ? GF : MF;                          // g - m's fractional bits
    localparam DI = ((GW - GF) > (MW - MF)) ? (GW - GF) : (MW - MF);
    localparam DW = DI + DF + 1;                                  // g - m, exact
    localparam A1 = DW + UW + 2;                                  // c1 * (g - m) + m
    localparam QW = 2 * GW;                                       // g * g
    localparam A2 = SW + 1 + UW + 2;                              // c2 * (sq - v) + v
    localparam PW = MW + RW;                                      // m' * r
    localparam A3 = TW + LW + 2;                                  // -lr * step + w
    localparam integer S1 = DF + UF - MF;
    localparam integer S2 = 2 * GF - SF;
    localparam integer S3 = MF + RF - TF;
    localparam integer S4 = TF + LF - WF;

    initial begin
        if (GW > 30 || MW > 30 || SW > 29 || RW > 30 || TW > 30 || WW > 30 || UW > 30 || LW > 30)
            $fatal(1, "hrl_learn_adam: widths must be at most 30 (SW at most 29)");
        if (DW > 30) $fatal(1, "hrl_learn_adam: g - m needs %0d bits, at most 30", DW);
        if (S1 < 0 || S2 < -4 || S3 < -4 || S4 < 0 || A3 + S4 > 120 || UF < 0)
            $fatal(1, "hrl_learn_adam: formats misaligned (S1=%0d S2=%0d S3=%0d S4=%0d)",
                   S1, S2, S3, S4);
    end

    // ------------------------------------------------------------ stage 1: m' and g^2
    wire signed [GW-1:0] g = in_g;
    wire signed [MW-1:0] m = in_m;
    wire signed [DW-1:0] g_al = {{(DW - GW){g[GW-1]}}, g} <<< (DF - GF);
    wire signed [DW-1:0] m_al = {{(DW - MW){m[MW-1]}}, m} <<< (DF - MF);
    wire signed [DW-1:0] diff = g_al - m_al;
    wire signed [A1-1:0] c1_x = {{(A1 - UW){c1[UW-1]}}, c1};
    wire signed [A1-1:0] acc1 = {{(A1 - DW){diff[DW-1]}}, diff} * c1_x
                              + ({{(A1 - MW){m[MW-1]}}, m} <<< S1);
    wire [MW-1:0] m_w;
    wire          sat_m;
    hrl_learn_narrow #(.IW(A1), .OW(MW), .SMAX(A1)) narrow_m (
        .clk(clk), .x(acc1), .shift(S1[7:0]), .width(MW[5:0]), .y(m_w), .sat(sat_m));
    wire signed [QW-1:0] g_x = {{(QW - GW){g[GW-1]}}, g};
    wire signed [QW-1:0] sq = g_x * g_x;
    wire [SW-1:0] sq_w;
    wire          sat_q;
    hrl_learn_narrow #(.IW(QW), .OW(SW), .SMAX(QW)) narrow_sq (
        .clk(clk), .x(sq), .shift(S2[7:0]), .width(SW[5:0]), .y(sq_w), .sat(sat_q));

    reg              v1;
    reg  [1:0]       sat1;
    reg  [MW-1:0]    m1;
    reg  [SW-1:0]    sq1, vv1;
    reg  [WW-1:0]    w1;
    always @(posedge clk) begin
        v1 <= in_valid;
        sat1 <= {1'b0, sat_m} + {1'b0, sat_q};
        m1 <= m_w;
        sq1 <= sq_w;
        vv1 <= in_v;
        w1 <= in_w;
        if (rst) v1 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 2: v'
    wire signed [SW:0]   vdiff = {sq1[SW-1], sq1} - {vv1[SW-1], vv1};
    wire signed [A2-1:0] c2_x = {{(A2 - UW){c2[UW-1]}}, c2};
    wire signed [A2-1:0] acc2 = {{(A2 - SW - 1){vdiff[SW]}}, vdiff} * c2_x
                              + ({{(A2 - SW){vv1[SW-1]}}, vv1} <<< UF);
    wire [SW-1:0] v_w;
    wire          sat_v;
    hrl_learn_narrow #(.IW(A2), .OW(SW), .SMAX(A2)) narrow_v (
        .clk(clk), .x(acc2), .shift(UF[7:0]), .width(SW[5:0]), .y(v_w), .sat(sat_v));

    reg              v2;
    reg  [2:0]       sat2;
    reg  [MW-1:0]    m2;
    reg  [SW-1:0]    vn2;
    reg  [WW-1:0]    w2;
    always @(posedge clk) begin
        v2 <= v1;
        sat2 <= {1'b0, sat1} + {2'b0, sat_v};
        m2 <= m1;
        vn2 <= v_w;
        w2 <= w1;
        if (rst) v2 <= 1'b0;
    end

    // ------------------------------------------------------------ stages 3-4: r (2 cycles)
    wire signed [SW-1:0] vn2_s = vn2;
    wire signed [SW-1:0] floor_s = v_floor;
    wire [SW-1:0] v_root = (vn2_s < floor_s) ? v_floor : vn2;
    wire          r_valid;
    wire [RW-1:0] r_w;
    wire          sat_r;
    hrl_learn_rsqrt #(.VW(SW), .VF(SF), .RW(RW), .RF(RF)) root (
        .clk(clk), .rst(rst), .in_valid(v2), .in_v(v_root), .out_valid(r_valid), .out_r(r_w),
        .out_sat(sat_r));
    reg  [2:0]       sat3, sat4;
    reg  [MW-1:0]    m3, m4;
    reg  [SW-1:0]    vn3, vn4;
    reg  [WW-1:0]    w3, w4;
    always @(posedge clk) begin
        {sat3, m3, vn3, w3} <= {sat2, m2, vn2, w2};
        {sat4, m4, vn4, w4} <= {sat3, m3, vn3, w3};
    end

    // ------------------------------------------------------------ stage 5: the step
    wire signed [PW-1:0] m_x = {{(PW - MW){m4[MW-1]}}, m4};
    wire signed [PW-1:0] r_x = {{(PW - RW){r_w[RW-1]}}, r_w};
    wire signed [PW-1:0] prod = m_x * r_x;
    wire [TW-1:0] step_w;
    wire          sat_s;
    hrl_learn_narrow #(.IW(PW), .OW(TW), .SMAX(PW)) narrow_step (
        .clk(clk), .x(prod), .shift(S3[7:0]), .width(TW[5:0]), .y(step_w), .sat(sat_s));
    reg              v5;
    reg  [2:0]       sat5;
    reg  [TW-1:0]    step5;
    reg  [MW-1:0]    m5;
    reg  [SW-1:0]    vn5;
    reg  [WW-1:0]    w5;
    always @(posedge clk) begin
        v5 <= r_valid;
        sat5 <= sat4 + {2'b0, sat_r} + {2'b0, sat_s};
        step5 <= step_w;
        m5 <= m4;
        vn5 <= vn4;
        w5 <= w4;
        if (rst) v5 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 6: the weight
    localparam A4 = A3 + S4 + WW;
    wire signed [TW-1:0] st = step5;
    wire signed [WW-1:0] ws = w5;
    wire signed [A4-1:0] neg_lr = -{{(A4 - LW){1'b0}}, lr};  // the rate word is >= 0
    wire signed [A4-1:0] acc4 = {{(A4 - TW){st[TW-1]}}, st} * neg_lr
                              + ({{(A4 - WW){ws[WW-1]}}, ws} <<< S4);
    wire [WW-1:0] w_w;
    wire          sat_w;
    hrl_learn_narrow #(.IW(A4), .OW(WW), .SMAX(A4)) narrow_w (
        .clk(clk), .x(acc4), .shift(S4[7:0]), .width(WW[5:0]), .y(w_w), .sat(sat_w));
    always @(posedge clk) begin
        out_valid <= v5;
        out_w <= w_w;
        out_m <= m5;
        out_v <= vn5;
        out_sat <= sat5 + {2'b0, sat_w};
        if (rst) out_valid <= 1'b0;
    end
endmodule

`default_nettype wire
