// hrl_learn_loss_ddpg: DDPG's loss unit, one sample per cycle, LAT = 15 register stages. A critic sample is bit for bit
// hrl.fixed_point.losses.ddpg_critic_unit:
//   target  = narrow(discount * q_next + reward)     (one multiply-add, to the value format)
//   td      = narrow(target - q)                      (exact, saturating)
//   delta   = narrow(-weight * clip(td, -huber, huber))  (to the delta format; no clip
//             when use_huber = 0, DDPG's squared error)
//   out     = delta; |td| (saturating: the most negative word gives the largest) for the
//             priorities.
// An actor sample (in_actor = 1) is hrl.fixed_point.losses.ddpg_actor_delta's row: the
// constant delta -1 (-(1 << DF)), td = |td| = 0 and no saturation; its q words are ignored.
// in_actor travels with its sample, so critic and actor samples may alternate cycle by cycle.
// Words: q, q_next, reward, target, td and huber in the value format (VW bits, VF
// fractional); discount and weight in the probability format (PW, PF); deltas (DW, DF).
// `out_sat` counts the saturations of the sample's three narrowings (0..3).
// Cost: two VW x PW multipliers (the target's and the delta's), three narrowing units (no
// barrel shift: every shift is a constant), a VW+1-bit subtractor and the clip comparators.
`default_nettype none

module hrl_learn_loss_ddpg #(
    // Value format: width and fractional bits.
    parameter VW = 24,
    parameter VF = 8,
    // Probability format (discounts, importance weights).
    parameter PW = 17,
    parameter PF = 15,
    // Delta format (DF in 0..DW-1, so the actor's -1 is a word).
    parameter DW = 18,
    parameter DF = 12
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              use_huber,   // held while samples are in flight
    input  wire [VW-1:0]     huber,       // a value word > 0, held likewise
    input  wire              in_valid,
    input  wire              in_actor,    // 1: the actor's constant delta for this sample
    input  wire [VW-1:0]     in_q,        // Q(s, a) of the online critic
    input  wire [VW-1:0]     in_q_next,   // Q'(s', mu'(s')) of the target critic
    input  wire [VW-1:0]     in_reward,
    input  wire [PW-1:0]     in_discount, // 0 at terminals
    input  wire [PW-1:0]     in_weight,   // the importance weight
    output reg               out_valid,
    output reg  [DW-1:0]     out_delta,
    output reg  [VW-1:0]     out_td,
    output reg  [VW-1:0]     out_abs_td,
    output reg  [1:0]        out_sat
);
    localparam MW = VW + PW + 1;          // discount * q_next + reward, exact
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (with -min)
    localparam integer DSHIFT_I = VF + PF - DF;
    localparam LAT = 15;                  // registers from the inputs to the outputs

    initial begin
        if (VW < 2 || VW > 30 || PW < 2 || PW > 30 || DW < 2 || DW > 30)
            $fatal(1, "hrl_learn_loss_ddpg: VW=%0d PW=%0d DW=%0d must be in 2..30", VW, PW, DW);
        if (PF < 0 || PF > 24)
            $fatal(1, "hrl_learn_loss_ddpg: PF=%0d must be in 0..24 (the reward's alignment)", PF);
        if (DSHIFT_I < -4 || DSHIFT_I > NW)
            $fatal(1, "hrl_learn_loss_ddpg: VF+PF-DF=%0d must be in -4..%0d", DSHIFT_I, NW);
        if (DF < 0 || DF > DW - 1)
            $fatal(1, "hrl_learn_loss_ddpg: DF=%0d must be in 0..DW-1=%0d (the actor's -1)",
                   DF, DW - 1);
    end

    // The pipeline, one register an edge from the inputs (E1) to the outputs (E15): E1 the
    // operands; E2-E3 discount * q_next (registered twice: the DSP's MREG and PREG); E4
    // + reward (aligned); E5-E7 the target's narrowing; E8 target - q; E9 its clamp (td);
    // E10 the clip, negated; E11-E12 -clip * weight; E13-E15 the delta's narrowing and
    // the outputs. One product, add or narrowing segment per register-to-register segment
    // (experiments/results/fpga_learner/clock.md).
    reg  [LAT:1] vp;                // vp[n]: a sample is at E<n>
    reg  [LAT:1] ap;                // ... and its in_actor
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        ap <= {ap[LAT-1:1], in_actor};
        if (rst) vp <= {LAT{1'b0}};
    end
    integer k;

    // ---- E1-E7: the TD target
    reg  signed [VW-1:0] qn1, r1;
    reg  signed [PW-1:0] disc1;
    reg  signed [VW-1:0] q_d [1:7];
    reg  signed [PW-1:0] w_d [1:10];
    reg  signed [VW-1:0] r_d [2:3];
    always @(posedge clk) begin
        qn1 <= in_q_next;
        r1 <= in_reward;
        disc1 <= in_discount;
        q_d[1] <= in_q;
        w_d[1] <= in_weight;
        for (k = 2; k <= 7; k = k + 1) q_d[k] <= q_d[k-1];
        for (k = 2; k <= 10; k = k + 1) w_d[k] <= w_d[k-1];
        r_d[2] <= r1;
        r_d[3] <= r_d[2];
    end
    wire signed [MW-1:0] qn_x = {{(MW-VW){qn1[VW-1]}}, qn1};
    wire signed [MW-1:0] d_x = {{(MW-PW){disc1[PW-1]}}, disc1};
    reg  signed [MW-1:0] pt2, pt3, mac4;
    always @(posedge clk) begin
        pt2 <= qn_x * d_x;
        pt3 <= pt2;
        mac4 <= pt3 + ({{(MW-VW){r_d[3][VW-1]}}, r_d[3]} <<< PF);
    end
    wire [VW-1:0] target_w;
    wire          sat_t;
    hrl_learn_narrow #(.IW(MW), .OW(VW), .SMAX(MW), .PIPE(2)) narrow_target (
        .clk(clk), .x(mac4), .shift(PF[7:0]), .width(VW[5:0]), .y(target_w), .sat(sat_t));
    reg  signed [VW-1:0] target7;
    reg                  sat7, sat8;
    always @(posedge clk) begin
        target7 <= target_w;
        sat7 <= sat_t;
        sat8 <= sat7;
    end

    // ---- E8-E10: td and its clip
    reg  signed [VW:0] diff8;
    always @(posedge clk) diff8 <= {target7[VW-1], target7} - {q_d[7][VW-1], q_d[7]};
    wire [VW-1:0] td_w;
    wire          sat_d;
    hrl_learn_narrow #(.IW(VW+1), .OW(VW), .SMAX(0)) narrow_td (
        .clk(clk), .x(diff8), .shift(8'sd0), .width(VW[5:0]), .y(td_w), .sat(sat_d));
    reg  signed [VW-1:0] td9;
    reg  [1:0]           sat9;
    always @(posedge clk) begin
        td9 <= td_w;
        sat9 <= {1'b0, sat8} + {1'b0, sat_d};
    end
    // -huber registered (huber is held for the whole pass), so that the clip's compare
    // does not wait for a negation; the clipped word negated in VW+1 bits, sign-extended.
    wire signed [VW-1:0] hub = huber;
    reg  signed [VW-1:0] neg_hub;
    always @(posedge clk) neg_hub <= -hub;
    wire signed [VW-1:0] clipped = !use_huber ? td9
                                 : (td9 > hub ? hub : (td9 < neg_hub ? neg_hub : td9));
    wire signed [VW:0]   neg_clip = -{clipped[VW-1], clipped};
    reg  signed [NW-1:0] negc10;
    reg  signed [VW-1:0] td10;
    always @(posedge clk) begin
        negc10 <= {{(NW-VW-1){neg_clip[VW]}}, neg_clip};
        td10 <= td9;
    end

    // ---- E11-E15: the output delta; |td|
    wire signed [NW-1:0] w_x = {{(NW-PW){w_d[10][PW-1]}}, w_d[10]};
    reg  signed [NW-1:0] pd11, pd12;
    always @(posedge clk) begin
        pd11 <= negc10 * w_x;
        pd12 <= pd11;
    end
    wire signed [7:0] dshift = DSHIFT_I[7:0];
    wire [DW-1:0] delta_w;
    wire          sat_o;
    hrl_learn_narrow #(.IW(NW), .OW(DW), .SMAX(NW), .PIPE(2)) narrow_delta (
        .clk(clk), .x(pd12), .shift(dshift), .width(DW[5:0]), .y(delta_w), .sat(sat_o));
    // |td|, the most negative word saturating to the largest (at E11), then to E14.
    reg  [VW-1:0]        abs_d [11:14];
    reg  signed [VW-1:0] td_d [11:14];
    reg  [1:0]           sat_dd [10:14];
    always @(posedge clk) begin
        abs_d[11] <= td10[VW-1] ? ((td10 == {1'b1, {(VW-1){1'b0}}}) ? {1'b0, {(VW-1){1'b1}}}
                                                                  : -td10)
                                : td10;
        td_d[11] <= td10;
        sat_dd[10] <= sat9;
        for (k = 12; k <= 14; k = k + 1) begin
            abs_d[k] <= abs_d[k-1];
            td_d[k] <= td_d[k-1];
        end
        for (k = 11; k <= 14; k = k + 1) sat_dd[k] <= sat_dd[k-1];
    end
    // The actor's dL/dQ = -1: -(1 << DF) in DW bits (DF <= DW-1, checked above).
    wire [DW-1:0] minus_one = -({{(DW-1){1'b0}}, 1'b1} << DF);
    wire          actor14 = ap[14];

    always @(posedge clk) begin
        out_delta <= actor14 ? minus_one : delta_w;
        out_td <= actor14 ? {VW{1'b0}} : td_d[14];
        out_abs_td <= actor14 ? {VW{1'b0}} : abs_d[14];
        out_sat <= actor14 ? 2'd0 : sat_dd[14] + {1'b0, sat_o};
    end
    always @(*) out_valid = vp[LAT];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_actor = ^{ap[LAT], ap[13:1]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
