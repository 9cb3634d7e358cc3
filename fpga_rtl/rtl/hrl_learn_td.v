// hrl_learn_td: the TD pipeline both loss units share (hrl_learn_loss_dqn after its argmax,
// hrl_learn_loss_ddpg after its operands' register), one sample per cycle. Bit for bit the
// common part of hrl.fixed_point.losses' units:
//   target  = narrow(discount * q_next + reward)     (one multiply-add, to the value format)
//   td      = narrow(target - q)                      (exact, saturating)
//   delta   = narrow(-weight * clip(td, -huber, huber))  (to the delta format; no clip
//             when use_huber = 0)
//   |td|    saturating: the most negative word gives the largest (for the priorities).
// The operands come registered by the caller (their edge is C0 here); the results leave
// LAT = 13 edges later (C13), for the caller to register with its own side band (the taken
// action, the actor's flag), so the two units keep their latencies (20 and 15 stages).
// Words: q, q_next, reward, target, td and huber in the value format (VW bits, VF
// fractional); discount and weight in the probability format (PW, PF); deltas (DW, DF).
// `out_sat` counts the sample's three narrowings' saturations (0..3). The caller checks the
// formats' ranges (its $fatal names the unit).
// Cost: two VW x PW multipliers, three narrowing units (every shift a constant), a VW+1-bit
// subtractor, the clip's comparators and the delay lines of the operands that wait.
`default_nettype none

module hrl_learn_td #(
    parameter VW = 24,
    parameter VF = 8,
    parameter PW = 17,
    parameter PF = 15,
    parameter DW = 18,
    parameter DF = 12
) (
    input  wire          clk,
    input  wire          use_huber,   // held while samples are in flight
    input  wire [VW-1:0] huber,       // a value word > 0, held likewise
    input  wire [VW-1:0] q,           // C0: the taken action's online Q
    input  wire [VW-1:0] q_next,      // C0: the bootstrap's Q
    input  wire [VW-1:0] reward,      // C0
    input  wire [PW-1:0] discount,    // C0: 0 at terminals
    input  wire [PW-1:0] weight,      // C0: the importance weight
    output wire [DW-1:0] out_delta,   // C13
    output wire [VW-1:0] out_td,      // C13
    output wire [VW-1:0] out_abs_td,  // C13
    output wire [1:0]    out_sat      // C13
);
    localparam MW = VW + PW + 1;          // discount * q_next + reward, exact
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (with -min)
    localparam integer DSHIFT_I = VF + PF - DF;

    // The pipeline, one register an edge from the operands (C0): C1-C2 discount * q_next
    // (registered twice: the DSP's MREG and PREG); C3 + reward (aligned); C4-C6 the
    // target's narrowing; C7 target - q; C8 its clamp (td); C9 the clip, negated; C10-C11
    // -clip * weight; C12-C13 the delta's narrowing. One product, add or narrowing segment
    // per register-to-register segment (experiments/results/fpga_learner/clock.md).

    // ---- C1-C6: the TD target
    wire signed [MW-1:0] qn_x = {{(MW-VW){q_next[VW-1]}}, q_next};
    wire signed [MW-1:0] d_x = {{(MW-PW){discount[PW-1]}}, discount};
    wire signed [VW-1:0] r2;
    hrl_delay #(.W(VW), .N(2)) r_to2 (.clk(clk), .d(reward), .q(r2));
    reg  signed [MW-1:0] pt1, pt2, mac3;
    always @(posedge clk) begin
        pt1 <= qn_x * d_x;
        pt2 <= pt1;
        mac3 <= pt2 + ({{(MW-VW){r2[VW-1]}}, r2} <<< PF);
    end
    wire [VW-1:0] target_w;
    wire          sat_t;
    hrl_learn_narrow #(.IW(MW), .OW(VW), .SMAX(MW), .PIPE(2)) narrow_target (
        .clk(clk), .x(mac3), .shift(PF[7:0]), .width(VW[5:0]), .y(target_w), .sat(sat_t));
    reg  signed [VW-1:0] target6;
    reg                  sat6, sat7;
    always @(posedge clk) begin
        target6 <= target_w;
        sat6 <= sat_t;
        sat7 <= sat6;
    end

    // ---- C7-C9: td and its clip
    wire signed [VW-1:0] q6;
    hrl_delay #(.W(VW), .N(6)) q_to6 (.clk(clk), .d(q), .q(q6));
    reg  signed [VW:0] diff7;
    always @(posedge clk) diff7 <= {target6[VW-1], target6} - {q6[VW-1], q6};
    wire [VW-1:0] td_w;
    wire          sat_d;
    hrl_learn_narrow #(.IW(VW+1), .OW(VW), .SMAX(0)) narrow_td (
        .clk(clk), .x(diff7), .shift(8'sd0), .width(VW[5:0]), .y(td_w), .sat(sat_d));
    reg  signed [VW-1:0] td8;
    reg  [1:0]           sat8;
    always @(posedge clk) begin
        td8 <= td_w;
        sat8 <= {1'b0, sat7} + {1'b0, sat_d};
    end
    // -huber registered (huber is held for the whole pass), so that the clip's compare
    // does not wait for a negation; the clipped word negated in VW+1 bits, sign-extended.
    wire signed [VW-1:0] hub = huber;
    reg  signed [VW-1:0] neg_hub;
    always @(posedge clk) neg_hub <= -hub;
    wire signed [VW-1:0] clipped = !use_huber ? td8
                                 : (td8 > hub ? hub : (td8 < neg_hub ? neg_hub : td8));
    wire signed [VW:0]   neg_clip = -{clipped[VW-1], clipped};
    reg  signed [NW-1:0] negc9;
    reg  signed [VW-1:0] td9;
    always @(posedge clk) begin
        negc9 <= {{(NW-VW-1){neg_clip[VW]}}, neg_clip};
        td9 <= td8;
    end

    // ---- C10-C13: the delta; |td| and td beside it
    wire signed [PW-1:0] w9;
    hrl_delay #(.W(PW), .N(9)) w_to9 (.clk(clk), .d(weight), .q(w9));
    wire signed [NW-1:0] w_x = {{(NW-PW){w9[PW-1]}}, w9};
    reg  signed [NW-1:0] pd10, pd11;
    always @(posedge clk) begin
        pd10 <= negc9 * w_x;
        pd11 <= pd10;
    end
    wire signed [7:0] dshift = DSHIFT_I[7:0];
    wire          sat_o;
    hrl_learn_narrow #(.IW(NW), .OW(DW), .SMAX(NW), .PIPE(2)) narrow_delta (
        .clk(clk), .x(pd11), .shift(dshift), .width(DW[5:0]), .y(out_delta), .sat(sat_o));
    reg  [VW-1:0] abs10;
    always @(posedge clk)
        abs10 <= td9[VW-1] ? ((td9 == {1'b1, {(VW-1){1'b0}}}) ? {1'b0, {(VW-1){1'b1}}} : -td9)
                           : td9;
    wire [1:0] sat13;
    hrl_delay #(.W(VW), .N(3)) abs_to13 (.clk(clk), .d(abs10), .q(out_abs_td));
    hrl_delay #(.W(VW), .N(4)) td_to13 (.clk(clk), .d(td9), .q(out_td));
    hrl_delay #(.W(2), .N(5)) sat_to13 (.clk(clk), .d(sat8), .q(sat13));
    assign out_sat = sat13 + {1'b0, sat_o};
endmodule

`default_nettype wire
