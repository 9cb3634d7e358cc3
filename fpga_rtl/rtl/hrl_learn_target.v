// hrl_learn_target: the target-network and operand unit, P parameter words per cycle,
// 3 register stages. Per lane, bit for bit hrl.fixed_point.optim:
//   in_copy = 0 (Polyak):  out_master = polyak(target, online, tau)
//                          = narrow(tau * (online - target) + target)   (master format; the
//                            difference exact in MW+1 bits, the product exact, target
//                            preloaded into the accumulator: one rounding)
//   in_copy = 1 (copy):    out_master = hard_copy(target, online) = online  (in_target unused)
//   always:                out_weight = operand(out_master): the master word rounded to the
//                          weight format, the words the array reads.
// So one pass over a network's masters writes both the new target masters and the target
// net's operand words; and the operand of the online net after an optimizer step is the
// copy mode's out_weight (out_master then repeats the input and need not be written).
// Words: masters in the master format (MW bits, MF fractional), tau in the unit format (UW,
// UF), weights (WW, WF). in_copy travels with its words, so Polyak and copy passes may
// follow each other without a gap; tau is held while Polyak words are in flight.
// Saturation: a flag per lane and narrowing (out_sat_master: the Polyak step's clamp, never
// in copy mode; out_sat_weight: the operand's clamp) and their sum per cycle (out_nsat),
// the counts optim.polyak and optim.operand return summed over the words.
// Cost per lane: an MW+1-bit subtractor and an (MW+1) x UW multiplier whose product the
// preloaded target joins (a DSP's pre-adder, multiplier and post-adder where the widths fit
// one), and two narrowing units with constant shifts.
`default_nettype none

module hrl_learn_target #(
    // Lanes: parameter words per cycle.
    parameter P = 1,
    // Master format (master and target weights): width (MW+1 bits hold a difference, at
    // most 30 as every hrl.fixed_point format) and fractional bits.
    parameter MW = 28,
    parameter MF = 24,
    // Weight format (the array's operands).
    parameter WW = 16,
    parameter WF = 12,
    // Unit format (tau).
    parameter UW = 16,
    parameter UF = 15
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [UW-1:0]     tau,         // Polyak's rate, a unit word
    input  wire              in_valid,
    input  wire              in_copy,     // 1: hard copy (and operand), 0: Polyak
    input  wire [P*MW-1:0]   in_online,   // the online net's master words
    input  wire [P*MW-1:0]   in_target,   // the target net's master words (Polyak)
    output reg               out_valid,
    output reg  [P*MW-1:0]   out_master,  // the target's new master words
    output reg  [P*WW-1:0]   out_weight,  // operand(out_master)
    output reg  [P-1:0]      out_sat_master,
    output reg  [P-1:0]      out_sat_weight,
    output reg  [NB-1:0]     out_nsat     // saturations this cycle, 0..2P
);
    localparam NB = $clog2(2 * P + 1);
    localparam DW = MW + 1;               // online - target, exact
    localparam AW = MW + UW + UF + 2;     // tau * diff + (target << UF), exact
    localparam integer WSHIFT_I = MF - WF;
    localparam integer WSMAX = (WSHIFT_I > 0) ? WSHIFT_I : 0;

    initial begin
        if (P < 1 || P > 64) $fatal(1, "hrl_learn_target: P=%0d must be in 1..64", P);
        if (MW < 2 || MW > 29)
            $fatal(1, "hrl_learn_target: MW=%0d must be in 2..29 (a difference in MW+1 bits)",
                   MW);
        if (WW < 2 || WW > 30 || UW < 2 || UW > 30)
            $fatal(1, "hrl_learn_target: WW=%0d UW=%0d must be in 2..30", WW, UW);
        if (UF < 0 || UF > 24)
            $fatal(1, "hrl_learn_target: UF=%0d must be in 0..24 (the target's alignment)", UF);
        if (WSHIFT_I < -4 || WSHIFT_I > MW)
            $fatal(1, "hrl_learn_target: MF-WF=%0d must be in -4..MW=%0d", WSHIFT_I, MW);
    end

    // ------------------------------------------------------------ stage 1: the operands
    reg              v1, copy1;
    reg  [P*MW-1:0]  on1, tg1;
    always @(posedge clk) begin
        v1 <= in_valid;
        copy1 <= in_copy;
        on1 <= in_online;
        tg1 <= in_target;
        if (rst) v1 <= 1'b0;
    end
    wire signed [AW-1:0] tau_x = {{(AW-UW){tau[UW-1]}}, tau};
    wire signed [7:0]    wshift = WSHIFT_I[7:0];

    // ------------------------------------------------------------ stage 2: Polyak or copy
    reg              v2;
    reg  [P*MW-1:0]  m2;
    reg  [P-1:0]     satm2;
    // ------------------------------------------------------------ stage 3: the operand
    wire [P*WW-1:0]  w3;
    wire [P-1:0]     satw3;

    genvar g;
    generate
        for (g = 0; g < P; g = g + 1) begin : g_lane
            wire signed [MW-1:0] on = on1[g*MW +: MW];
            wire signed [MW-1:0] tg = tg1[g*MW +: MW];
            wire signed [DW-1:0] diff = {on[MW-1], on} - {tg[MW-1], tg};
            wire signed [AW-1:0] diff_x = {{(AW-DW){diff[DW-1]}}, diff};
            wire signed [AW-1:0] tg_x = {{(AW-MW){tg[MW-1]}}, tg};
            wire signed [AW-1:0] mac = diff_x * tau_x + (tg_x <<< UF);
            wire [MW-1:0] pk;
            wire          pk_sat;
            hrl_learn_narrow #(.IW(AW), .OW(MW), .SMAX(UF)) narrow_polyak (
                .clk(clk), .x(mac), .shift(UF[7:0]), .width(MW[5:0]), .y(pk), .sat(pk_sat));
            always @(posedge clk) begin
                m2[g*MW +: MW] <= copy1 ? on : pk;
                satm2[g] <= !copy1 && pk_sat;
            end
            hrl_learn_narrow #(.IW(MW), .OW(WW), .SMAX(WSMAX)) narrow_operand (
                .clk(clk), .x(m2[g*MW +: MW]), .shift(wshift), .width(WW[5:0]),
                .y(w3[g*WW +: WW]), .sat(satw3[g]));
        end
    endgenerate

    always @(posedge clk) begin
        v2 <= v1;
        if (rst) v2 <= 1'b0;
    end

    // The cycle's count: a population count of both flag vectors.
    reg [NB-1:0] nsat;
    integer k;
    always @(*) begin
        nsat = {NB{1'b0}};
        for (k = 0; k < P; k = k + 1)
            nsat = nsat + {{(NB-1){1'b0}}, satm2[k]} + {{(NB-1){1'b0}}, satw3[k]};
    end

    always @(posedge clk) begin
        out_valid <= v2;
        out_master <= m2;
        out_weight <= w3;
        out_sat_master <= satm2;
        out_sat_weight <= satw3;
        out_nsat <= nsat;
        if (rst) out_valid <= 1'b0;
    end
endmodule

`default_nettype wire
