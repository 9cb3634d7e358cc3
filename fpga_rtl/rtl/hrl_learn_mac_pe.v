// hrl_learn_mac_pe: one processing element of hrl_learn_mac_array (which states the
// arithmetic and the timing; this module is its stages 2 and 3 for one (row, column)).
// Stage 2 registers the exact product x * w of the beat in stage 1; stage 3 adds it to the
// accumulator, or to the bias on a tile's first beat, and on a tile's last beat copies the
// sum into the shadow register that the array drains while the next tile accumulates.
//
// Its own module so that a hierarchical synthesis (learner_resources.py, yosys without
// -flatten) maps one element once and counts it R x C times, instead of optimizing R x C
// copies inlined in the array together. The logic is the same either way.
`default_nettype none

module hrl_learn_mac_pe #(
    // Operand widths (signed) and the accumulator's (hrl_learn_mac_array's AW, BW, ACCW,
    // whose header checks them: ACCW > AW + BW).
    parameter AW = 16,
    parameter BW = 16,
    parameter ACCW = 42
) (
    input  wire                   clk,
    input  wire                   v1,      // stage 1 holds a beat: register its product
    input  wire signed [AW-1:0]   x,       // the beat's operands (stage 1)
    input  wire signed [BW-1:0]   w,
    input  wire                   v2,      // stage 2 holds a beat: accumulate it
    input  wire                   first2,  // ... the tile's first: start from the bias
    input  wire                   last2,   // ... the tile's last: copy the sum out
    input  wire signed [ACCW-1:0] bias,    // the column's bias, aligned (with first2)
    output reg  [ACCW-1:0]        shadow   // the last tile's sum
);
    localparam PW = AW + BW;
    localparam PEXT = (ACCW > PW) ? ACCW - PW : 1;

    reg [PW-1:0]   p2;
    reg [ACCW-1:0] acc;
    wire signed [PW-1:0] prod = x * w;
    always @(posedge clk) if (v1) p2 <= prod;
    wire signed [ACCW-1:0] pe = {{PEXT{p2[PW-1]}}, p2};
    wire signed [ACCW-1:0] base = first2 ? bias : acc;
    wire signed [ACCW-1:0] sum = base + pe;
    always @(posedge clk) begin
        if (v2) acc <= sum;
        if (v2 && last2) shadow <= sum;
    end
endmodule

`default_nettype wire
