// hrl_descend_step: one level of the fixed-point sampling descent (combinational).
// Bit-exact with hrl.replay.sumtree._descend_fixed for one level:
//   T = t*K + digit; child = number of inclusive prefix sums P_j <= T (first j with P_j > T);
//   t_next = T - P_{child-1} (exclusive prefix).
//   If every P_j <= T (only through round-up slack), take the last non-zero child and
//   t_next = that child's word - 1.
// Prefix sums are kept exact in W+log2(K) bits, so no carry splitting is needed; the
// reference's uint32 split arithmetic computes the same values.
//
// Depth: the K prefix sums come from a Kogge-Stone network (log2(K) adder levels, not a
// chain of K - 1 adders); the K comparisons with T and the K candidate remainders
// T - P_{j-1} are formed in parallel, and the first P_j > T selects among them (a
// one-hot mux). So the path is log2(K) + 1 adders plus a priority select.
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

    reg [K*SW-1:0] incl;     // inclusive prefix sums P_j (Kogge-Stone, log2(K) levels)
    reg [K*SW-1:0] next;
    reg [K-1:0]    above;    // P_j > T (monotone in j: a thermometer code)
    reg [K-1:0]    first;    // one-hot: the first j with P_j > T
    /* verilator lint_off UNUSEDSIGNAL */
    reg [SW-1:0]   rem;      // T - P_{j-1} of the chosen child (< 2**W: low bits)
    reg [SW-1:0]   excl;
    /* verilator lint_on UNUSEDSIGNAL */
    reg [S-1:0]    last_nz;  // last non-zero child, 0 if none
    integer j, d;

    always @* begin
        for (j = 0; j < K; j = j + 1)
            incl[j*SW +: SW] = {{S{1'b0}}, row[j*W +: W]};
        for (d = 1; d < K; d = d * 2) begin
            next = incl;
            for (j = d; j < K; j = j + 1)
                next[j*SW +: SW] = incl[j*SW +: SW] + incl[(j-d)*SW +: SW];
            incl = next;
        end

        child = {S{1'b0}};
        rem = {SW{1'b0}};
        last_nz = {S{1'b0}};
        for (j = 0; j < K; j = j + 1) begin
            above[j] = incl[j*SW +: SW] > target;
            first[j] = above[j] && (j == 0 || !above[(j == 0) ? 0 : j - 1]);
            excl = (j == 0) ? {SW{1'b0}} : incl[((j == 0) ? 0 : j - 1)*SW +: SW];
            if (first[j]) begin
                child = child | j[S-1:0];
                rem = rem | (target - excl);
            end
            if (row[j*W +: W] != {W{1'b0}}) last_nz = j[S-1:0];
        end
        if (!above[K-1]) begin
            // Every prefix sum <= T: past the end through round-up slack.
            child = last_nz;
            t_next = row[last_nz*W +: W] - 1'b1;
        end else begin
            t_next = rem[W-1:0];
        end
    end

endmodule

`default_nettype wire
