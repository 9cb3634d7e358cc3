// hrl_learn_mac_array: the learning module's one multiply-accumulate array, R x C
// processing elements, output stationary. It computes one R x C tile of X @ W (+ bias) per
// pass: on each accepted beat k, x[r] = X[r0 + r, k] is broadcast along row r and
// w[c] = W[k, c0 + c] down column c, and PE (r, c) adds x[r] * w[c] to its accumulator. The
// controller's feeders make it serve the three products of a learning step by what they
// read (the banks have transposed reads): A @ W (forward), delta @ W^T (backward) and
// A^T @ delta (weight gradient).
//
// Arithmetic (bit for bit hrl.fixed_point.numerics.matmul): products and sums are exact in
// ACCW-bit accumulators; the first beat of a tile preloads the accumulator with the bias
// shifted left by `in_bias_shift` (the alignment a.frac + b.frac - bias.frac); at the end
// of a tile each of the C output columns is narrowed once (hrl_learn_narrow: shift right by
// `in_shift`, round half to even, saturate to `in_width` bits), with a saturation flag.
//
// Timing: a beat per cycle. The last beat of a tile copies the R x C sums into a shadow
// bank, so the next tile accumulates while this one drains one row of C words per cycle
// through C narrowing units. Only the tile's first `in_rows` rows drain (a ragged last row
// block, or one state's inference, drains what it has). A tile of K beats draining n rows
// therefore takes max(K, n', 3) cycles in steady state (n' the previous tile's rows): a
// tile's last beat is held off (in_ready low) only while the previous tile would still be
// draining when it lands. Its first output row is on the port 8 cycles after the cycle
// its last beat is accepted in, its last row n - 1 cycles later. The output has no back-pressure: the consumer takes a row
// every cycle it is valid.
//
// in_ready depends on in_last: it is low only for a last beat that must wait.
`default_nettype none

module hrl_learn_mac_array #(
    // Rows of processing elements (samples of a tile in the forward pass).
    parameter R = 4,
    // Columns of processing elements (output neurons of a tile in the forward pass).
    parameter C = 4,
    // Width of the x operand (signed; narrower formats are sign-extended into it).
    parameter AW = 16,
    // Width of the w operand (signed).
    parameter BW = 16,
    // Width of a bias word (signed).
    parameter BIASW = 16,
    // Largest left shift of a bias into the accumulator.
    parameter BSMAX = 24,
    // Largest number of beats (K) in one tile: the accumulator is sized for it.
    parameter KMAX = 256,
    // Accumulator width: at least max(AW + BW - 2 + clog2(KMAX), BIASW - 1 + BSMAX) + 2.
    parameter ACCW = 42,
    // Largest output width (a run-time `in_width` of 2..OW).
    parameter OW = 16,
    // Width of a tag carried from a tile's last beat to its output rows (the caller's use).
    parameter TAGW = 8
) (
    input  wire                 clk,
    input  wire                 rst,
    input  wire                 in_valid,
    output wire                 in_ready,
    input  wire                 in_first,       // first beat of a tile: preload the bias
    input  wire                 in_last,        // last beat of a tile: narrow and drain it
    input  wire [R*AW-1:0]      in_x,           // x[r] at [r*AW +: AW]
    input  wire [C*BW-1:0]      in_w,           // w[c] at [c*BW +: BW]
    input  wire [C*BIASW-1:0]   in_bias,        // with in_first: bias[c] (zero for none)
    input  wire [5:0]           in_bias_shift,  // with in_first: 0..BSMAX
    input  wire signed [7:0]    in_shift,       // with in_last: narrowing shift, -4..ACCW
    input  wire [5:0]           in_width,       // with in_last: output width 2..OW
    input  wire [TAGW-1:0]      in_tag,         // with in_last
    input  wire [6:0]           in_rows,        // with in_last: rows to drain, 1..R
    output reg                  out_valid,
    output reg  [RB-1:0]        out_row,        // row r of the tile
    output reg                  out_last,       // the tile's last row (r = R-1)
    output reg  [C*OW-1:0]      out_data,       // y[c] at [c*OW +: OW], sign-extended
    output reg  [C-1:0]         out_sat,        // y[c] saturated
    output reg  [TAGW-1:0]      out_tag
);
    localparam RB = (R > 1) ? $clog2(R) : 1;
    localparam KB = (KMAX > 1) ? $clog2(KMAX) : 0;
    localparam NEED_P = AW + BW - 2 + KB + 2;
    localparam NEED_B = BIASW - 1 + BSMAX + 2;
    localparam NPIPE = 3;  // register stages inside the narrowing unit
    // Sign-extension width, kept positive so that illegal widths reach the $fatal below.
    localparam BEXT = (ACCW > BIASW) ? ACCW - BIASW : 1;

    initial begin
        if (R < 1 || R > 64) $fatal(1, "hrl_learn_mac_array: R=%0d must be in 1..64", R);
        if (C < 1 || C > 64) $fatal(1, "hrl_learn_mac_array: C=%0d must be in 1..64", C);
        if (AW < 2 || AW > 27 || BW < 2 || BW > 27)
            $fatal(1, "hrl_learn_mac_array: AW=%0d, BW=%0d must be in 2..27", AW, BW);
        if (BIASW < 2 || BIASW > 32)
            $fatal(1, "hrl_learn_mac_array: BIASW=%0d must be in 2..32", BIASW);
        if (BSMAX < 0 || BSMAX > 40)
            $fatal(1, "hrl_learn_mac_array: BSMAX=%0d must be in 0..40", BSMAX);
        if (KMAX < 1) $fatal(1, "hrl_learn_mac_array: KMAX=%0d must be at least 1", KMAX);
        if (ACCW < NEED_P || ACCW < NEED_B || ACCW > 96)
            $fatal(1, "hrl_learn_mac_array: ACCW=%0d must be in max(%0d, %0d)..96 for AW=%0d BW=%0d KMAX=%0d BIASW=%0d BSMAX=%0d",
                   ACCW, NEED_P, NEED_B, AW, BW, KMAX, BIASW, BSMAX);
        if (OW < 2 || OW > 32) $fatal(1, "hrl_learn_mac_array: OW=%0d must be in 2..32", OW);
        if (TAGW < 1) $fatal(1, "hrl_learn_mac_array: TAGW=%0d must be at least 1", TAGW);
    end

    // ---------------------------------------------------------------- stage 1: operands
    reg              v1, first1, last1;
    reg [R*AW-1:0]   x1;
    reg [C*BW-1:0]   w1;
    reg [C*ACCW-1:0] b1;
    reg signed [7:0] shift1;
    reg [5:0]        width1;
    reg [TAGW-1:0]   tag1;
    reg [6:0]        rows1;
    // ---------------------------------------------------------------- stage 2: products
    // (the products and sums are the processing elements': hrl_learn_mac_pe)
    reg              v2, first2, last2;
    reg [C*ACCW-1:0] b2;
    reg signed [7:0] shift2;
    reg [5:0]        width2;
    reg [TAGW-1:0]   tag2;
    reg [6:0]        rows2;
    // ---------------------------------------------------------------- stage 3: sums
    wire [R*C*ACCW-1:0] shadow;  // PE (r, c)'s last tile at [(r*C + c)*ACCW +: ACCW]
    reg signed [7:0]   shift_s;
    reg [5:0]          width_s;
    reg [TAGW-1:0]     tag_s;
    // ---------------------------------------------------------------- drain
    reg [7:0]         drain_left;   // rows of the shadow bank still to read (R <= 64)
    reg [RB-1:0]      drain_row;
    reg               v4, last4;    // stage 4: the row read out of the shadow bank
    reg [RB-1:0]      row4;
    reg [C*ACCW-1:0]  d4;
    reg signed [7:0]  shift4;
    reg [5:0]         width4;
    reg [TAGW-1:0]    tag4;

    // A last beat lands in the shadow bank 2 edges after it is accepted; the drain reads a
    // row per edge, the read on the landing edge seeing the old contents.
    wire last_in_flight = (v1 & last1) | (v2 & last2);
    assign in_ready = !in_last || (!last_in_flight && drain_left <= 8'd3);
    wire accept = in_valid && in_ready;

    wire [C*ACCW-1:0] bias_ext;
    genvar gr, gc;
    generate
        for (gc = 0; gc < C; gc = gc + 1) begin : g_bias
            wire signed [ACCW-1:0] bw = {{BEXT{in_bias[gc*BIASW+BIASW-1]}},
                                         in_bias[gc*BIASW +: BIASW]};
            assign bias_ext[gc*ACCW +: ACCW] = bw <<< in_bias_shift;
        end
    endgenerate

    always @(posedge clk) begin
        v1 <= accept;
        if (accept) begin
            first1 <= in_first;
            last1 <= in_last;
            x1 <= in_x;
            w1 <= in_w;
            b1 <= in_first ? bias_ext : {C*ACCW{1'b0}};
            shift1 <= in_shift;
            width1 <= in_width;
            tag1 <= in_tag;
            rows1 <= in_rows;
        end
        v2 <= v1;
        if (v1) begin
            first2 <= first1;
            last2 <= last1;
            b2 <= b1;
            shift2 <= shift1;
            width2 <= width1;
            tag2 <= tag1;
            rows2 <= rows1;
        end
        if (rst) begin
            v1 <= 1'b0;
            v2 <= 1'b0;
        end
    end

    // Stages 2 and 3, per processing element (hrl_learn_mac_pe): the product, the sum.
    generate
        for (gr = 0; gr < R; gr = gr + 1) begin : g_row
            for (gc = 0; gc < C; gc = gc + 1) begin : g_pe
                hrl_learn_mac_pe #(.AW(AW), .BW(BW), .ACCW(ACCW)) pe_inst (
                    .clk(clk), .v1(v1), .x(x1[gr*AW +: AW]), .w(w1[gc*BW +: BW]),
                    .v2(v2), .first2(first2), .last2(last2), .bias(b2[gc*ACCW +: ACCW]),
                    .shadow(shadow[(gr*C+gc)*ACCW +: ACCW]));
            end
        end
    endgenerate

    // ---------------------------------------------------------------- drain and narrow
    // The shadow bank's row drain_row: one stage of 2:1 multiplexers per bit of the row
    // index. (A row picked by an index, shadow[drain_row*C*ACCW +: C*ACCW], maps to a shifter
    // over the whole bank, several wide-LUT trees deep at 8 and 16 rows.)
    localparam RS = (R > 0) ? R : 1;   // (R = 0 stops at the $fatal; this keeps it legal)
    reg [RS*C*ACCW-1:0] shadow_sel;
    wire [C*ACCW-1:0]  shadow_row = shadow_sel[C*ACCW-1:0];
    integer s;
    always @(*) begin
        shadow_sel = shadow;
        for (s = 0; s < RB; s = s + 1)
            if (R > 1 && drain_row[s]) shadow_sel = shadow_sel >> ((C * ACCW) << s);
    end

    // ---------------------------------------------------------------- drain and narrow
    always @(posedge clk) begin
        v4 <= 1'b0;
        if (drain_left != 0) begin
            v4 <= 1'b1;
            row4 <= drain_row;
            last4 <= (drain_left == 1);
            d4 <= shadow_row;
            shift4 <= shift_s;
            width4 <= width_s;
            tag4 <= tag_s;
        end
        if (v2 && last2) begin
            drain_left <= {1'b0, rows2};
            drain_row <= {RB{1'b0}};
            shift_s <= shift2;
            width_s <= width2;
            tag_s <= tag2;
        end else if (drain_left != 0) begin
            drain_left <= drain_left - 1'b1;
            drain_row <= drain_row + 1'b1;
        end
        if (rst) begin
            drain_left <= 8'd0;
            drain_row <= {RB{1'b0}};
            v4 <= 1'b0;
        end
    end

    wire [C*OW-1:0] y4;
    wire [C-1:0]    sat4;
    generate
        for (gc = 0; gc < C; gc = gc + 1) begin : g_narrow
            hrl_learn_narrow #(.IW(ACCW), .OW(OW), .SMAX(ACCW), .PIPE(NPIPE)) narrow_inst (
                .clk(clk), .x(d4[gc*ACCW +: ACCW]), .shift(shift4), .width(width4),
                .y(y4[gc*OW +: OW]), .sat(sat4[gc]));
        end
    endgenerate

    // Stages 5 to 7: the narrowing's own registers (PIPE = NPIPE); the side band waits
    // with it in a shift register.
    reg [NPIPE-1:0]      v_p, last_p;
    reg [NPIPE*RB-1:0]   row_p;
    reg [NPIPE*TAGW-1:0] tag_p;
    always @(posedge clk) begin
        v_p <= {v_p[NPIPE-2:0], v4};
        last_p <= {last_p[NPIPE-2:0], v4 && last4};
        row_p <= {row_p[(NPIPE-1)*RB-1:0], row4};
        tag_p <= {tag_p[(NPIPE-1)*TAGW-1:0], tag4};
        out_valid <= v_p[NPIPE-1];
        out_row <= row_p[(NPIPE-1)*RB +: RB];
        out_last <= last_p[NPIPE-1];
        out_data <= y4;
        out_sat <= sat4;
        out_tag <= tag_p[(NPIPE-1)*TAGW +: TAGW];
        if (rst) begin
            v_p <= {NPIPE{1'b0}};
            out_valid <= 1'b0;
        end
    end
endmodule

`default_nettype wire
