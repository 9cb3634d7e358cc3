// hrl_learn_activation: the activation unit between the array's narrowed output rows and
// the banks. One row of C words per cycle, one register stage (the saturation count two):
//   mode 0 (linear, a last layer):   y = z
//   mode 1 (ReLU, a hidden layer):   y = z > 0 ? z : 0
//   mode 2 (backward, the derivative mask): y = m != 0 ? z : 0, where m is the same element
//          of the layer's stored input activation (a ReLU output), so the mask needs no
//          memory of its own: hrl.fixed_point.layers' mask is y > 0, i.e. activation != 0.
// Saturations: the array's per-word flags are counted over the lanes the caller marks as
// inside the matrix (`in_lanes`), and in mode 2 only where the mask keeps the word (masked
// words count none, as in layers.dense_backward). `sat_total` sums them until `clear`.
// Bit for bit hrl.fixed_point.layers.dense_forward (relu or not) and dense_backward, given
// the array's narrowing in front of it.
`default_nettype none

module hrl_learn_activation #(
    // Words per row (the array's C).
    parameter C = 4,
    // Word width (the array's OW).
    parameter W = 16,
    // Width of the saturation counter.
    parameter SW = 32
) (
    input  wire             clk,
    input  wire             rst,
    input  wire             clear,      // sat_total <= 0 (a new count)
    input  wire [1:0]       mode,       // 0 linear, 1 ReLU, 2 derivative mask
    input  wire             in_valid,
    input  wire [C*W-1:0]   in_z,       // the array's row, word c at [c*W +: W]
    input  wire [C-1:0]     in_sat,     // the array's saturation flags
    input  wire [C-1:0]     in_lanes,   // lanes inside the matrix
    input  wire [C*W-1:0]   in_m,       // mode 2: the stored activations (mask source)
    output reg              out_valid,
    output reg  [C*W-1:0]   out_y,
    output reg  [C-1:0]     out_lanes,
    output reg  [SW-1:0]    sat_total
);
    localparam CB = $clog2(C + 1);
    localparam SEXT = (SW > CB) ? SW - CB : 1;  // positive, so a bad SW reaches the $fatal

    initial begin
        if (C < 1 || C > 64) $fatal(1, "hrl_learn_activation: C=%0d must be in 1..64", C);
        if (W < 2 || W > 32) $fatal(1, "hrl_learn_activation: W=%0d must be in 2..32", W);
        if (SW < CB + 1 || SW > 64)
            $fatal(1, "hrl_learn_activation: SW=%0d must be in %0d..64", SW, CB + 1);
    end

    wire [C*W-1:0] y;
    wire [C-1:0]   counted;
    genvar c;
    generate
        for (c = 0; c < C; c = c + 1) begin : g_lane
            wire signed [W-1:0] z = in_z[c*W +: W];
            wire keep_mask = in_m[c*W +: W] != {W{1'b0}};
            wire pos = z > 0;
            wire keep = (mode == 2'd1) ? pos : ((mode == 2'd2) ? keep_mask : 1'b1);
            assign y[c*W +: W] = keep ? z : {W{1'b0}};
            assign counted[c] = in_sat[c] && in_lanes[c] && (mode != 2'd2 || keep_mask);
        end
    endgenerate

    // The row's saturation flags are counted in three registered stages: each group of four
    // lanes at the row's register (a LUT per bit of the group's count, beside the flags'
    // compares), the groups' sum at the next edge, its add into sat_total at the one after.
    // A popcount of C flags in one cycle is a tree of wide LUTs as deep as the rest of the
    // unit twice over at C = 32, and the groups' sum beside the 32-bit accumulate is a carry
    // chain past the clock in context. So sat_total holds a row's count two cycles after
    // out_valid (an engine run's `done` is two cycles after its last row: it counts them all).
    localparam NG = (C + 3) / 4;          // groups of four lanes
    localparam GW = (C >= 4) ? 3 : CB;    // a group's count: at most min(4, C)
    wire [NG*4-1:0] counted_pad = {{(NG*4-C){1'b0}}, counted};
    reg  [NG*GW-1:0] group_sats;
    reg              count_v;
    reg  [CB-1:0]    row_sats;
    reg  [NG*GW-1:0] group_n;
    integer i, k;
    always @(*) begin
        group_n = {(NG*GW){1'b0}};
        for (i = 0; i < NG; i = i + 1)
            for (k = 0; k < 4; k = k + 1)
                group_n[i*GW +: GW] = group_n[i*GW +: GW]
                    + {{(GW-1){1'b0}}, counted_pad[4*i+k]};
        row_sats = {CB{1'b0}};
        for (i = 0; i < NG; i = i + 1)
            row_sats = row_sats + {{(CB-GW){1'b0}}, group_sats[i*GW +: GW]};
    end
    reg  [CB-1:0]    row_sats_r;
    reg              count_v2;
    always @(posedge clk) begin
        group_sats <= group_n;
        row_sats_r <= row_sats;
    end

    always @(posedge clk) begin
        out_valid <= in_valid;
        out_y <= y;
        out_lanes <= in_lanes;
        count_v <= in_valid;
        count_v2 <= count_v;
        if (clear) sat_total <= {SW{1'b0}};
        else if (count_v2) sat_total <= sat_total + {{SEXT{1'b0}}, row_sats_r};
        if (rst) begin
            out_valid <= 1'b0;
            count_v <= 1'b0;
            count_v2 <= 1'b0;
            sat_total <= {SW{1'b0}};
        end
    end
endmodule

`default_nettype wire
