// hrl_update_step: one level of the bottom-up update for one lane, pipelined.
// Rebuilds the row of K siblings that holds this lane's node from
//   1. the row read from the level memory (issued one cycle before the row arrives),
//   2. the words that the group one cycle ahead wrote to this level in the cycle the read
//      was issued (the read cannot see them; lanes in order, later lanes win),
//   3. the words of lower lanes of this lane's own group (issued before this lane),
//   4. this lane's own new word,
// and returns the parent word ceil(sum(row) / K), exactly as FixedPoint.combine. The K-word
// sum is a balanced adder tree (log2(K) levels), not a chain.
//
// Timing. Cycle 0 is the cycle the row's memory read is issued: the node indices and valid
// bits of the group one ahead (`pre_prev_*`) and of this group (`pre_cur_*`) are known
// then, so which source wins each of the K words is decided in cycle 0 and registered
// (compares off the row path). Cycle 1: `mem_row` (from the memory), `prev_word` (the
// level's words of the group one ahead) and `cur_word` (this group's words) arrive, the row
// is an AND-OR select of them, then the adder levels. Counting the select as level 0, a
// register follows level j (j = 0..log2(K)-1) when (j+1) % LPS == 0; the round-up follows
// the last adder level. So
// `parent` is valid (combinationally, from the last registers) STAGES = 1 + log2(K)/LPS
// cycles after cycle 0 (integer division): in cycle STAGES. LPS > log2(K): one cycle.
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
    parameter NW = 3,
    // Adder levels per pipeline stage (>= 1).
    parameter LPS = 2
) (
    input  wire            clk,
    // cycle 0
    input  wire [P-1:0]    pre_prev_valid,
    input  wire [P*NW-1:0] pre_prev_node,
    input  wire [P-1:0]    pre_cur_valid,
    input  wire [P*NW-1:0] pre_cur_node,
    // cycle 1
    input  wire [K*W-1:0]  mem_row,
    input  wire [P*W-1:0]  prev_word,
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [P*W-1:0]  cur_word,   // lanes above LANE are not used
    /* verilator lint_on UNUSEDSIGNAL */
    // cycle STAGES
    output reg  [W-1:0]    parent
);

    localparam S = $clog2(K);
    localparam SW = W + S;
    localparam NS = P + LANE + 1;   // sources of a word besides the memory, in issue order

    initial begin
        if (LANE < 0 || LANE >= P) $fatal(1, "%m: LANE=%0d outside [0, P=%0d)", LANE, P);
        if (NW <= S) $fatal(1, "%m: NW=%0d must exceed log2(K)=%0d", NW, S);
        if (LPS < 1) $fatal(1, "%m: LPS=%0d must be >= 1", LPS);
    end

    // ---- cycle 0: per word b, which source wrote it last (one-hot over NS, or none).
    // Source order: prev lanes 0..P-1, then own group's lanes 0..LANE (own word last).
    wire [NW-1:0] my_node = pre_cur_node[LANE*NW +: NW];
    reg [K*NS-1:0] pick;
    reg [NS-1:0] hit;
    reg [NW-1:0] node;
    integer q, b, n;
    always @* begin
        pick = {K*NS{1'b0}};
        for (b = 0; b < K; b = b + 1) begin
            for (q = 0; q < P; q = q + 1) begin
                node = pre_prev_node[q*NW +: NW];
                hit[q] = pre_prev_valid[q] && node[NW-1:S] == my_node[NW-1:S]
                    && node[S-1:0] == b[S-1:0];
            end
            for (q = 0; q < LANE; q = q + 1) begin
                node = pre_cur_node[q*NW +: NW];
                hit[P+q] = pre_cur_valid[q] && node[NW-1:S] == my_node[NW-1:S]
                    && node[S-1:0] == b[S-1:0];
            end
            hit[P+LANE] = my_node[S-1:0] == b[S-1:0];
            // Later sources win: keep the highest hit only.
            for (n = 0; n < NS; n = n + 1) begin
                pick[b*NS+n] = hit[n];
                if (n + 1 < NS)
                    pick[b*NS+n] = hit[n] && !(|(hit >> (n + 1)));
            end
        end
    end
    reg [K*NS-1:0] pick_q;
    always @(posedge clk) pick_q <= pick;

    // ---- cycle 1: the row, then the adder tree.
    wire [NS*W-1:0] src = {cur_word[(LANE+1)*W-1:0], prev_word};
    reg [K*W-1:0] row;
    integer rb, rn;
    always @* begin
        for (rb = 0; rb < K; rb = rb + 1) begin
            row[rb*W +: W] = (|pick_q[rb*NS +: NS]) ? {W{1'b0}} : mem_row[rb*W +: W];
            for (rn = 0; rn < NS; rn = rn + 1)
                row[rb*W +: W] = row[rb*W +: W] | ({W{pick_q[rb*NS+rn]}} & src[rn*W +: W]);
        end
    end

    // Adder-tree level i (1..S): the K/2**i sums of neighbouring pairs, in the low slots.
    function [K*SW-1:0] tree_level(input [K*SW-1:0] v, input integer i);
        integer fj;
        begin
            tree_level = {K*SW{1'b0}};
            for (fj = 0; fj < (K >> i); fj = fj + 1)
                tree_level[fj*SW +: SW] = v[(2*fj)*SW +: SW] + v[(2*fj+1)*SW +: SW];
        end
    endfunction

    // Counting the row select as level 0, a register follows level j (0..log2(K)-1) when
    // (j+1) % LPS == 0: NR = log2(K)/LPS registers, as many as hrl_descend_step has. The
    // adder levels after the last register and the round-up run in the last stage. tr[s]:
    // the partial sums entering stage s (one always block per stage keeps the simulators'
    // event counts low).
    localparam NR = S / LPS;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [(NR+1)*K*SW-1:0] tr;   // slots above a level's K/2**i sums are zero, unused
    /* verilator lint_on UNUSEDSIGNAL */
    genvar gs, gj;
    generate
        for (gj = 0; gj < K; gj = gj + 1) begin : g_in
            assign tr[gj*SW +: SW] = {{S{1'b0}}, row[gj*W +: W]};
        end
        for (gs = 0; gs < NR; gs = gs + 1) begin : g_stage
            reg [K*SW-1:0] v;
            integer li;
            always @* begin
                v = tr[gs*K*SW +: K*SW];
                for (li = (gs == 0 ? 1 : gs * LPS); li <= (gs + 1) * LPS - 1; li = li + 1)
                    v = tree_level(v, li);
            end
            reg [K*SW-1:0] v_q;
            always @(posedge clk) v_q <= v;
            assign tr[(gs+1)*K*SW +: K*SW] = v_q;
        end
    endgenerate

    /* verilator lint_off UNUSEDSIGNAL */
    reg [K*SW-1:0] sums;
    /* verilator lint_on UNUSEDSIGNAL */
    integer lr;
    always @* begin
        sums = tr[NR*K*SW +: K*SW];
        for (lr = (NR == 0 ? 1 : NR * LPS); lr <= S; lr = lr + 1)
            sums = tree_level(sums, lr);
    end

    // ceil(sum / K); fits W bits because sum <= K * (2**W - 1).
    wire [SW-1:0] sum_all = sums[SW-1:0];
    always @* parent = sum_all[SW-1:S] + {{(W-1){1'b0}}, sum_all[S-1:0] != {S{1'b0}}};

endmodule

`default_nettype wire
