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
// The target, td and delta lines are hrl_learn_td's, which DQN's loss unit shares.
// Cost: hrl_learn_td's (two VW x PW multipliers, three narrowing units, the clip), the
// operands' register and the actor's output multiplexers.
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
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (hrl_learn_td's)
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
    // operands; E2-E14 the TD pipeline (hrl_learn_td's C1-C13: the target, td, the clip,
    // the delta); E15 the outputs, an actor sample's constant in place of its critic words.
    reg  [LAT:1] vp;                // vp[n]: a sample is at E<n>
    reg  [LAT:1] ap;                // ... and its in_actor
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        ap <= {ap[LAT-1:1], in_actor};
        if (rst) vp <= {LAT{1'b0}};
    end

    // ---- E1: the operands
    reg  [VW-1:0] q1, qn1, r1;
    reg  [PW-1:0] disc1, w1;
    always @(posedge clk) begin
        q1 <= in_q;
        qn1 <= in_q_next;
        r1 <= in_reward;
        disc1 <= in_discount;
        w1 <= in_weight;
    end

    // ---- E2-E14: the TD pipeline
    wire [DW-1:0] delta14;
    wire [VW-1:0] td14, abs14;
    wire [1:0]    sat14;
    hrl_learn_td #(.VW(VW), .VF(VF), .PW(PW), .PF(PF), .DW(DW), .DF(DF)) td_inst (
        .clk(clk), .use_huber(use_huber), .huber(huber), .q(q1), .q_next(qn1), .reward(r1),
        .discount(disc1), .weight(w1), .out_delta(delta14), .out_td(td14),
        .out_abs_td(abs14), .out_sat(sat14));

    // ---- E15: the outputs. The actor's dL/dQ = -1: -(1 << DF) in DW bits (DF <= DW-1,
    // checked above).
    wire [DW-1:0] minus_one = -({{(DW-1){1'b0}}, 1'b1} << DF);
    wire          actor14 = ap[14];
    always @(posedge clk) begin
        out_delta <= actor14 ? minus_one : delta14;
        out_td <= actor14 ? {VW{1'b0}} : td14;
        out_abs_td <= actor14 ? {VW{1'b0}} : abs14;
        out_sat <= actor14 ? 2'd0 : sat14;
    end
    always @(*) out_valid = vp[LAT];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_actor = ^{ap[LAT], ap[13:1]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
