// hrl_learn_target: the target-network and operand unit, P parameter words per cycle,
// LAT = 9 register stages. Per lane, bit for bit hrl.fixed_point.optim:
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
// POLYAK = 0 builds a copy-only unit (the operand lanes of a walk that never runs Polyak
// through them): every word a copy, in_copy, in_target and tau unused, the same latency.
// Cost per lane: an MW+1-bit subtractor and an (MW+1) x UW multiplier whose product the
// preloaded target joins (a DSP's pre-adder, multiplier and post-adder where the widths fit
// one), and two narrowing units with constant shifts; copy-only, the operand's narrowing and
// the delay line alone.
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
    parameter UF = 15,
    // 1: Polyak and copy; 0: copy only (no multiplier; the header).
    parameter POLYAK = 1
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
    localparam LAT = 9;                   // registers from the inputs to the outputs
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

    // The pipeline, one register an edge from the inputs (E1) to the outputs (E9): E1
    // online - target; E2-E3 tau * diff (the product registered twice: the DSP's MREG and
    // PREG); E4 + target (aligned); E5-E6 the Polyak narrowing; E7 Polyak or copy, the
    // master; E8 the operand's narrowing; E9 the outputs. One product, add or narrowing
    // segment per register-to-register segment (experiments/results/fpga_learner/clock.md).
    reg  [LAT:1] vp;                // vp[n]: a word is at E<n>
    reg  [LAT:1] cp;                // ... and its in_copy
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        cp <= {cp[LAT-1:1], in_copy};
        if (rst) vp <= {LAT{1'b0}};
    end
    wire signed [UW-1:0] tau_s = tau;
    wire signed [7:0]    wshift = WSHIFT_I[7:0];

    wire [P*MW-1:0]  m7;
    wire [P-1:0]     satm7;
    wire [P*WW-1:0]  w8;
    wire [P-1:0]     satw8;
    genvar g;
    integer k;
    generate
        for (g = 0; g < P; g = g + 1) begin : g_lane
            wire signed [MW-1:0] on = in_online[g*MW +: MW];
            reg  signed [MW-1:0] on_d [1:6];
            integer d;   // the lane's own loop index
            always @(posedge clk) begin
                on_d[1] <= on;
                for (d = 2; d <= 6; d = d + 1) on_d[d] <= on_d[d-1];
            end
            wire [MW-1:0] pk;
            wire          pk_sat;
            if (POLYAK != 0) begin : g_polyak
                wire signed [MW-1:0] tg = in_target[g*MW +: MW];
                reg  signed [DW-1:0] diff1;
                reg  signed [MW-1:0] tg_d [1:3];
                integer e;
                always @(posedge clk) begin
                    diff1 <= {on[MW-1], on} - {tg[MW-1], tg};
                    tg_d[1] <= tg;
                    for (e = 2; e <= 3; e = e + 1) tg_d[e] <= tg_d[e-1];
                end
                // the product at its own width, DW x UW bits, then aligned into the sum
                reg  signed [DW+UW-1:0] p2, p3;
                reg  signed [AW-1:0]    mac4;
                always @(posedge clk) begin
                    p2 <= diff1 * tau_s;
                    p3 <= p2;
                    mac4 <= {{(AW-DW-UW){p3[DW+UW-1]}}, p3}
                            + ({{(AW-MW){tg_d[3][MW-1]}}, tg_d[3]} <<< UF);
                end
                hrl_learn_narrow #(.IW(AW), .OW(MW), .SMAX(UF), .PIPE(2)) narrow_polyak (
                    .clk(clk), .x(mac4), .shift(UF[7:0]), .width(MW[5:0]), .y(pk),
                    .sat(pk_sat));
            end else begin : g_copy
                assign pk = {MW{1'b0}};
                assign pk_sat = 1'b0;
            end
            // m_r has a reset so that synthesis keeps it a flip-flop: where the lanes only
            // ever copy (a step that runs no Polyak walk through them), on_d and m_r are a
            // plain delay line, which a shift-register LUT would hold, and its slow
            // clock-to-output would start the operand's narrowing below.
            reg  [MW-1:0] m_r;
            reg           satm_r;
            always @(posedge clk) begin
                m_r <= (cp[6] || POLYAK == 0) ? on_d[6] : pk;
                satm_r <= !cp[6] && pk_sat;
                if (rst) begin
                    m_r <= {MW{1'b0}};
                    satm_r <= 1'b0;
                end
            end
            assign m7[g*MW +: MW] = m_r;
            assign satm7[g] = satm_r;
            hrl_learn_narrow #(.IW(MW), .OW(WW), .SMAX(WSMAX), .PIPE(1)) narrow_operand (
                .clk(clk), .x(m_r), .shift(wshift), .width(WW[5:0]),
                .y(w8[g*WW +: WW]), .sat(satw8[g]));
        end
    endgenerate

    // The master and its flag wait a cycle beside the operand's narrowing.
    reg  [P*MW-1:0]  m8;
    reg  [P-1:0]     satm8;
    always @(posedge clk) begin
        m8 <= m7;
        satm8 <= satm7;
    end

    // The cycle's count: a population count of both flag vectors.
    reg [NB-1:0] nsat;
    always @(*) begin
        nsat = {NB{1'b0}};
        for (k = 0; k < P; k = k + 1)
            nsat = nsat + {{(NB-1){1'b0}}, satm8[k]} + {{(NB-1){1'b0}}, satw8[k]};
    end

    always @(posedge clk) begin
        out_master <= m8;
        out_weight <= w8;
        out_sat_master <= satm8;
        out_sat_weight <= satw8;
        out_nsat <= nsat;
    end
    always @(*) out_valid = vp[LAT];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_copy = ^cp[LAT:7];
    wire unused_polyak = ^{in_target, tau_s, cp};   // copy-only (POLYAK = 0)
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
