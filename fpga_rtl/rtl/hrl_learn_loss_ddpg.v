// hrl_learn_loss_ddpg: DDPG's loss unit, one sample per cycle, 4 register stages (the DQN
// unit's latency, so the controller schedules both alike). A critic sample is bit for bit
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

    // ------------------------------------------------------------ stage 1: the operands
    // Registered before the multiplier (a DSP's input registers), as the DQN unit's argmax.
    reg                  v1, actor1;
    reg  signed [VW-1:0] qn1, q1, r1;
    reg  signed [PW-1:0] disc1, w1;
    always @(posedge clk) begin
        v1 <= in_valid;
        actor1 <= in_actor;
        qn1 <= in_q_next;
        q1 <= in_q;
        r1 <= in_reward;
        disc1 <= in_discount;
        w1 <= in_weight;
        if (rst) v1 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 2: the TD target
    wire signed [MW-1:0] qn_x = {{(MW-VW){qn1[VW-1]}}, qn1};
    wire signed [MW-1:0] d_x = {{(MW-PW){disc1[PW-1]}}, disc1};
    wire signed [MW-1:0] r_x = {{(MW-VW){r1[VW-1]}}, r1};
    wire signed [MW-1:0] mac = qn_x * d_x + (r_x <<< PF);
    wire [VW-1:0] target_w;
    wire          sat_t;
    hrl_learn_narrow #(.IW(MW), .OW(VW), .SMAX(MW)) narrow_target (
        .clk(clk), .x(mac), .shift(PF[7:0]), .width(VW[5:0]), .y(target_w), .sat(sat_t));

    reg                  v2, actor2, sat2;
    reg  signed [VW-1:0] target2, q2;
    reg  signed [PW-1:0] w2;
    always @(posedge clk) begin
        v2 <= v1;
        actor2 <= actor1;
        target2 <= target_w;
        sat2 <= sat_t;
        q2 <= q1;
        w2 <= w1;
        if (rst) v2 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 3: td and its clip
    wire signed [VW:0] diff = {target2[VW-1], target2} - {q2[VW-1], q2};
    wire [VW-1:0] td_w;
    wire          sat_d;
    hrl_learn_narrow #(.IW(VW+1), .OW(VW), .SMAX(0)) narrow_td (
        .clk(clk), .x(diff), .shift(8'sd0), .width(VW[5:0]), .y(td_w), .sat(sat_d));
    wire signed [VW-1:0] td_s = td_w;
    wire signed [VW-1:0] hub = huber;
    wire signed [VW-1:0] clipped = !use_huber ? td_s
                                 : (td_s > hub ? hub : (td_s < -hub ? -hub : td_s));

    reg                  v3, actor3;
    reg  [1:0]           sat3;
    reg  signed [VW-1:0] td3, clip3;
    reg  signed [PW-1:0] w3;
    always @(posedge clk) begin
        v3 <= v2;
        actor3 <= actor2;
        sat3 <= {1'b0, sat2} + {1'b0, sat_d};
        td3 <= td_s;
        clip3 <= clipped;
        w3 <= w2;
        if (rst) v3 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 4: the output delta
    wire signed [NW-1:0] negc = -{{(NW-VW){clip3[VW-1]}}, clip3};
    wire signed [NW-1:0] w_x = {{(NW-PW){w3[PW-1]}}, w3};
    wire signed [NW-1:0] prod = negc * w_x;
    wire signed [7:0] dshift = DSHIFT_I[7:0];
    wire [DW-1:0] delta_w;
    wire          sat_o;
    hrl_learn_narrow #(.IW(NW), .OW(DW), .SMAX(NW)) narrow_delta (
        .clk(clk), .x(prod), .shift(dshift), .width(DW[5:0]), .y(delta_w), .sat(sat_o));
    // |td|, the most negative word saturating to the largest.
    wire [VW-1:0] abs_w = td3[VW-1] ? ((td3 == {1'b1, {(VW-1){1'b0}}}) ? {1'b0, {(VW-1){1'b1}}}
                                                                      : -td3)
                                    : td3;
    // The actor's dL/dQ = -1: -(1 << DF) in DW bits (DF <= DW-1, checked above).
    wire [DW-1:0] minus_one = -({{(DW-1){1'b0}}, 1'b1} << DF);

    always @(posedge clk) begin
        out_valid <= v3;
        out_delta <= actor3 ? minus_one : delta_w;
        out_td <= actor3 ? {VW{1'b0}} : td3;
        out_abs_td <= actor3 ? {VW{1'b0}} : abs_w;
        out_sat <= actor3 ? 2'd0 : sat3 + {1'b0, sat_o};
        if (rst) out_valid <= 1'b0;
    end
endmodule

`default_nettype wire
