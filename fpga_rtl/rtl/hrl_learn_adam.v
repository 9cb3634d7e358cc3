// hrl_learn_adam: the optimizer unit's Adam step (no bias correction), one parameter per
// cycle, LAT = 33 cycles of latency. Bit for bit hrl.fixed_point.optim.adam:
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
    output wire          out_valid,
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
    localparam LAT = 33;   // registers from the inputs to the outputs (the edges below)

    initial begin
        if (GW > 30 || MW > 30 || SW > 29 || RW > 30 || TW > 30 || WW > 30 || UW > 30 || LW > 30)
            $fatal(1, "hrl_learn_adam: widths must be at most 30 (SW at most 29)");
        if (DW > 30) $fatal(1, "hrl_learn_adam: g - m needs %0d bits, at most 30", DW);
        if (S1 < 0 || S2 < -4 || S3 < -4 || S4 < 0 || A3 + S4 > 120 || UF < 0)
            $fatal(1, "hrl_learn_adam: formats misaligned (S1=%0d S2=%0d S3=%0d S4=%0d)",
                   S1, S2, S3, S4);
    end

    // The pipeline's edges, counted from the edge that samples the inputs (E1), each a
    // register: a segment between two of them holds one subtraction, one product, one
    // addition, one narrowing segment or the root's compare, no two of them (see
    // experiments/results/fpga_learner/clock.md). A product is registered twice (the DSP's
    // MREG and PREG, or the cascade of a wide one).
    //   E1 g - m              E2-E3 c1 (g - m), g g   E4 + m (aligned)   E5-E7 m', sq
    //   E8 sq - v             E9-E10 c2 (sq - v)      E11 + v            E12-E14 v'
    //   E15 max(v', v_floor)  E16-E22 the root        E23-E24 m' r       E25-E27 the step
    //   E28-E29 -lr step      E30 + w (aligned)       E31-E33 w'
    reg [LAT:1] vp;   // vp[n]: a parameter's word is at E<n>
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        if (rst) vp <= {LAT{1'b0}};
    end

    // ------------------------------------------------------------ m' and g^2 (E1-E7)
    wire signed [GW-1:0] g = in_g;
    wire signed [MW-1:0] m = in_m;
    wire signed [DW-1:0] g_al = {{(DW - GW){g[GW-1]}}, g} <<< (DF - GF);
    wire signed [DW-1:0] m_al = {{(DW - MW){m[MW-1]}}, m} <<< (DF - MF);
    reg  signed [DW-1:0] diff1;
    reg  signed [GW-1:0] g1;
    reg  signed [MW-1:0] m1;
    always @(posedge clk) begin
        diff1 <= g_al - m_al;
        g1 <= g;
        m1 <= m;
    end
    wire signed [A1-1:0] c1_x = {{(A1 - UW){c1[UW-1]}}, c1};
    wire signed [QW-1:0] g_x = {{(QW - GW){g1[GW-1]}}, g1};
    reg  signed [A1-1:0] pm2, pm3, acc1;
    reg  signed [QW-1:0] pq2, pq3, sq4;
    wire signed [MW-1:0] m3;
    hrl_delay #(.W(MW), .N(2)) m_to3 (.clk(clk), .d(m1), .q(m3));
    always @(posedge clk) begin
        pm2 <= {{(A1 - DW){diff1[DW-1]}}, diff1} * c1_x;
        pq2 <= g_x * g_x;
        pm3 <= pm2;
        pq3 <= pq2;
        acc1 <= pm3 + ({{(A1 - MW){m3[MW-1]}}, m3} <<< S1);
        sq4 <= pq3;
    end
    wire [MW-1:0] m_w;
    wire [SW-1:0] sq_w;
    wire          sat_m, sat_q;
    hrl_learn_narrow #(.IW(A1), .OW(MW), .SMAX(A1), .PIPE(2)) narrow_m (
        .clk(clk), .x(acc1), .shift(S1[7:0]), .width(MW[5:0]), .y(m_w), .sat(sat_m));
    hrl_learn_narrow #(.IW(QW), .OW(SW), .SMAX(QW), .PIPE(2)) narrow_sq (
        .clk(clk), .x(sq4), .shift(S2[7:0]), .width(SW[5:0]), .y(sq_w), .sat(sat_q));
    reg  [MW-1:0] m7;
    reg  [SW-1:0] sq7;
    reg  [1:0]    sat7;
    always @(posedge clk) begin
        m7 <= m_w;
        sq7 <= sq_w;
        sat7 <= {1'b0, sat_m} + {1'b0, sat_q};
    end

    // ------------------------------------------------------------ v' (E8-E14)
    wire [SW-1:0] v7;
    hrl_delay #(.W(SW), .N(7)) v_to7 (.clk(clk), .d(in_v), .q(v7));
    reg  signed [SW:0]   vdiff8;
    always @(posedge clk) vdiff8 <= {sq7[SW-1], sq7} - {v7[SW-1], v7};
    wire signed [A2-1:0] c2_x = {{(A2 - UW){c2[UW-1]}}, c2};
    wire [SW-1:0] v10;
    hrl_delay #(.W(SW), .N(3)) v_to10 (.clk(clk), .d(v7), .q(v10));
    reg  signed [A2-1:0] pv9, pv10, acc2;
    always @(posedge clk) begin
        pv9 <= {{(A2 - SW - 1){vdiff8[SW]}}, vdiff8} * c2_x;
        pv10 <= pv9;
        acc2 <= pv10 + ({{(A2 - SW){v10[SW-1]}}, v10} <<< UF);
    end
    wire [SW-1:0] v_w;
    wire          sat_v;
    hrl_learn_narrow #(.IW(A2), .OW(SW), .SMAX(A2), .PIPE(2)) narrow_v (
        .clk(clk), .x(acc2), .shift(UF[7:0]), .width(SW[5:0]), .y(v_w), .sat(sat_v));
    wire [1:0] sat13;
    hrl_delay #(.W(2), .N(6)) sat_to13 (.clk(clk), .d(sat7), .q(sat13));
    reg  [SW-1:0] vn14;
    reg  [2:0]    sat14;
    always @(posedge clk) begin
        vn14 <= v_w;
        sat14 <= {1'b0, sat13} + {2'b0, sat_v};
    end

    // ------------------------------------------------------------ r (E15-E22)
    wire signed [SW-1:0] vn14_s = vn14;
    wire signed [SW-1:0] floor_s = v_floor;
    reg  [SW-1:0] v_root;
    always @(posedge clk) v_root <= (vn14_s < floor_s) ? v_floor : vn14;
    wire [RW-1:0] r_w;
    wire          sat_r;
    /* verilator lint_off UNUSEDSIGNAL */
    wire          r_valid;   // vp[22], the same edge
    /* verilator lint_on UNUSEDSIGNAL */
    hrl_learn_rsqrt #(.VW(SW), .VF(SF), .RW(RW), .RF(RF)) root (
        .clk(clk), .rst(rst), .in_valid(vp[15]), .in_v(v_root), .out_valid(r_valid),
        .out_r(r_w), .out_sat(sat_r));

    // ------------------------------------------------------------ the step (E23-E27)
    wire [MW-1:0] m22;
    hrl_delay #(.W(MW), .N(15)) m_to22 (.clk(clk), .d(m7), .q(m22));
    wire signed [PW-1:0] m_x = {{(PW - MW){m22[MW-1]}}, m22};
    wire signed [PW-1:0] r_x = {{(PW - RW){r_w[RW-1]}}, r_w};
    reg  signed [PW-1:0] pp23, pp24;
    always @(posedge clk) begin
        pp23 <= m_x * r_x;
        pp24 <= pp23;
    end
    wire [TW-1:0] step_w;
    wire          sat_s;
    hrl_learn_narrow #(.IW(PW), .OW(TW), .SMAX(PW), .PIPE(2)) narrow_step (
        .clk(clk), .x(pp24), .shift(S3[7:0]), .width(TW[5:0]), .y(step_w), .sat(sat_s));
    wire [2:0] sat22;
    hrl_delay #(.W(3), .N(8)) sat_to22 (.clk(clk), .d(sat14), .q(sat22));
    reg  [2:0]    sat23;
    always @(posedge clk) sat23 <= sat22 + {2'b0, sat_r};
    wire [2:0] sat26;
    hrl_delay #(.W(3), .N(3)) sat_to26 (.clk(clk), .d(sat23), .q(sat26));
    reg  [TW-1:0] step27;
    reg  [2:0]    sat27;
    always @(posedge clk) begin
        step27 <= step_w;
        sat27 <= sat26 + {2'b0, sat_s};
    end

    // ------------------------------------------------------------ the weight (E28-E33)
    // -lr * step + w, exact: the product takes TW + LW + 1 bits (A3 holds it), the aligned
    // weight WW + S4; one more bit for the sum.
    localparam A4 = ((A3 > WW + S4) ? A3 : WW + S4) + 1;
    wire signed [TW-1:0] st = step27;
    // -lr * step + w as w - lr * step (the same integer): the product at its own width,
    // TW x (LW + 1) bits (the rate word is >= 0), so that it takes the DSPs its operands need.
    localparam LPW = TW + LW + 1;
    wire signed [LW:0]    lr_s = {1'b0, lr};
    reg  signed [LPW-1:0] pw28, pw29;
    reg  signed [A4-1:0]  acc4;
    wire [WW-1:0] w29;
    hrl_delay #(.W(WW), .N(29)) w_to29 (.clk(clk), .d(in_w), .q(w29));
    wire signed [WW-1:0] ws = w29;
    always @(posedge clk) begin
        pw28 <= st * lr_s;
        pw29 <= pw28;
        acc4 <= ({{(A4 - WW){ws[WW-1]}}, ws} <<< S4) - {{(A4 - LPW){pw29[LPW-1]}}, pw29};
    end
    wire [WW-1:0] w_w;
    wire          sat_w;
    hrl_learn_narrow #(.IW(A4), .OW(WW), .SMAX(A4), .PIPE(2)) narrow_w (
        .clk(clk), .x(acc4), .shift(S4[7:0]), .width(WW[5:0]), .y(w_w), .sat(sat_w));
    wire [MW-1:0] m32;
    hrl_delay #(.W(MW), .N(10)) m_to32 (.clk(clk), .d(m22), .q(m32));
    wire [SW-1:0] v32;
    hrl_delay #(.W(SW), .N(18)) v_to32 (.clk(clk), .d(vn14), .q(v32));
    wire [2:0] sat32;
    hrl_delay #(.W(3), .N(5)) sat_to32 (.clk(clk), .d(sat27), .q(sat32));
    always @(posedge clk) begin
        out_w <= w_w;
        out_m <= m32;
        out_v <= v32;
        out_sat <= sat32 + {2'b0, sat_w};
    end
    assign out_valid = vp[LAT];
endmodule

`default_nettype wire
