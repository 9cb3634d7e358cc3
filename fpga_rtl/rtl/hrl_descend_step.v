// hrl_descend_step: one level of the fixed-point sampling descent (combinational).
// Bit-exact with hrl.replay.sumtree._descend_fixed for one level:
//   T = t*K + digit; child = number of inclusive prefix sums P_j <= T (first j with P_j > T);
//   t_next = T - P_{child-1} (exclusive prefix).
//   If every P_j <= T (only through round-up slack), take the last non-zero child and
//   t_next = that child's word - 1.
// Prefix sums are kept exact in W+log2(K) bits, so no carry splitting is needed; the
// reference's uint32 split arithmetic computes the same values.
`default_nettype none

module hrl_descend_step #(
    // Fanout: children per node (power of two, 2..64).
    parameter K = 4,
    // Bits per tree word.
    parameter W = 32
) (
    // The K children of the current node, child 0 in the low bits.
    input  wire [K*W-1:0]          row,
    // Remainder carried from the level above, in the parent's units.
    input  wire [W-1:0]            t,
    // The next log2(K) digits of the random product.
    input  wire [$clog2(K)-1:0]    digit,
    output reg  [$clog2(K)-1:0]    child,
    output reg  [W-1:0]            t_next
);

    localparam S = $clog2(K);
    localparam SW = W + S;  // exact width of a sum of K words

    wire [SW-1:0] target = {t, digit};

    reg [SW-1:0] incl;      // running inclusive prefix sum
    /* verilator lint_off UNUSEDSIGNAL */
    reg [SW-1:0] excl_sel;  // exclusive prefix of the chosen child (T - it < 2**W: low bits)
    /* verilator lint_on UNUSEDSIGNAL */
    reg [S:0]    count;     // prefix sums <= target (0..K)
    reg [S-1:0]  last_nz;   // last non-zero child, 0 if none
    reg [W-1:0]  word;
    integer j;

    always @* begin
        incl = {SW{1'b0}};
        excl_sel = {SW{1'b0}};
        count = {(S+1){1'b0}};
        last_nz = {S{1'b0}};
        for (j = 0; j < K; j = j + 1) begin
            word = row[j*W +: W];
            // The exclusive prefix of the first child whose inclusive sum passes the target.
            if (incl + {{S{1'b0}}, word} > target && count == j[S:0])
                excl_sel = incl;
            incl = incl + {{S{1'b0}}, word};
            if (incl <= target) count = count + 1'b1;
            if (word != {W{1'b0}}) last_nz = j[S-1:0];
        end
        if (count[S]) begin
            // count == K: past the end through round-up slack.
            child = last_nz;
            t_next = row[last_nz*W +: W] - 1'b1;
        end else begin
            child = count[S-1:0];
            t_next = target[W-1:0] - excl_sel[W-1:0];
        end
    end

endmodule

`default_nettype wire
