// hrl_update_step: one level of the bottom-up update for one lane (combinational).
// Rebuilds the row of K siblings that holds this lane's node from
//   1. the row read from the level memory (one cycle old),
//   2. the words that the group one cycle ahead wrote to this level in the same cycle the
//      read was issued (the read cannot see them; lanes in order, later lanes win),
//   3. the words of lower lanes of this lane's own group (issued before this lane),
//   4. this lane's own new word,
// and returns the parent word ceil(sum(row) / K), exactly as FixedPoint.combine. The K-word
// sum is a balanced adder tree (log2(K) levels), not a chain.
`default_nettype none

module hrl_update_step #(
    // Fanout: children per node (power of two, 2..64).
    parameter K = 4,
    // Bits per tree word.
    parameter W = 32,
    // Lanes per group.
    parameter P = 1,
    // This lane's position in its group (0 = issued first).
    parameter LANE = 0,
    // Width of a node index (more than log2(K) bits; upper bits select the row).
    parameter NW = 3
) (
    input  wire [K*W-1:0]  mem_row,
    input  wire [P-1:0]    prev_valid,
    input  wire [P*NW-1:0] prev_node,
    input  wire [P*W-1:0]  prev_word,
    input  wire [P-1:0]    cur_valid,
    input  wire [P*NW-1:0] cur_node,
    input  wire [P*W-1:0]  cur_word,
    output reg  [W-1:0]    parent
);

    localparam S = $clog2(K);
    localparam SW = W + S;

    initial begin
        if (LANE < 0 || LANE >= P) $fatal(1, "%m: LANE=%0d outside [0, P=%0d)", LANE, P);
        if (NW <= S) $fatal(1, "%m: NW=%0d must exceed log2(K)=%0d", NW, S);
    end

    wire [NW-1:0] my_node = cur_node[LANE*NW +: NW];

    reg [K*W-1:0] row;
    reg [K*SW-1:0] part;   // pairwise partial sums: a balanced tree of log2(K) adder levels
    reg [SW-1:0] sum;
    reg [NW-1:0] node;
    integer q, b, d;

    always @* begin
        // Each word of the row is replaced by a compare-and-select on its own position
        // (not a write at a computed bit offset, which synthesizes to a K*W-bit shifter).
        row = mem_row;
        for (q = 0; q < P; q = q + 1) begin
            node = prev_node[q*NW +: NW];
            for (b = 0; b < K; b = b + 1)
                if (prev_valid[q] && node[NW-1:S] == my_node[NW-1:S]
                        && node[S-1:0] == b[S-1:0])
                    row[b*W +: W] = prev_word[q*W +: W];
        end
        for (q = 0; q < LANE; q = q + 1) begin
            node = cur_node[q*NW +: NW];
            for (b = 0; b < K; b = b + 1)
                if (cur_valid[q] && node[NW-1:S] == my_node[NW-1:S]
                        && node[S-1:0] == b[S-1:0])
                    row[b*W +: W] = cur_word[q*W +: W];
        end
        for (b = 0; b < K; b = b + 1)
            if (my_node[S-1:0] == b[S-1:0]) row[b*W +: W] = cur_word[LANE*W +: W];
        // The sum as a balanced tree (exact in SW bits, so the order does not matter).
        for (b = 0; b < K; b = b + 1)
            part[b*SW +: SW] = {{S{1'b0}}, row[b*W +: W]};
        for (d = 1; d < K; d = d * 2)
            for (b = 0; b + d < K; b = b + 2 * d)
                part[b*SW +: SW] = part[b*SW +: SW] + part[(b+d)*SW +: SW];
        sum = part[SW-1:0];
        // ceil(sum / K); fits W bits because sum <= K * (2**W - 1).
        parent = sum[SW-1:S] + {{(W-1){1'b0}}, sum[S-1:0] != {S{1'b0}}};
    end

endmodule

`default_nettype wire
