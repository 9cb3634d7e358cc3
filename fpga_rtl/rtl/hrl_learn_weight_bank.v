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
// Read latency: 4 cycles: the read's inputs registered, the memory's registered output, a
// second register after it, then the rotation into the output register. The input register
// keeps the caller's logic out of the banks' address arithmetic: base + j / L is added on
// the way in, and the row's shift by the stride and one add per bank start at a register
// (a column read's row i0 + lane is an or: i0 is a multiple of L). The second output register
// is there for a deep memory: several block RAMs per lane end in a multiplexer over them,
// which would otherwise run into the rotation in one cycle (the block RAM's output register
// in a vendor flow). Writes (a row block, lane enables) are registered the same way: the
// memory is written at the second edge after wr_en and read at the second edge after
// rd_en, so a read issued in the cycle after a write (or later) sees the new words, one
// issued in the write's cycle the old. Cost: L single-port-read/single-port-write
// memories of DEPTH words (BRAM or LUTRAM), their output registers, the ports' input
// registers, two L-to-L rotators.
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
    output reg  [L*DW-1:0]     rd_data,    // lane c at [c*DW +: DW], 4 cycles after rd_en
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

    // The read's inputs, registered (stage 0), with base + (j >> log2 L), the part of the
    // address that every bank shares, added on the way in.
    reg          rq_en, rq_col;
    reg [AB-1:0] rq_bj;
    reg [4:0]    rq_slog;
    reg [IW-1:0] rq_i, rq_j, rq_rows, rq_cols;
    always @(posedge clk) begin
        rq_en <= rd_en;
        rq_col <= rd_col;
        /* verilator lint_off WIDTHEXPAND */
        /* verilator lint_off WIDTHTRUNC */
        rq_bj <= rd_base + (rd_j >> LG);
        /* verilator lint_on WIDTHTRUNC */
        /* verilator lint_on WIDTHEXPAND */
        rq_slog <= rd_slog;
        rq_i <= rd_i;
        rq_j <= rd_j;
        rq_rows <= rd_rows;
        rq_cols <= rd_cols;
    end

    // The write's inputs, registered the same way.
    reg          wq_en;
    reg [AB-1:0] wq_bj;
    reg [4:0]    wq_slog;
    reg [IW-1:0] wq_i;
    reg [L-1:0]  wq_mask;
    reg [L*DW-1:0] wq_data;
    always @(posedge clk) begin
        wq_en <= wr_en;
        /* verilator lint_off WIDTHEXPAND */
        /* verilator lint_off WIDTHTRUNC */
        wq_bj <= wr_base + (wr_j >> LG);
        /* verilator lint_on WIDTHTRUNC */
        /* verilator lint_on WIDTHEXPAND */
        wq_slog <= wr_slog;
        wq_i <= wr_i;
        wq_mask <= wr_mask;
        wq_data <= wr_data;
    end

    // The lane a bank serves: (bank - rotation) mod L, rotation = (row ? i : j) mod L.
    wire [LB-1:0] rot = (L == 1) ? {LB{1'b0}} : (rq_col ? rq_j[LB-1:0] : rq_i[LB-1:0]);
    // (At L = 1 nothing rotates: wrot and rot2 go unread.)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [LB-1:0] wrot = (L == 1) ? {LB{1'b0}} : wq_i[LB-1:0];
    /* verilator lint_on UNUSEDSIGNAL */
    /* verilator lint_off WIDTHEXPAND */
    /* verilator lint_off WIDTHTRUNC */
    wire [AB-1:0] rd_row_addr = rq_bj + (rq_i << rq_slog);
    wire [AB-1:0] wr_addr = wq_bj + (wq_i << wq_slog);
    /* verilator lint_on WIDTHTRUNC */
    /* verilator lint_on WIDTHEXPAND */

    // The read's place, with the memory's word (stage 1) and its output register (2).
    reg [LB-1:0] rot1;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [LB-1:0] rot2;
    /* verilator lint_on UNUSEDSIGNAL */
    reg          col1;
    reg [IW-1:0] i1, j1, rows1, cols1;
    wire [L*DW-1:0] bank_q;

    // Bank b takes lane (b - i) mod L: the lanes (each a word and its enable) rotated up by
    // i mod L, one stage of 2:1 multiplexers per bit of the rotation. (A word picked by an
    // index, wq_data[lane*DW +: DW], maps to a multiplexer tree of wide LUTs twice as deep.)
    localparam WW = DW + 1;
    wire [(LG+1)*L*WW-1:0] wr_stage;
    genvar b, s;
    generate
        for (b = 0; b < L; b = b + 1) begin : g_wlane
            assign wr_stage[b*WW +: WW] = {wq_mask[b], wq_data[b*DW +: DW]};
        end
        for (s = 0; s < LG; s = s + 1) begin : g_wstage
            for (b = 0; b < L; b = b + 1) begin : g_wb
                assign wr_stage[(s+1)*L*WW + b*WW +: WW] = wrot[s]
                    ? wr_stage[s*L*WW + ((b - (1 << s)) & (L - 1))*WW +: WW]
                    : wr_stage[s*L*WW + b*WW +: WW];
            end
        end
    endgenerate

    generate
        for (b = 0; b < L; b = b + 1) begin : g_bank
            reg [DW-1:0] mem [0:DEPTH-1];
            reg [DW-1:0] q, q2;
            wire [LB-1:0] bl = b;
            // Column read: bank b serves lane (b - j) mod L, row i0 + that lane (i0 is a
            // multiple of L, so the sum is an or).
            wire [LB-1:0] lane_r = bl - rot;
            /* verilator lint_off WIDTHEXPAND */
            /* verilator lint_off WIDTHTRUNC */
            wire [AB-1:0] col_addr = rq_bj + ((rq_i | lane_r) << rq_slog);
            /* verilator lint_on WIDTHTRUNC */
            /* verilator lint_on WIDTHEXPAND */
            wire [AB-1:0] addr = rq_col ? col_addr : rd_row_addr;
            // Write: bank b takes lane (b - i) mod L.
            wire [WW-1:0] w_in = wr_stage[LG*L*WW + b*WW +: WW];
            always @(posedge clk) begin
                if (rq_en) q <= mem[addr];
                if (wq_en && w_in[DW]) mem[wr_addr] <= w_in[DW-1:0];
            end
            always @(posedge clk) q2 <= q;
            assign bank_q[b*DW +: DW] = q2;
        end
    endgenerate

    always @(posedge clk) begin
        if (rq_en) begin
            rot1 <= rot;
            col1 <= rq_col;
            i1 <= rq_i;
            j1 <= rq_j;
            rows1 <= rq_rows;
            cols1 <= rq_cols;
        end
        rot2 <= rot1;
    end

    // Lane c of the output is bank (c + rotation) mod L (the banks rotated down, one stage
    // per bit of the rotation, as the write's), zero past the matrix's edge: which lanes are
    // inside is settled a stage early, from the read's place at the memory's output.
    reg  [L-1:0] in2;
    wire [(LG+1)*L*DW-1:0] rd_stage;
    assign rd_stage[L*DW-1:0] = bank_q;
    genvar c;
    generate
        for (s = 0; s < LG; s = s + 1) begin : g_rstage
            for (c = 0; c < L; c = c + 1) begin : g_rc
                assign rd_stage[(s+1)*L*DW + c*DW +: DW] = rot2[s]
                    ? rd_stage[s*L*DW + ((c + (1 << s)) & (L - 1))*DW +: DW]
                    : rd_stage[s*L*DW + c*DW +: DW];
            end
        end
        for (c = 0; c < L; c = c + 1) begin : g_lane
            wire [IW:0]   ci = c;
            wire [IW:0]   ri = {1'b0, i1} + (col1 ? ci : {(IW+1){1'b0}});
            wire [IW:0]   rj = {1'b0, j1} + (col1 ? {(IW+1){1'b0}} : ci);
            always @(posedge clk) in2[c] <= (ri < {1'b0, rows1}) && (rj < {1'b0, cols1});
            always @(posedge clk)
                rd_data[c*DW +: DW] <= in2[c] ? rd_stage[LG*L*DW + c*DW +: DW] : {DW{1'b0}};
        end
    endgenerate
endmodule

`default_nettype wire
