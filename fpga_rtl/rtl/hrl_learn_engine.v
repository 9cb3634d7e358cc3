// hrl_learn_engine: the learning module's engine, driven by a table of layer operations, so
// that one set of parameters runs any ReLU MLP up to NL layers of widths up to NMAX on
// batches up to BMAX, forward (the `infer` primitive) and backward with the weight and bias
// gradients (the products of `train`). One R x C array serves the three products by what
// the feeders read (the banks' transposed reads). Bit for bit hrl.fixed_point.layers:
// dense_forward (kind 0), dense_backward (kinds 1 and 2), weight_grad (3) and bias_grad (4),
// given the table the host writes from hrl.fixed_point formats.
//
// Parts: five hrl_learn_weight_bank memories: activations (LA = max(R, C) lanes of OW-bit
// words), their nonzero bits (LA lanes of 1 bit, written with every activation word: the
// ReLU derivative mask, read at the drain while the activation bank feeds the array),
// deltas and gradients (LA lanes of OW bits), weights (C lanes of BW bits), biases (C lanes
// of BW bits); one hrl_learn_mac_array (R x C) and one hrl_learn_activation (ReLU, linear or
// the derivative mask; the saturation count). What each kind reads and writes:
//   kind 0 forward     Y (M x N) = act(X @ W + b): x a column of X (activation bank), w a row
//                      of W (weight bank), the bias preloaded; Y to the activation bank.
//   kind 1 backward    Y (M x N) = X @ W^T, X the delta (M x K, delta bank, a column), W the
//                      layer's weights (N x K, weight bank, a column: the transposed read);
//                      Y to the delta bank. The network's input delta (no mask).
//   kind 2 backward    as kind 1, Y = mask * (X @ W^T): the mask is the nonzero bits of the
//                      layer's input activation (M x N at M_BASE, with Y's stride), masked
//                      words count no saturation (hrl_learn_activation mode 2).
//   kind 3 weight grad Y (M x N) = X^T @ D: X the layer's input activation (K x M, activation
//                      bank, a row: the transposed read), D the delta (K x N at W_BASE of the
//                      delta bank, a row); Y to the delta bank. K is the batch.
//   kind 4 bias grad   Y (1 x N) = 1^T @ D: x the word 1 (format Q2.0), D as kind 3.
// No kind but 0 adds a bias. An op may read the first M (or K) rows of a stored matrix with
// more rows (the backward pass of the first B rows of s and s' stacked). The banks' depths
// follow from the parameters: activations 2 (NL + 1) x BMAX x 2**SLA words per lane, SLA =
// ceil(log2(ceil(NMAX / LA))) (every layer's input and the last output stay for the backward
// pass, of an online and a target net), deltas and gradients ((NL + 1) x BMAX + NL x
// (NMAX + 1)) x 2**SLA (each layer's delta, weight gradient and bias gradient row), weights
// 2 NL x NMAX x 2**ceil(log2(ceil(NMAX / C))) and biases 2 NL x 2**ceil(log2(ceil(NMAX / C)))
// (an online and a target net). The table holds 6 x NL ops (DQN's step of NL layers takes
// 5 NL - 1: the online net on s and s' stacked, the target net on s', the backward pass on
// the first rows of the online net's). The controller itself is counters, the op table
// (registers) and comparators: no multiplier outside the array.
//
// The host, while the engine is idle (busy low):
//   * writes matrices into the banks (h_wr_*: a row block of one bank, the banks' own layout,
//     row stride 2**slog words of a bank; hrl_learn_weight_bank's header). The weight and
//     bias banks (h_wr_sel 1, 2) take the host's writes while a run is busy too, as no op
//     writes them: rows that no op of the run reads (the host's promise; hrl_learn_step
//     writes the target net's words while the online net's forward ops run);
//   * writes the op table (op_wr_*: op `op_wr_op`, field `op_wr_field`, value `op_wr_data`):
//       0 X_BASE  base of the x operand's matrix (see the kinds), 1 X_SLOG its stride
//       2 M output rows   3 K beats: kinds 0..2 M 1..BMAX (the batch), K 1..NMAX; kind 3
//         M 1..NMAX, K 1..BMAX (the batch); kind 4 M 1, K 1..BMAX
//       4 N output columns (1..NMAX)
//       5 W_BASE  base of the w operand's matrix, 6 W_SLOG its stride
//       7 B_BASE  bias-bank base of the bias (kind 0; 1 x N, read as row 0 with stride 1)
//       8 Y_BASE  base of the output Y (M x N), 9 Y_SLOG its stride
//      10 RELU    kind 0: 1: y = max(z, 0) (a hidden layer), 0: linear (the last layer)
//      11 SHIFT   the narrowing's right shift x.frac + w.frac - y.frac (signed 8 bits, -4..)
//      12 WIDTH   the output word's width (2..OW); 13 BSHIFT the bias's left shift
//                 x.frac + w.frac - bias.frac (0..BSMAX)
//      14 KIND    0..4 (above), plus 8 for "independent": the op reads nothing that the op
//                 before it writes (the host's promise), so its beats do not wait for that
//                 op's writes; only its very last beat does (see the schedule)
//      15 M_BASE  kind 2: activation-bank base of the mask
//     The x words of every op must fit AW bits and the w words BW bits (a delta is both in
//     kinds 1..4); every output is stored sign-extended to OW bits.
//   * pulses `start` with `n_ops` (1..6 NL) and `op_first` (0 for a whole table); the engine
//     runs ops op_first..n_ops-1 in order (so a step sequencer runs the forward ops, then the
//     backward ops of the same table after its loss unit; hrl_learn_step) and pulses
//     `done`; `cycles` then holds the cycles it was busy (the edge that took `start`
//     to the one that raised `done`), `sat_count` the outputs that saturated (every op's, as
//     the layers' n_sat), `error` whether an op's fields were out of range (the run stops
//     at that op), `fault` whether a beat was ever refused by the array (never, by the rule
//     below: a testbench check);
//   * reads any matrix of the activation bank (h_rd_sel 0) or the delta bank (1) back
//     (h_rd_*: a row block, 5 cycles later): Q values, deltas, gradients.
// The host ports are registered: a write or a read the host drives in a cycle with busy low
// reaches the banks in the next cycle, so no path runs from the host's logic (a step
// module's sequencer, the kernel's) into the banks' address arithmetic. A write driven with
// `start`, or in the cycle before, still lands while the engine loads its first op: the
// engine's own first read issues two cycles after `start` and its first write later still.
// Writes then take effect one edge later than driven; a read after a write keeps its order.
//
// Schedule: an op's output is walked in tiles, row block major (R rows by C columns, K beats
// each; ragged last blocks read zeros past the matrix's edge and drain only their rows). A
// beat is issued every cycle: the banks' reads take 4 cycles, so the array sees the beat 4
// cycles after its issue. The array accumulates a tile while the previous one drains; its
// in_ready rule (a tile's last beat waits until the previous tile's drain has at most 3 rows
// left and no last beat is in flight) is applied here, at the issue, as "a last beat issues
// no earlier than max(3, rows of the previous tile) cycles after the previous last beat" (the
// same rule: hrl_learn_mac_array's header), so the read pipeline never stalls. A
// tile of K beats after one of n' rows thus costs max(K, n', 3) cycles
// (hrl.mapping.learner_schedule.phase_cycles). Drained rows wait 4 cycles (the mask bank's
// read, issued as the row leaves the array), pass the activation unit and are written into
// their bank, tagged with their op's parity (two slots of output fields: the draining op's
// and the issuing op's).
//
// Layers overlap: the next op's fields load as soon as an op's last beat is issued, and a
// beat of an op waits only for the operand it reads. An op whose input is the previous op's
// output (both forward, or both backward; same base, stride, rows; K = the previous N:
// "chained") reads column k of row block r0 once the previous op's tile holding it is
// written (a write position, the next tile to be written, moves as each tile's last row is
// written; the test reads it registered, a cycle later); an independent op (KIND + 8)
// issues at once; any other op waits for the previous
// op to be written whole. Tiles drain in issue order, and an independent op's very last beat
// waits for the previous op to be written whole, so an op's last beat implies that the op
// before it is written whole: no third op is ever in flight (two slots of output fields).
// A chained layer's first tiles thus run while the previous layer's last tiles drain,
// instead of the drain, the write and the read (learner_schedule's DEP_GAP) between layers.
`default_nettype none

module hrl_learn_engine #(
    // Rows of the array (samples of a tile); a power of two, 1..64 (max(R, C) at least 2).
    parameter R = 4,
    // Columns of the array (output neurons of a tile); a power of two, 1..64.
    parameter C = 4,
    // Width of an activation word as the array reads it (the act format's width).
    parameter AW = 16,
    // Width of a weight word and of a bias word (the weight format's width).
    parameter BW = 16,
    // Widest output word (the value format's width): the activation bank's word width.
    parameter OW = 24,
    // Largest layer width: any op's K and N, and the array's longest tile (KMAX).
    parameter NMAX = 64,
    // Largest number of layers (the op table holds 6 x NL ops).
    parameter NL = 4,
    // Largest batch: any op's M.
    parameter BMAX = 32,
    // Largest left shift of a bias into the accumulator.
    parameter BSMAX = 24,
    // Width of the cycle and saturation counters.
    parameter SW = 32
) (
    input  wire                 clk,
    input  wire                 rst,
    // control
    input  wire                 start,      // with busy low: run ops 0..n_ops-1
    input  wire [OPB:0]         n_ops,      // with start: 1..6 NL, one past the last op run
    input  wire [OPB-1:0]       op_first,   // with start: the first op run (0..n_ops-1)
    output reg                  busy,
    output reg                  done,       // one cycle, when the run ends
    output reg                  error,      // the run stopped at an op with a field out of range
    output reg                  fault,      // a beat was refused by the array (never expected)
    output reg  [SW-1:0]        cycles,     // cycles of the last run
    output wire [SW-1:0]        sat_count,  // saturated outputs of the last run
    // the op table (while idle)
    input  wire                 op_wr_en,
    input  wire [OPB-1:0]       op_wr_op,
    input  wire [3:0]           op_wr_field,
    input  wire [FW-1:0]        op_wr_data,
    // the banks' host write port (while idle): 0 activations, 1 weights, 2 biases, 3 deltas
    input  wire                 h_wr_en,
    input  wire [1:0]           h_wr_sel,
    input  wire [HAB-1:0]       h_wr_base,
    input  wire [4:0]           h_wr_slog,
    input  wire [IW-1:0]        h_wr_i,
    input  wire [IW-1:0]        h_wr_j,
    input  wire [LA-1:0]        h_wr_mask,  // the weight and bias banks take lanes 0..C-1
    input  wire [LA*HW-1:0]     h_wr_data,  // lane c at [c*HW +: HW] (low bits of the bank's)
    // the host read port (while idle): h_rd_sel 0 the activation bank, 1 the delta bank;
    // row h_rd_i, columns h_rd_j..+LA-1
    input  wire                 h_rd_en,
    input  wire                 h_rd_sel,
    input  wire [HAB-1:0]       h_rd_base,
    input  wire [4:0]           h_rd_slog,
    input  wire [IW-1:0]        h_rd_i,
    input  wire [IW-1:0]        h_rd_j,
    input  wire [IW-1:0]        h_rd_rows,
    input  wire [IW-1:0]        h_rd_cols,
    output wire [LA*OW-1:0]     h_rd_data   // 5 cycles after h_rd_en, lane c at [c*OW +: OW]
);
    // ------------------------------------------------------------------ sizes
    localparam LA = (R > C) ? R : C;           // activation-bank lanes
    localparam BANK_LAT = 4;                   // a bank's read (hrl_learn_weight_bank)
    localparam LGA = $clog2(LA);
    localparam LGC = $clog2(C);
    localparam DMAX = (NMAX > BMAX) ? NMAX : BMAX;   // an op's longest tile (K)
    localparam IW = $clog2(DMAX + 1);          // a row or column index, a dimension
    localparam SLA = $clog2((NMAX + LA - 1) / LA);  // widest row stride (log2) of an activation
    localparam SLC = $clog2((NMAX + C - 1) / C);    // ... of a weight matrix
    // Every layer's input and the last output kept (NL + 1 matrices of BMAX x NMAX), twice
    // (an online and a target net); the deltas (NL + 1 such matrices) and the gradients (NL
    // matrices of NMAX + 1 rows); 2 NL weight matrices and bias rows.
    localparam ADEPTH = 2 * (NL + 1) * BMAX * (1 << SLA);
    localparam DDEPTH = ((NL + 1) * BMAX + NL * (NMAX + 1)) * (1 << SLA);
    localparam WDEPTH = 2 * NL * NMAX * (1 << SLC);
    localparam BDEPTH = 2 * NL * (1 << SLC);
    localparam AAB = (ADEPTH > 1) ? $clog2(ADEPTH) : 1;
    localparam DAB = (DDEPTH > 1) ? $clog2(DDEPTH) : 1;
    localparam WAB = (WDEPTH > 1) ? $clog2(WDEPTH) : 1;
    localparam BAB = (BDEPTH > 1) ? $clog2(BDEPTH) : 1;
    localparam HAB0 = (DAB > WAB) ? DAB : WAB;   // DAB > AAB
    localparam HAB = (HAB0 > BAB) ? HAB0 : BAB;
    localparam HW = (OW > BW) ? OW : BW;
    localparam NOPS = (NL > 0) ? 6 * NL : 6;   // entries of the op table (NL checked below)
    localparam OPB = $clog2((NL > 0) ? 6 * NL : 6);  // NOPS, spelt out for yosys
    localparam FW0 = (HAB > IW) ? HAB : IW;
    localparam FW = (FW0 > 8) ? FW0 : 8;       // an op field's value
    // The array's exact accumulator (hrl_learn_mac_array's bound).
    localparam KB = $clog2(DMAX);
    localparam NEED_P = AW + BW - 2 + KB + 2;
    localparam NEED_B = BW - 1 + BSMAX + 2;
    localparam ACCW = (NEED_P > NEED_B) ? NEED_P : NEED_B;
    localparam OB = (LGA > 0) ? LGA : 1;
    localparam SHMAX = ACCW;                   // the largest narrowing shift
    localparam RBW = (R > 1) ? $clog2(R) : 1;  // a row of a tile

    // Word g of the result is word off + g of x, zero past the last: one stage of 2:1
    // multiplexers per bit of off. (A word picked by an index, x[(off + g) * OW +: OW], maps
    // to a tree of wide LUTs about twice as deep at 32 lanes.)
    function automatic [LA*OW-1:0] words_from(input [LA*OW-1:0] x, input [OB-1:0] off);
        integer s;
        begin
            words_from = x;
            for (s = 0; s < OB; s = s + 1)
                if (off[s]) words_from = words_from >> (OW << s);
        end
    endfunction
    // The same for one bit a lane (the activation bank's nonzero bits).
    function automatic [LA-1:0] bits_from(input [LA-1:0] x, input [OB-1:0] off);
        integer s;
        begin
            bits_from = x;
            for (s = 0; s < OB; s = s + 1)
                if (off[s]) bits_from = bits_from >> (1 << s);
        end
    endfunction

    initial begin
        if (R < 1 || R > 64 || (R & (R - 1)) != 0)
            $fatal(1, "hrl_learn_engine: R=%0d must be a power of two in 1..64", R);
        if (C < 1 || C > 64 || (C & (C - 1)) != 0)
            $fatal(1, "hrl_learn_engine: C=%0d must be a power of two in 1..64", C);
        if (LA < 2) $fatal(1, "hrl_learn_engine: R=%0d, C=%0d: max(R, C) must be at least 2", R, C);
        if (AW < 2 || AW > 27 || BW < 2 || BW > 27)
            $fatal(1, "hrl_learn_engine: AW=%0d, BW=%0d must be in 2..27", AW, BW);
        if (OW < AW || OW > 32)
            $fatal(1, "hrl_learn_engine: OW=%0d must be in AW=%0d..32", OW, AW);
        if (NMAX < 1 || NMAX > 1024)
            $fatal(1, "hrl_learn_engine: NMAX=%0d must be in 1..1024", NMAX);
        if (NL < 1 || NL > 64) $fatal(1, "hrl_learn_engine: NL=%0d must be in 1..64", NL);
        if (BMAX < 1 || BMAX > 1024)
            $fatal(1, "hrl_learn_engine: BMAX=%0d must be in 1..1024", BMAX);
        if (BSMAX < 0 || BSMAX > 40)
            $fatal(1, "hrl_learn_engine: BSMAX=%0d must be in 0..40", BSMAX);
        if (ACCW > 96)
            $fatal(1, "hrl_learn_engine: the accumulator needs %0d bits, at most 96", ACCW);
        if (SW < 8 || SW > 64) $fatal(1, "hrl_learn_engine: SW=%0d must be in 8..64", SW);
        if (HAB > 24 || FW > 32)
            $fatal(1, "hrl_learn_engine: banks of 2**%0d words exceed 2**24", HAB);
    end

    // ------------------------------------------------------------------ the op table
    reg [HAB-1:0] t_xb   [0:NOPS-1];
    reg [4:0]     t_xs   [0:NOPS-1];
    reg [IW-1:0]  t_m    [0:NOPS-1];
    reg [IW-1:0]  t_k    [0:NOPS-1];
    reg [IW-1:0]  t_n    [0:NOPS-1];
    reg [HAB-1:0] t_wb   [0:NOPS-1];
    reg [4:0]     t_ws   [0:NOPS-1];
    reg [BAB-1:0] t_bb   [0:NOPS-1];
    reg [HAB-1:0] t_yb   [0:NOPS-1];
    reg [4:0]     t_ys   [0:NOPS-1];
    reg           t_relu [0:NOPS-1];
    reg [7:0]     t_sh   [0:NOPS-1];
    reg [5:0]     t_wd   [0:NOPS-1];
    reg [5:0]     t_bs   [0:NOPS-1];
    reg [3:0]     t_kind [0:NOPS-1];
    reg [AAB-1:0] t_mb   [0:NOPS-1];

    always @(posedge clk) begin
        if (op_wr_en && !busy) begin
            case (op_wr_field)
                4'd0:  t_xb[op_wr_op] <= op_wr_data[HAB-1:0];
                4'd1:  t_xs[op_wr_op] <= op_wr_data[4:0];
                4'd2:  t_m[op_wr_op] <= op_wr_data[IW-1:0];
                4'd3:  t_k[op_wr_op] <= op_wr_data[IW-1:0];
                4'd4:  t_n[op_wr_op] <= op_wr_data[IW-1:0];
                4'd5:  t_wb[op_wr_op] <= op_wr_data[HAB-1:0];
                4'd6:  t_ws[op_wr_op] <= op_wr_data[4:0];
                4'd7:  t_bb[op_wr_op] <= op_wr_data[BAB-1:0];
                4'd8:  t_yb[op_wr_op] <= op_wr_data[HAB-1:0];
                4'd9:  t_ys[op_wr_op] <= op_wr_data[4:0];
                4'd10: t_relu[op_wr_op] <= op_wr_data[0];
                4'd11: t_sh[op_wr_op] <= op_wr_data[7:0];
                4'd12: t_wd[op_wr_op] <= op_wr_data[5:0];
                4'd13: t_bs[op_wr_op] <= op_wr_data[5:0];
                4'd14: t_kind[op_wr_op] <= op_wr_data[3:0];
                4'd15: t_mb[op_wr_op] <= op_wr_data[AAB-1:0];
            endcase
        end
    end

    // ------------------------------------------------------------------ the controller
    localparam [2:0] S_IDLE = 3'd0, S_LOAD = 3'd1, S_ISSUE = 3'd2, S_WAIT = 3'd3,
                     S_ERR = 3'd4;
    localparam [2:0] K_FWD = 3'd0, K_BWD = 3'd1, K_BWDM = 3'd2, K_WGRAD = 3'd3,
                     K_BGRAD = 3'd4;

    reg [2:0]     state;
    reg [OPB:0]   op, ops;
    // the issuing op's fields
    reg [HAB-1:0] xb, wb;
    reg [4:0]     xs;
    reg [IW-1:0]  m, k, n;
    reg [4:0]     ws;
    reg [BAB-1:0] bb;
    reg [7:0]     sh;
    reg [5:0]     wd, bs;
    reg [2:0]     kind;
    reg           chained;    // this op reads the previous op's output, as it is written
    // state == S_ISSUE with an op whose fields are in range, as one register (issue's term):
    // in S_ISSUE, !issuing is the loaded op's failed field check
    reg           issuing;
    reg           indep;      // this op reads nothing the previous op writes
    // The output fields of the last two ops, by the op's parity (its tag through the array):
    // op j's tiles drain after op j - 1's and before op j + 1's, and op j + 2 loads only
    // once op j is written (see the dependency below), so two slots are enough.
    reg [HAB-1:0] s_yb   [0:1];
    reg [4:0]     s_ys   [0:1];
    reg [IW-1:0]  s_ym   [0:1];
    reg [IW-1:0]  s_yn   [0:1];
    reg [1:0]     s_mode [0:1];   // the activation unit's mode
    reg           s_dst  [0:1];   // 0 the activation bank, 1 the delta bank
    reg           s_bwd  [0:1];   // a backward op (kind 1 or 2): chains to a backward op
    reg [AAB-1:0] s_mb   [0:1];
    // The walk: tile (r0, c0), beat kk, and the walk's flags, registered as the walk moves
    // so that the issue's decision reads registers, not an adder and a compare: beat_last
    // (kk + 1 == k), last_col (c0 + C >= n), last_row (r0 + R >= m) and tile_rows
    // (min(R, m - r0)), each set as its position loads or steps.
    reg [IW-1:0]  r0, c0, kk;
    reg           beat_last, last_col, last_row;
    reg           op_last;    // the op at hand is the run's last (set as it loads)
    reg [6:0]     tile_rows;
    reg [7:0]     gap;        // cycles since the last last beat was issued (saturating)
    reg [7:0]     need_m1;    // that last beat's wait less one: max(rows of its tile, 3) - 1
    reg           gap_ok;     // gap > need_m1: a last beat may issue (the array's rule)
    // The write position: the next tile to be written (wp_r0, wp_c0) of the op of parity
    // wp_tag (tiles are written in issue order, op after op).
    reg [IW-1:0]  wp_r0, wp_c0;
    reg           wp_tag;

    localparam [IW+7:0] RS = R[IW+7:0];
    localparam [IW+7:0] CS = C[IW+7:0];
    localparam [IW-1:0] CMASK = C[IW-1:0] - 1'b1;
    localparam [6:0]    R7 = R[6:0];
    wire [IW+7:0] r0_end = {8'd0, r0} + RS;
    wire [IW+7:0] c0_end = {8'd0, c0} + CS;
    // the flags of the next beat, column block and row block
    wire          beat_last_n = ({1'b0, kk} + {{(IW-1){1'b0}}, 2'd2}) == {1'b0, k};
    wire          last_col_n = c0_end + CS >= {8'd0, n};
    wire          last_row_n = r0_end + RS >= {8'd0, m};
    wire [IW+7:0] rows_left_n = {8'd0, m} - r0_end;
    wire [6:0]    tile_rows_n = (rows_left_n >= RS) ? R7 : rows_left_n[6:0];
    // ... and of an op's first beat, from the table as the op loads
    wire [IW+7:0] t_m_op = {8'd0, t_m[opi]};
    // The beat's operand is written: the previous op is written whole (the write position
    // is at this op's parity), or this op is chained to it and the tile of the previous op
    // that holds column kk of row block r0 is behind the write position.
    wire          tag = op[0];
    wire [IW-1:0] k_al = (kk >> LGC) << LGC;
    wire          beat_last_blk = (kk | CMASK) == kk;   // the last beat of its C block
    // The chained test, registered: each cycle compares the write position with the five
    // places the walk can be at in the next cycle (where it is, the next column block of
    // its beats, the next tile of its row block, the next row block's first tile, the
    // first tile of the next op), and the next cycle picks the one it moved to. The write
    // position it reads is a cycle old, which only holds a chained beat a cycle longer
    // (hrl.mapping.learner_schedule's CHAIN_LAG): the position only moves forward.
    localparam [2:0] W_SAME = 3'd0, W_NEXTK = 3'd1, W_ZERO = 3'd2, W_NROW = 3'd3,
                     W_ORIGIN = 3'd4;
    wire [IW+7:0] k_al_n = {8'd0, k_al} + CS;
    reg  [4:0]    wr_ok;      // the compares, by place
    reg  [2:0]    w_move;     // where the walk moved in the last cycle
    always @(posedge clk) begin
        wr_ok[W_SAME] <= wp_r0 > r0 || (wp_r0 == r0 && wp_c0 > k_al);
        wr_ok[W_NEXTK] <= wp_r0 > r0 || (wp_r0 == r0 && {8'd0, wp_c0} > k_al_n);
        wr_ok[W_ZERO] <= wp_r0 > r0 || (wp_r0 == r0 && wp_c0 != {IW{1'b0}});
        wr_ok[W_NROW] <= {8'd0, wp_r0} > r0_end
                         || ({8'd0, wp_r0} == r0_end && wp_c0 != {IW{1'b0}});
        wr_ok[W_ORIGIN] <= wp_r0 != {IW{1'b0}} || wp_c0 != {IW{1'b0}};
    end
    wire          chain_ok = wr_ok[w_move];
    wire          operand_ready = (wp_tag == tag) || (chained && chain_ok)
                  || (indep && !(beat_last && last_col && last_row));
    wire          issue = issuing && operand_ready && (!beat_last || gap_ok);

    // The walk's move this cycle (for the chained test above).
    always @(posedge clk) begin
        if (state == S_LOAD)
            w_move <= W_ORIGIN;
        else if (!issue)
            w_move <= W_SAME;
        else if (!beat_last)
            w_move <= (beat_last_blk) ? W_NEXTK : W_SAME;
        else if (!last_col)
            w_move <= W_ZERO;
        else
            w_move <= W_NROW;   // (or the op's end: S_LOAD follows, or S_WAIT)
        if (rst) w_move <= W_SAME;
    end

    // An op's fields out of range (checked as they load).
    wire [OPB-1:0] opi = op[OPB-1:0];
    wire [2:0]     op_kind = t_kind[opi][2:0];
    wire           op_bwd = op_kind == K_BWD || op_kind == K_BWDM;
    wire signed [7:0] op_sh = t_sh[opi];
    localparam signed [7:0] SHMAX8 = SHMAX[7:0];
    localparam [IW:0]  BMAXS = BMAX[IW:0];
    localparam [IW:0]  NMAXS = NMAX[IW:0];
    localparam [5:0]   OWS = OW[5:0];
    localparam [5:0]   BSMAXS = BSMAX[5:0];
    localparam [OPB:0] NOPSS = NOPS[OPB:0];
    // M and K by kind: a batch and a layer width (0..2), a layer width and a batch (3), one
    // row and a batch (4).
    wire [IW:0]    m_max = op_kind == K_WGRAD ? NMAXS
                           : (op_kind == K_BGRAD ? {{IW{1'b0}}, 1'b1} : BMAXS);
    wire [IW:0]    k_max = (op_kind == K_WGRAD || op_kind == K_BGRAD) ? BMAXS : NMAXS;
    wire bad_op = op_kind > K_BGRAD
                  || t_m[opi] == 0 || {1'b0, t_m[opi]} > m_max || t_k[opi] == 0
                  || {1'b0, t_k[opi]} > k_max || t_n[opi] == 0 || {1'b0, t_n[opi]} > NMAXS
                  || t_wd[opi] < 6'd2 || t_wd[opi] > OWS
                  || op_sh < -8'sd4 || op_sh > SHMAX8 || t_bs[opi] > BSMAXS;
    // The op at `op` cannot run: a field out of range, or no such op in this run.
    wire load_err = bad_op || ops == 0 || ops > NOPSS || op >= ops;
    // Op `op` reads what the op before it writes, where it writes it, the way it was written
    // (a forward op after a forward op, a backward op after a backward op).
    wire links = t_xb[opi] == s_yb[~tag] && t_xs[opi] == s_ys[~tag]
                 && t_m[opi] == s_ym[~tag] && t_k[opi] == s_yn[~tag]
                 && ((op_kind == K_FWD && !s_dst[~tag]) || (op_bwd && s_bwd[~tag]));
    // The last row of the last op was written this cycle (S_WAIT: every earlier op is
    // written, so the final tile written now is the last op's).
    wire op_written;
    reg  op_written_d;

    always @(posedge clk) begin
        done <= 1'b0;
        if (busy) cycles <= cycles + 1'b1;
        // The array's rule: a last beat issues no earlier than max(3, rows of the previous
        // last beat's tile) cycles after it; gap_ok says so for the next cycle.
        if (issue && beat_last) begin
            gap <= 8'd1;
            need_m1 <= (tile_rows > 7'd3) ? {1'b0, tile_rows} - 8'd1 : 8'd2;
            gap_ok <= 1'b0;
        end else begin
            if (gap != 8'hff) gap <= gap + 1'b1;
            gap_ok <= gap >= need_m1;
        end
        if (mac_in_valid && !mac_in_ready) fault <= 1'b1;
        case (state)
            S_IDLE: if (start) begin
                busy <= 1'b1;
                error <= 1'b0;
                fault <= 1'b0;
                cycles <= {{(SW-1){1'b0}}, 1'b1};
                op <= {1'b0, op_first};
                ops <= n_ops;
                state <= S_LOAD;
            end
            S_LOAD: begin
                xb <= t_xb[opi];
                xs <= t_xs[opi];
                m <= t_m[opi];
                k <= t_k[opi];
                n <= t_n[opi];
                wb <= t_wb[opi];
                ws <= t_ws[opi];
                bb <= t_bb[opi];
                sh <= t_sh[opi];
                wd <= t_wd[opi];
                bs <= t_bs[opi];
                kind <= op_kind;
                chained <= links;
                indep <= t_kind[opi][3];
                s_yb[tag] <= t_yb[opi];
                s_ys[tag] <= t_ys[opi];
                s_ym[tag] <= t_m[opi];
                s_yn[tag] <= t_n[opi];
                s_mode[tag] <= op_kind == K_BWDM ? 2'd2
                               : {1'b0, op_kind == K_FWD && t_relu[opi]};
                s_dst[tag] <= op_kind != K_FWD;
                s_bwd[tag] <= op_bwd;
                s_mb[tag] <= t_mb[opi];
                r0 <= {IW{1'b0}};
                c0 <= {IW{1'b0}};
                kk <= {IW{1'b0}};
                beat_last <= t_k[opi] == {{(IW-1){1'b0}}, 1'b1};
                last_col <= {8'd0, t_n[opi]} <= CS;
                last_row <= t_m_op <= RS;
                tile_rows <= (t_m_op >= RS) ? R7 : t_m_op[6:0];
                op_last <= op + 1'b1 == ops;
                // The fields' check is registered, and S_ISSUE takes it: from the op
                // table's read through its compares into the run's state is a path past
                // the clock. (A good op issues as before; a bad one issues nothing and
                // stops a cycle later.)
                issuing <= !load_err;
                state <= S_ISSUE;
            end
            S_ISSUE: if (!issuing) begin
                error <= 1'b1;
                state <= S_ERR;
            end else if (issue) begin
                if (beat_last) begin
                    kk <= {IW{1'b0}};
                    beat_last <= k == {{(IW-1){1'b0}}, 1'b1};
                    if (last_col) begin
                        c0 <= {IW{1'b0}};
                        last_col <= {8'd0, n} <= CS;
                        if (last_row) begin
                            // Every beat issued; the next op loads at once (its beats wait
                            // for their operands), the last one waits for its writes.
                            issuing <= 1'b0;
                            if (op_last) begin
                                state <= S_WAIT;
                            end else begin
                                op <= op + 1'b1;
                                state <= S_LOAD;
                            end
                        end else begin
                            r0 <= r0_end[IW-1:0];
                            last_row <= last_row_n;
                            tile_rows <= tile_rows_n;
                        end
                    end else begin
                        c0 <= c0_end[IW-1:0];
                        last_col <= last_col_n;
                    end
                end else begin
                    kk <= kk + 1'b1;
                    beat_last <= beat_last_n;
                end
            end
            S_WAIT: if (op_written_d) begin
                busy <= 1'b0;
                done <= 1'b1;
                state <= S_IDLE;
            end
            // An op out of range: nothing of it issued; stop once the ops before it are
            // written (the banks' write port is the host's again after).
            S_ERR: if (wp_tag == tag) begin
                busy <= 1'b0;
                done <= 1'b1;
                state <= S_IDLE;
            end
            default: state <= S_IDLE;
        endcase
        if (rst) begin
            state <= S_IDLE;
            busy <= 1'b0;
            done <= 1'b0;
            issuing <= 1'b0;
            error <= 1'b0;
            fault <= 1'b0;
            cycles <= {SW{1'b0}};
            gap <= 8'hff;
            need_m1 <= 8'd2;
            gap_ok <= 1'b1;
        end
    end

    // ------------------------------------------------------------------ the reads
    // A read of an LA-lane bank is aligned to LA: the tile's R rows of x are lanes
    // off..off+R-1 of it (off = r0 mod LA, a multiple of R), the C columns of a delta read
    // as w lanes c0 mod LA on.
    wire [IW-1:0] r0_al = (r0 >> LGA) << LGA;
    wire [IW-1:0] r0_off = r0 - r0_al;
    wire [IW-1:0] c0_al = (c0 >> LGA) << LGA;
    wire [IW-1:0] c0_off = c0 - c0_al;
    wire          k_fwd = kind == K_FWD;
    wire          k_bwd = kind == K_BWD || kind == K_BWDM;
    wire          k_grad = kind == K_WGRAD || kind == K_BGRAD;

    // The beat's side band, waiting with it for the banks' BANK_LAT cycles (the op's
    // narrowing too: the next op's fields load while this op's last beats are on their way).
    localparam PW = 3 + 7 + 2 * OB + 8 + 6 + 6 + 3;
    reg [PW-1:0]      p_fields [1:BANK_LAT];
    reg [BANK_LAT:1]  p_v;
    integer           ps;
    always @(posedge clk) begin
        p_v[1] <= issue;
        p_fields[1] <= {kk == 0, beat_last, tag, tile_rows, r0_off[OB-1:0], c0_off[OB-1:0],
                        sh, wd, bs, kind};
        for (ps = 2; ps <= BANK_LAT; ps = ps + 1) begin
            p_v[ps] <= p_v[ps-1];
            p_fields[ps] <= p_fields[ps-1];
        end
        if (rst) p_v <= {BANK_LAT{1'b0}};
    end
    // The beat as the array takes it, its operands on the banks' outputs.
    wire          pa_v = p_v[BANK_LAT];
    wire          pa_first, pa_last, pa_tag;
    wire [6:0]    pa_rows;
    wire [OB-1:0] pa_off, pa_coff;
    wire [7:0]    pa_sh;
    wire [5:0]    pa_wd, pa_bs;
    wire [2:0]    pa_kind;
    assign {pa_first, pa_last, pa_tag, pa_rows, pa_off, pa_coff, pa_sh, pa_wd, pa_bs,
            pa_kind} = p_fields[BANK_LAT];

    wire [LA*OW-1:0] a_rd_data, dl_rd_data;
    wire [C*BW-1:0]  w_rd_data, b_rd_data;
    // The host ports' register (the header): hw / hr select the host's write / read of the
    // banks in the cycle after the host drove it (taken only while idle); hwb the host's
    // write of the weight or bias bank (taken while busy too: the engine never writes them).
    reg              hw, hr, hwb;
    reg  [1:0]       hq_wr_sel;
    reg  [HAB-1:0]   hq_wr_base, hq_rd_base;
    reg  [4:0]       hq_wr_slog, hq_rd_slog;
    reg  [IW-1:0]    hq_wr_i, hq_wr_j, hq_rd_i, hq_rd_j, hq_rd_rows, hq_rd_cols;
    reg  [LA-1:0]    hq_wr_mask;
    reg  [LA*HW-1:0] hq_wr_data;
    reg              hq_rd_sel;
    always @(posedge clk) begin
        hw <= h_wr_en && !busy && !rst;
        hwb <= h_wr_en && (h_wr_sel == 2'd1 || h_wr_sel == 2'd2) && !rst;
        hr <= h_rd_en && !busy && !rst;
        hq_wr_sel <= h_wr_sel;
        hq_wr_base <= h_wr_base;
        hq_wr_slog <= h_wr_slog;
        hq_wr_i <= h_wr_i;
        hq_wr_j <= h_wr_j;
        hq_wr_mask <= h_wr_mask;
        hq_wr_data <= h_wr_data;
        hq_rd_sel <= h_rd_sel;
        hq_rd_base <= h_rd_base;
        hq_rd_slog <= h_rd_slog;
        hq_rd_i <= h_rd_i;
        hq_rd_j <= h_rd_j;
        hq_rd_rows <= h_rd_rows;
        hq_rd_cols <= h_rd_cols;
    end
    reg [BANK_LAT:1] h_sel;   // h_rd_sel with its read
    always @(posedge clk) h_sel <= {h_sel[BANK_LAT-1:1], hq_rd_sel};

    // The engine's writes (the drain): the activation bank (with its nonzero bits) or the
    // delta bank.
    wire             eng_wr_en, eng_wr_dst;
    wire [HAB-1:0]   eng_wr_base;
    wire [4:0]       eng_wr_slog;
    wire [IW-1:0]    eng_wr_i, eng_wr_j;
    wire [LA-1:0]    eng_wr_mask;
    wire [LA*OW-1:0] eng_wr_data;
    wire [LA*OW-1:0] h_act_data;
    wire [LA-1:0]    h_nz, eng_nz;
    genvar g;
    generate
        for (g = 0; g < LA; g = g + 1) begin : g_hact
            assign h_act_data[g*OW +: OW] = hq_wr_data[g*HW +: OW];
            assign h_nz[g] = hq_wr_data[g*HW +: OW] != {OW{1'b0}};
            assign eng_nz[g] = eng_wr_data[g*OW +: OW] != {OW{1'b0}};
        end
    endgenerate

    // The activation bank: forward ops read X (column blocks), weight gradients X^T (row
    // blocks); forward ops write Y; the host writes inputs and reads outputs while idle.
    wire             act_rd = k_fwd ? 1'b0 : 1'b1;   // 1: a row read (the transposed read)
    wire             a_wr_en = hw ? (hq_wr_sel == 2'd0) : (eng_wr_en && !eng_wr_dst);
    wire [AAB-1:0]   a_wr_base = hw ? hq_wr_base[AAB-1:0] : eng_wr_base[AAB-1:0];
    wire [4:0]       a_wr_slog = hw ? hq_wr_slog : eng_wr_slog;
    wire [IW-1:0]    a_wr_i = hw ? hq_wr_i : eng_wr_i;
    wire [IW-1:0]    a_wr_j = hw ? hq_wr_j : eng_wr_j;
    wire [LA-1:0]    a_wr_mask = hw ? hq_wr_mask : eng_wr_mask;
    hrl_learn_weight_bank #(.L(LA), .DW(OW), .DEPTH(ADEPTH), .IW(IW)) act_bank_inst (
        .clk(clk),
        .rd_en(hr ? !hq_rd_sel : (issue && !k_bwd)),
        .rd_col(hr ? 1'b0 : !act_rd),
        .rd_base(hr ? hq_rd_base[AAB-1:0] : xb[AAB-1:0]),
        .rd_slog(hr ? hq_rd_slog : xs),
        .rd_i(hr ? hq_rd_i : (act_rd ? kk : r0_al)),
        .rd_j(hr ? hq_rd_j : (act_rd ? r0_al : kk)),
        .rd_rows(hr ? hq_rd_rows : (act_rd ? k : m)),
        .rd_cols(hr ? hq_rd_cols : (act_rd ? m : k)),
        .rd_data(a_rd_data),
        .wr_en(a_wr_en), .wr_base(a_wr_base), .wr_slog(a_wr_slog), .wr_i(a_wr_i),
        .wr_j(a_wr_j), .wr_mask(a_wr_mask), .wr_data(hw ? h_act_data : eng_wr_data));

    // The activations' nonzero bits (the ReLU derivative mask), written with them, read by
    // the drain of a masked backward op: row i of the mask, the LA columns of the row's block.
    wire             mk_rd_en;
    wire [AAB-1:0]   mk_rd_base;
    wire [4:0]       mk_rd_slog;
    wire [IW-1:0]    mk_rd_i, mk_rd_j, mk_rd_rows, mk_rd_cols;
    wire [LA-1:0]    mk_rd_data;
    hrl_learn_weight_bank #(.L(LA), .DW(1), .DEPTH(ADEPTH), .IW(IW)) nz_bank_inst (
        .clk(clk),
        .rd_en(mk_rd_en), .rd_col(1'b0), .rd_base(mk_rd_base), .rd_slog(mk_rd_slog),
        .rd_i(mk_rd_i), .rd_j(mk_rd_j), .rd_rows(mk_rd_rows), .rd_cols(mk_rd_cols),
        .rd_data(mk_rd_data),
        .wr_en(a_wr_en), .wr_base(a_wr_base), .wr_slog(a_wr_slog), .wr_i(a_wr_i),
        .wr_j(a_wr_j), .wr_mask(a_wr_mask), .wr_data(hw ? h_nz : eng_nz));

    // The delta bank: backward ops read X (the delta, column blocks) and write Y, gradient
    // ops read D (row blocks, the w operand) and write the gradients; the host writes the
    // output delta and reads deltas and gradients while idle.
    hrl_learn_weight_bank #(.L(LA), .DW(OW), .DEPTH(DDEPTH), .IW(IW)) delta_bank_inst (
        .clk(clk),
        .rd_en(hr ? hq_rd_sel : (issue && !k_fwd)),
        .rd_col(hr ? 1'b0 : k_bwd),
        .rd_base(hr ? hq_rd_base[DAB-1:0] : (k_bwd ? xb[DAB-1:0] : wb[DAB-1:0])),
        .rd_slog(hr ? hq_rd_slog : (k_bwd ? xs : ws)),
        .rd_i(hr ? hq_rd_i : (k_bwd ? r0_al : kk)),
        .rd_j(hr ? hq_rd_j : (k_bwd ? kk : c0_al)),
        .rd_rows(hr ? hq_rd_rows : (k_bwd ? m : k)),
        .rd_cols(hr ? hq_rd_cols : (k_bwd ? k : n)),
        .rd_data(dl_rd_data),
        .wr_en(hw ? (hq_wr_sel == 2'd3) : (eng_wr_en && eng_wr_dst)),
        .wr_base(hw ? hq_wr_base[DAB-1:0] : eng_wr_base[DAB-1:0]),
        .wr_slog(hw ? hq_wr_slog : eng_wr_slog),
        .wr_i(hw ? hq_wr_i : eng_wr_i),
        .wr_j(hw ? hq_wr_j : eng_wr_j),
        .wr_mask(hw ? hq_wr_mask : eng_wr_mask),
        .wr_data(hw ? h_act_data : eng_wr_data));
    assign h_rd_data = h_sel[BANK_LAT] ? dl_rd_data : a_rd_data;

    wire [C*BW-1:0] h_wb_data;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_hw
            assign h_wb_data[g*BW +: BW] = hq_wr_data[g*HW +: BW];
        end
    endgenerate

    // The weights: forward, row k, columns c0..c0+C-1 of W (K x N); backward, column k, rows
    // c0..c0+C-1 of W (N x K): the transposed read.
    hrl_learn_weight_bank #(.L(C), .DW(BW), .DEPTH(WDEPTH), .IW(IW)) w_bank_inst (
        .clk(clk),
        .rd_en(issue && !k_grad), .rd_col(k_bwd), .rd_base(wb[WAB-1:0]), .rd_slog(ws),
        .rd_i(k_bwd ? c0 : kk), .rd_j(k_bwd ? kk : c0),
        .rd_rows(k_bwd ? n : k), .rd_cols(k_bwd ? k : n), .rd_data(w_rd_data),
        .wr_en(hwb && hq_wr_sel == 2'd1), .wr_base(hq_wr_base[WAB-1:0]),
        .wr_slog(hq_wr_slog), .wr_i(hq_wr_i), .wr_j(hq_wr_j), .wr_mask(hq_wr_mask[C-1:0]),
        .wr_data(h_wb_data));

    // The biases: row 0, columns c0..c0+C-1 (used on a forward tile's first beat).
    hrl_learn_weight_bank #(.L(C), .DW(BW), .DEPTH(BDEPTH), .IW(IW)) b_bank_inst (
        .clk(clk),
        .rd_en(issue && k_fwd), .rd_col(1'b0), .rd_base(bb), .rd_slog(5'd0),
        .rd_i({IW{1'b0}}), .rd_j(c0), .rd_rows({{(IW-1){1'b0}}, 1'b1}), .rd_cols(n),
        .rd_data(b_rd_data),
        .wr_en(hwb && hq_wr_sel == 2'd2), .wr_base(hq_wr_base[BAB-1:0]),
        .wr_slog(hq_wr_slog), .wr_i(hq_wr_i), .wr_j(hq_wr_j), .wr_mask(hq_wr_mask[C-1:0]),
        .wr_data(h_wb_data));

    // ------------------------------------------------------------------ the array
    // x: the activation bank (forward, weight gradient), the delta bank (backward), or the
    // word 1 (bias gradient). w: the weight bank (forward, backward) or the delta bank's
    // row (gradients). The bias: forward only.
    wire             x_dl = pa_kind == K_BWD || pa_kind == K_BWDM;
    wire             x_one = pa_kind == K_BGRAD;
    wire             w_dl = pa_kind == K_WGRAD || pa_kind == K_BGRAD;
    wire [LA*OW-1:0] x_src = x_dl ? dl_rd_data : a_rd_data;
    wire [R*AW-1:0]  mac_x;
    wire [C*BW-1:0]  mac_w;
    // The array's rows read words off.. of the x block, its columns words coff.. of the
    // delta block (offsets below LA; lanes past the block read zero and are never used).
    // (The first R and C words are read: LA = max(R, C).)
    /* verilator lint_off UNUSEDSIGNAL */
    wire [LA*OW-1:0] x_win = words_from(x_src, pa_off);
    wire [LA*OW-1:0] w_win = words_from(dl_rd_data, pa_coff);
    /* verilator lint_on UNUSEDSIGNAL */
    localparam [AW-1:0] ONE = {{(AW-1){1'b0}}, 1'b1};
    generate
        for (g = 0; g < R; g = g + 1) begin : g_x
            wire [OW-1:0] word = x_win[g*OW +: OW];
            assign mac_x[g*AW +: AW] = x_one ? ONE : word[AW-1:0];
            if (OW > AW) begin : g_unused
                // The word was narrowed to AW bits (the host's contract): the rest is sign.
                /* verilator lint_off UNUSEDSIGNAL */
                wire unused = ^word[OW-1:AW];
                /* verilator lint_on UNUSEDSIGNAL */
            end
        end
        for (g = 0; g < C; g = g + 1) begin : g_w
            wire [OW-1:0] word = w_win[g*OW +: OW];
            assign mac_w[g*BW +: BW] = w_dl ? word[BW-1:0] : w_rd_data[g*BW +: BW];
            if (OW > BW) begin : g_unused
                // A delta fits BW bits (the host's contract): the rest is sign.
                /* verilator lint_off UNUSEDSIGNAL */
                wire unused = ^word[OW-1:BW];
                /* verilator lint_on UNUSEDSIGNAL */
            end
        end
    endgenerate
    wire [C*BW-1:0] mac_bias = (pa_kind == K_FWD) ? b_rd_data : {C*BW{1'b0}};

    wire               mac_in_valid = pa_v;
    wire               mac_in_ready;
    wire               mac_out_valid, mac_out_last;
    wire [RBW-1:0]     mac_out_row;
    wire [C*OW-1:0]    mac_out_data;
    wire [C-1:0]       mac_out_sat;
    wire               mac_out_tag;     // the op's parity

    hrl_learn_mac_array #(.R(R), .C(C), .AW(AW), .BW(BW), .BIASW(BW), .BSMAX(BSMAX),
                          .KMAX(DMAX), .ACCW(ACCW), .OW(OW), .TAGW(1)) mac_inst (
        .clk(clk), .rst(rst),
        .in_valid(mac_in_valid), .in_ready(mac_in_ready),
        .in_first(pa_first), .in_last(pa_last),
        .in_x(mac_x), .in_w(mac_w), .in_bias(mac_bias), .in_bias_shift(pa_bs),
        .in_shift(pa_sh), .in_width(pa_wd), .in_tag(pa_tag), .in_rows(pa_rows),
        .out_valid(mac_out_valid), .out_row(mac_out_row), .out_last(mac_out_last),
        .out_data(mac_out_data), .out_sat(mac_out_sat), .out_tag(mac_out_tag));

    // ------------------------------------------------------------------ drain and write
    // The tile being drained (the array drains tiles in issue order; its tag is its op's
    // parity, which picks that op's output fields).
    reg [IW-1:0] d_r0, d_c0;
    wire [IW-1:0] d_m = s_ym[mac_out_tag];
    wire [IW-1:0] d_n = s_yn[mac_out_tag];
    wire [IW+7:0] d_r0_end = {8'd0, d_r0} + RS;
    wire [IW+7:0] d_c0_end = {8'd0, d_c0} + CS;
    wire          d_last_col = d_c0_end >= {8'd0, d_n};
    wire          d_last_row = d_r0_end >= {8'd0, d_m};
    // The tile after this one, in the op's walk ((0, 0) after its last).
    wire [IW-1:0] d_nr0 = !d_last_col ? d_r0 : (d_last_row ? {IW{1'b0}} : d_r0_end[IW-1:0]);
    wire [IW-1:0] d_nc0 = d_last_col ? {IW{1'b0}} : d_c0_end[IW-1:0];
    wire [C-1:0]  d_lanes;
    generate
        for (g = 0; g < C; g = g + 1) begin : g_lanes
            wire [IW+7:0] col = {8'd0, d_c0} + g;
            assign d_lanes[g] = col < {8'd0, d_n};
        end
    endgenerate

    always @(posedge clk) begin
        if (mac_out_valid && mac_out_last) begin
            d_r0 <= d_nr0;
            d_c0 <= d_nc0;
        end
        if (rst) begin
            d_r0 <= {IW{1'b0}};
            d_c0 <= {IW{1'b0}};
        end
    end

    // The row's mask is read as the row leaves the array (row i, the LA-aligned block of its
    // columns); the row waits the bank's BANK_LAT cycles for it.
    wire [IW+7:0] d_i = {8'd0, d_r0} + {{(IW+8-RBW){1'b0}}, mac_out_row};
    wire [IW-1:0] d_c0_al = (d_c0 >> LGA) << LGA;
    assign mk_rd_en = mac_out_valid;
    assign mk_rd_base = s_mb[mac_out_tag];
    assign mk_rd_slog = s_ys[mac_out_tag];
    assign mk_rd_i = d_i[IW-1:0];
    assign mk_rd_j = d_c0_al;
    assign mk_rd_rows = d_m;
    assign mk_rd_cols = d_n;

    // The row, waiting with its mask read for the bank's BANK_LAT cycles.
    localparam QW = C * OW + 2 * C + 4 * IW + 1;
    reg [QW-1:0]     q_fields [1:BANK_LAT];
    reg [BANK_LAT:1] q_v, q_tl, q_fin;
    integer          qs;
    always @(posedge clk) begin
        q_v[1] <= mac_out_valid;
        q_tl[1] <= mac_out_valid && mac_out_last;
        q_fin[1] <= mac_out_valid && mac_out_last && d_last_col && d_last_row;
        q_fields[1] <= {mac_out_tag, mac_out_data, mac_out_sat, d_lanes, d_i[IW-1:0], d_c0,
                        d_nr0, d_nc0};
        for (qs = 2; qs <= BANK_LAT; qs = qs + 1) begin
            q_v[qs] <= q_v[qs-1];
            q_tl[qs] <= q_tl[qs-1];
            q_fin[qs] <= q_fin[qs-1];
            q_fields[qs] <= q_fields[qs-1];
        end
        if (rst) begin
            q_v <= {BANK_LAT{1'b0}};
            q_tl <= {BANK_LAT{1'b0}};
            q_fin <= {BANK_LAT{1'b0}};
        end
    end
    // The row as the activation unit takes it, its mask on the bank's output.
    wire              qa_v = q_v[BANK_LAT];
    wire              qa_tl = q_tl[BANK_LAT];
    wire              qa_fin = q_fin[BANK_LAT];
    wire              qa_tag;
    wire [C*OW-1:0]   qa_z;
    wire [C-1:0]      qa_sat, qa_lanes;
    wire [IW-1:0]     qa_i, qa_c0, qa_nr0, qa_nc0;
    assign {qa_tag, qa_z, qa_sat, qa_lanes, qa_i, qa_c0, qa_nr0, qa_nc0} = q_fields[BANK_LAT];

    // The row's C mask bits: lanes c0 mod LA on of the read block, one word each. A row's
    // c0 is a multiple of C, so with LA == C (a square array, or C > R) the offset is 0 and
    // the window is the block itself: no shifter in front of the activation unit's mask.
    wire [IW-1:0]  qa_c0_al = (qa_c0 >> LGA) << LGA;
    wire [IW-1:0]  qa_off = qa_c0 - qa_c0_al;
    wire [C*OW-1:0] qa_m;
    /* verilator lint_off UNUSEDSIGNAL */
    wire [LA-1:0]   qa_mwin = (LA == C) ? mk_rd_data[LA-1:0]             // its first C read
                                        : bits_from(mk_rd_data, qa_off[OB-1:0]);
    /* verilator lint_on UNUSEDSIGNAL */
    generate
        for (g = 0; g < C; g = g + 1) begin : g_mask
            assign qa_m[g*OW +: OW] = {{(OW-1){1'b0}}, qa_mwin[g]};
        end
    endgenerate

    wire             act_out_valid;
    wire [C*OW-1:0]  act_out_y;
    wire [C-1:0]     act_out_lanes;
    hrl_learn_activation #(.C(C), .W(OW), .SW(SW)) act_inst (
        .clk(clk), .rst(rst), .clear(state == S_IDLE && start),
        .mode(s_mode[qa_tag]), .in_valid(qa_v), .in_z(qa_z),
        .in_sat(qa_sat), .in_lanes(qa_lanes), .in_m(qa_m),
        .out_valid(act_out_valid), .out_y(act_out_y), .out_lanes(act_out_lanes),
        .sat_total(sat_count));

    // The row's place, waiting with it for the activation unit's register.
    reg [IW-1:0] a_i, a_c0, a_nr0, a_nc0;
    reg          a_tag, a_tile_last, a_final;
    always @(posedge clk) begin
        a_i <= qa_i;
        a_c0 <= qa_c0;
        a_nr0 <= qa_nr0;
        a_nc0 <= qa_nc0;
        a_tag <= qa_tag;
        a_tile_last <= qa_v && qa_tl;
        a_final <= qa_v && qa_fin;
    end

    // The write position moves as a tile's last row is written: a read issued in the next
    // cycle sees it.
    always @(posedge clk) begin
        if (act_out_valid && a_tile_last) begin
            wp_r0 <= a_nr0;
            wp_c0 <= a_nc0;
            if (a_final) wp_tag <= ~wp_tag;
        end
        if (rst || (state == S_IDLE && start)) begin
            wp_r0 <= {IW{1'b0}};
            wp_c0 <= {IW{1'b0}};
            wp_tag <= (state == S_IDLE && start) ? op_first[0] : 1'b0;
        end
    end

    wire [IW-1:0] a_c0_al = (a_c0 >> LGA) << LGA;
    wire [IW-1:0] a_off = a_c0 - a_c0_al;
    assign eng_wr_en = act_out_valid;
    assign eng_wr_dst = s_dst[a_tag];
    assign eng_wr_base = s_yb[a_tag];
    assign eng_wr_slog = s_ys[a_tag];
    assign eng_wr_i = a_i;
    assign eng_wr_j = a_c0_al;
    generate
        if (LA == C) begin : g_wr_full
            assign eng_wr_mask = act_out_lanes;
            assign eng_wr_data = act_out_y;
            /* verilator lint_off UNUSEDSIGNAL */
            wire unused = ^{a_off, qa_off};
            /* verilator lint_on UNUSEDSIGNAL */
        end else begin : g_wr_part
            // C < LA: the row's C words go to lanes off..off+C-1 of an LA-lane block.
            wire [OB-1:0] off = a_off[OB-1:0];
            assign eng_wr_mask = {{(LA-C){1'b0}}, act_out_lanes} << off;
            assign eng_wr_data = {{((LA-C)*OW){1'b0}}, act_out_y} << (off * OW);
            /* verilator lint_off UNUSEDSIGNAL */
            wire unused = ^{a_off[IW-1:OB], qa_off[IW-1:OB]};
            /* verilator lint_on UNUSEDSIGNAL */
        end
    endgenerate
    assign op_written = act_out_valid && a_final && state == S_WAIT;
    // `done` a cycle after the last row's write, once the activation unit's saturation count
    // has it (two cycles after its row).
    always @(posedge clk) op_written_d <= op_written && !rst;

    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_misc = ^{r0_off, c0_off, r0_end, c0_end, rows_left_n, d_r0_end, d_c0_end, d_i,
                         xb, wb, eng_wr_base, hq_rd_base, hq_wr_base, hq_wr_data};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
