// hrl_learn_weight_bank: an on-chip matrix memory of L lanes with row and transposed
// (column) reads of L words per cycle, conflict free. The learning module keeps every
// matrix in one: the weights (row reads for A @ W, column reads for delta @ W^T), the
// activations and the deltas (column reads feed the array's x operand, row reads the
// weight gradient's).
//
// Layout: element (i, j) of a matrix at `base` lives in bank (i + j) mod L at address
// base + (i << slog) + (j >> log2 L), where 2**slog >= ceil(columns / L) is the matrix's
// row stride in words of one bank. A row block (i, j0..j0+L-1) then touches every bank
// once at one address, and a column block (i0..i0+L-1, j) every bank once at L addresses;
// the words are rotated back into lane order. j0 (row reads and writes) and i0 (column
// reads) are multiples of L. Lanes past the matrix's `rows` x `cols` read as zero.
//
// Read latency: 2 cycles (address registers, then the memory's registered output, then
// the rotation into the output register counts as the second). Writes (a row block, lane
// enables) take effect at the edge; a read of the same words in that cycle sees the old
// words. Cost: L single-port-read/single-port-write memories of DEPTH words (BRAM or
// LUTRAM), two L-to-L rotators.
`default_nettype none

module hrl_learn_weight_bank #(
    // Lanes (words per read or write); a power of two.
    parameter L = 4,
    // Word width.
    parameter DW = 16,
    // Words per bank (all matrices held together).
    parameter DEPTH = 256,
    // Width of a row or column index (matrices up to 2**IW - 1 rows and columns).
    parameter IW = 9
) (
    input  wire                clk,
    // read: rd_col = 0 reads row rd_i, columns rd_j..rd_j+L-1; rd_col = 1 reads column
    // rd_j, rows rd_i..rd_i+L-1
    input  wire                rd_en,
    input  wire                rd_col,
    input  wire [AB-1:0]       rd_base,
    input  wire [4:0]          rd_slog,
    input  wire [IW-1:0]       rd_i,
    input  wire [IW-1:0]       rd_j,
    input  wire [IW-1:0]       rd_rows,
    input  wire [IW-1:0]       rd_cols,
    output reg  [L*DW-1:0]     rd_data,    // lane c at [c*DW +: DW], 2 cycles after rd_en
    // write: row wr_i, columns wr_j..wr_j+L-1, lane c written when wr_mask[c]
    input  wire                wr_en,
    input  wire [AB-1:0]       wr_base,
    input  wire [4:0]          wr_slog,
    input  wire [IW-1:0]       wr_i,
    input  wire [IW-1:0]       wr_j,
    input  wire [L-1:0]        wr_mask,
    input  wire [L*DW-1:0]     wr_data
);
    localparam AB = (DEPTH > 1) ? $clog2(DEPTH) : 1;
    localparam LB = (L > 1) ? $clog2(L) : 1;
    localparam LG = $clog2(L);   // 0 for L = 1

    initial begin
        if (L < 1 || L > 64 || (L & (L - 1)) != 0)
            $fatal(1, "hrl_learn_weight_bank: L=%0d must be a power of two in 1..64", L);
        if (DW < 1 || DW > 64) $fatal(1, "hrl_learn_weight_bank: DW=%0d must be in 1..64", DW);
        if (DEPTH < 1) $fatal(1, "hrl_learn_weight_bank: DEPTH=%0d must be at least 1", DEPTH);
        if (IW < 1 || IW > 16) $fatal(1, "hrl_learn_weight_bank: IW=%0d must be in 1..16", IW);
    end

    // The lane a bank serves: (bank - rotation) mod L, rotation = (row ? i : j) mod L.
    wire [LB-1:0] rot = (L == 1) ? {LB{1'b0}} : (rd_col ? rd_j[LB-1:0] : rd_i[LB-1:0]);
    wire [LB-1:0] wrot = (L == 1) ? {LB{1'b0}} : wr_i[LB-1:0];
    /* verilator lint_off WIDTHEXPAND */
    /* verilator lint_off WIDTHTRUNC */
    wire [AB-1:0] rd_row_addr = rd_base + (rd_i << rd_slog) + (rd_j >> LG);
    wire [AB-1:0] wr_addr = wr_base + (wr_i << wr_slog) + (wr_j >> LG);
    /* verilator lint_on WIDTHTRUNC */
    /* verilator lint_on WIDTHEXPAND */

    reg [LB-1:0] rot1;
    reg          col1;
    reg [IW-1:0] i1, j1, rows1, cols1;
    wire [L*DW-1:0] bank_q;

    genvar b;
    generate
        for (b = 0; b < L; b = b + 1) begin : g_bank
            reg [DW-1:0] mem [0:DEPTH-1];
            reg [DW-1:0] q;
            wire [LB-1:0] bl = b;
            // Column read: bank b serves lane (b - j) mod L, row i0 + that lane.
            wire [LB-1:0] lane_r = bl - rot;
            /* verilator lint_off WIDTHEXPAND */
            /* verilator lint_off WIDTHTRUNC */
            wire [AB-1:0] col_addr = rd_base + ((rd_i + lane_r) << rd_slog) + (rd_j >> LG);
            /* verilator lint_on WIDTHTRUNC */
            /* verilator lint_on WIDTHEXPAND */
            wire [AB-1:0] addr = rd_col ? col_addr : rd_row_addr;
            // Write: bank b takes lane (b - i) mod L.
            wire [LB-1:0] lane_w = bl - wrot;
            always @(posedge clk) begin
                if (rd_en) q <= mem[addr];
                if (wr_en && wr_mask[lane_w]) mem[wr_addr] <= wr_data[lane_w*DW +: DW];
            end
            assign bank_q[b*DW +: DW] = q;
        end
    endgenerate

    always @(posedge clk) begin
        if (rd_en) begin
            rot1 <= rot;
            col1 <= rd_col;
            i1 <= rd_i;
            j1 <= rd_j;
            rows1 <= rd_rows;
            cols1 <= rd_cols;
        end
    end

    // Lane c of the output is bank (c + rotation) mod L, zero past the matrix's edge.
    genvar c;
    generate
        for (c = 0; c < L; c = c + 1) begin : g_lane
            wire [LB-1:0] cl = c;
            wire [LB-1:0] src = rot1 + cl;
            wire [IW:0]   ci = c;
            wire [IW:0]   ri = {1'b0, i1} + (col1 ? ci : {(IW+1){1'b0}});
            wire [IW:0]   rj = {1'b0, j1} + (col1 ? {(IW+1){1'b0}} : ci);
            wire          in_range = (ri < {1'b0, rows1}) && (rj < {1'b0, cols1});
            always @(posedge clk)
                rd_data[c*DW +: DW] <= in_range ? bank_q[src*DW +: DW] : {DW{1'b0}};
        end
    endgenerate
endmodule

`default_nettype wire
