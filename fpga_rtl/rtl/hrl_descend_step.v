// hrl_descend_step: one level of the fixed-point sampling descent, pipelined.
// Bit-exact with hrl.replay.sumtree._descend_fixed for one level:
//   T = t*K + digit; child = number of inclusive prefix sums P_j <= T (first j with P_j > T);
//   t_next = T - P_{child-1} (exclusive prefix).
//   If every P_j <= T (only through round-up slack), take the last non-zero child and
//   t_next = that child's word - 1.
// Prefix sums are kept exact in W+log2(K) bits, so no carry splitting is needed; the
// reference's uint32 split arithmetic computes the same values.
//
// Structure: the K prefix sums come from a Kogge-Stone network (log2(K) adder levels); then
// the K comparisons P_j > T and the K candidate remainders T - P_{j-1} are formed in
// parallel and the first P_j > T selects among them (one-hot). The fallback word
// (last non-zero child, whose word - 1 is its remainder) is found beside the first adder levels.
//
// Pipelining: the adder levels 1..log2(K) and the compare-and-select (level log2(K)+1) are
// cut by a register after every adder level j with j % LPS == 0, so the step takes
// STAGES = 1 + log2(K)/LPS cycles (integer division): `row`, `t` and `digit` enter in the
// first cycle, `child` and `t_next` are valid (combinationally, from the last registers)
// STAGES-1 cycles later. No enable: one operation per cycle, every cycle. LPS > log2(K)
// gives the former single-cycle step (STAGES = 1, no registers).
`default_nettype none

module hrl_descend_step #(
    // Fanout: children per node (power of two, 2..64).
    parameter K = 4,
    // Bits per tree word.
    parameter W = 32,
    // Adder levels per pipeline stage (>= 1).
    parameter LPS = 2
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire                    clk,   // unused when there is one stage
    /* verilator lint_on UNUSEDSIGNAL */
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
    localparam CW = SW + K + S;   // carried beside the prefix sums: target, lnz, last_nz

    initial begin
        if (LPS < 1) $fatal(1, "%m: LPS=%0d must be >= 1", LPS);
    end

    // Stage 0, beside the first adder levels: the target T and the fallback child, the
    // last non-zero one (child 0 for an all-zero row), as an index and one-hot. Its word - 1
    // is formed in the last stage from the prefix sums: row[j] - 1 = P_K-1 + ~P_{j-1}
    // when every word after j is zero (all ones for an all-zero row, as row[0] - 1).
    reg [S-1:0] last_nz;
    reg [K-1:0] nz, lnz;
    integer z;
    always @* begin
        last_nz = {S{1'b0}};
        for (z = 0; z < K; z = z + 1) begin
            nz[z] = row[z*W +: W] != {W{1'b0}};
            if (nz[z]) last_nz = z[S-1:0];
        end
        for (z = 0; z < K; z = z + 1)
            lnz[z] = (nz[z] || z == 0) && !(|(nz >> (z + 1)));
    end

    // Kogge-Stone level i (1..S): P_j += P_{j-2**(i-1)} for j >= 2**(i-1).
    function [K*SW-1:0] ks_level(input [K*SW-1:0] v, input integer i);
        integer fj;
        begin
            ks_level = v;
            for (fj = (1 << (i - 1)); fj < K; fj = fj + 1)
                ks_level[fj*SW +: SW] = v[fj*SW +: SW] + v[(fj - (1 << (i - 1)))*SW +: SW];
        end
    endfunction

    // NR register stages of LPS adder levels each; the remaining S - NR*LPS levels run in
    // the last stage, before the compare. pf[s]/cw[s]: the prefix sums and {target, lnz,
    // last_nz} entering stage s (one always block per stage keeps the simulators' event
    // counts low).
    localparam NR = S / LPS;
    wire [(NR+1)*K*SW-1:0] pf;
    wire [(NR+1)*CW-1:0]   cw;
    genvar gs, gj;
    generate
        for (gj = 0; gj < K; gj = gj + 1) begin : g_in
            assign pf[gj*SW +: SW] = {{S{1'b0}}, row[gj*W +: W]};
        end
        assign cw[CW-1:0] = {t, digit, lnz, last_nz};
        for (gs = 0; gs < NR; gs = gs + 1) begin : g_stage
            reg [K*SW-1:0] v;
            integer li;
            always @* begin
                v = pf[gs*K*SW +: K*SW];
                for (li = gs * LPS + 1; li <= (gs + 1) * LPS; li = li + 1)
                    v = ks_level(v, li);
            end
            reg [K*SW-1:0] v_q;
            reg [CW-1:0] cw_q;
            always @(posedge clk) begin
                v_q <= v;
                cw_q <= cw[gs*CW +: CW];
            end
            assign pf[(gs+1)*K*SW +: K*SW] = v_q;
            assign cw[(gs+1)*CW +: CW] = cw_q;
        end
    endgenerate

    // Last stage: the remaining adder levels, compare, select.
    reg [K*SW-1:0] incl;     // inclusive prefix sums P_j
    integer lr;
    always @* begin
        incl = pf[NR*K*SW +: K*SW];
        for (lr = NR * LPS + 1; lr <= S; lr = lr + 1)
            incl = ks_level(incl, lr);
    end
    wire [SW-1:0]   target = cw[NR*CW + K + S +: SW];
    wire [K-1:0]    fb_onehot = cw[NR*CW + S +: K];
    wire [S-1:0]    fb_child = cw[NR*CW +: S];

    reg [K-1:0]    above;    // P_j > T (monotone in j: a thermometer code)
    reg [K-1:0]    first;    // one-hot: the first j with P_j > T
    /* verilator lint_off UNUSEDSIGNAL */
    reg [SW-1:0]   rem;      // T - P_{j-1} of the chosen child (< 2**W: low bits)
    reg [SW-1:0]   excl;
    reg [SW-1:0]   fb_excl;  // P_{j-1} of the fallback child
    reg [SW-1:0]   fb;       // its word - 1 (low W bits)
    /* verilator lint_on UNUSEDSIGNAL */
    reg [S-1:0]    sel;
    integer j;

    always @* begin
        sel = {S{1'b0}};
        rem = {SW{1'b0}};
        fb_excl = {SW{1'b0}};
        for (j = 0; j < K; j = j + 1) begin
            above[j] = incl[j*SW +: SW] > target;
            first[j] = above[j] && (j == 0 || !above[(j == 0) ? 0 : j - 1]);
            excl = (j == 0) ? {SW{1'b0}} : incl[((j == 0) ? 0 : j - 1)*SW +: SW];
            if (first[j]) begin
                sel = sel | j[S-1:0];
                rem = rem | (target - excl);
            end
            if (fb_onehot[j]) fb_excl = fb_excl | excl;
        end
        fb = incl[(K-1)*SW +: SW] + ~fb_excl;
        if (!above[K-1]) begin
            // Every prefix sum <= T: past the end through round-up slack.
            child = fb_child;
            t_next = fb[W-1:0];
        end else begin
            child = sel;
            t_next = rem[W-1:0];
        end
    end

endmodule

`default_nettype wire
