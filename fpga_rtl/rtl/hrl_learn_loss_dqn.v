// hrl_learn_loss_dqn: the DQN loss unit, one sample per cycle, 4 register stages. Bit for
// bit hrl.fixed_point.losses.dqn_loss_unit:
//   q_next  = q_next_target[argmax_a q_next_online[a]] (double; the first of equal words),
//             or max_a q_next_target[a] (double = 0)
//   target  = narrow(discount * q_next + reward)     (one multiply-add, to the value format)
//   td      = narrow(target - q[action])              (exact, saturating)
//   delta   = narrow(-weight * clip(td, -huber, huber))  (to the delta format; no clip
//             when use_huber = 0)
//   out     = delta at the taken action, 0 elsewhere; |td| (saturating) for the priorities.
// Words: q values, reward, target, td and huber in the value format (VW bits, VF
// fractional); discount and weight in the probability format (PW, PF); deltas (DW, DF).
// `sat` counts the saturations of the sample's three narrowings (0..3).
`default_nettype none

module hrl_learn_loss_dqn #(
    // Actions (the network's outputs).
    parameter A = 2,
    // Value format: width and fractional bits.
    parameter VW = 24,
    parameter VF = 8,
    // Probability format (discounts, importance weights).
    parameter PW = 17,
    parameter PF = 15,
    // Delta format.
    parameter DW = 18,
    parameter DF = 12
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              double_q,    // 1: double DQN's argmax of the online net
    input  wire              use_huber,
    input  wire [VW-1:0]     huber,       // a value word > 0
    input  wire              in_valid,
    input  wire [A*VW-1:0]   in_q,        // Q(s, .) of the online net
    input  wire [A*VW-1:0]   in_qn_online,
    input  wire [A*VW-1:0]   in_qn_target,
    input  wire [AB-1:0]     in_action,
    input  wire [VW-1:0]     in_reward,
    input  wire [PW-1:0]     in_discount,
    input  wire [PW-1:0]     in_weight,
    output reg               out_valid,
    output reg  [A*DW-1:0]   out_delta,   // the output delta row
    output reg  [VW-1:0]     out_td,
    output reg  [VW-1:0]     out_abs_td,
    output reg  [1:0]        out_sat
);
    localparam AB = (A > 1) ? $clog2(A) : 1;
    localparam MW = VW + PW + 1;          // discount * q_next + reward, exact
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (with -min)

    initial begin
        if (A < 1 || A > 64) $fatal(1, "hrl_learn_loss_dqn: A=%0d must be in 1..64", A);
        if (VW < 2 || VW > 30 || PW < 2 || PW > 30 || DW < 2 || DW > 30)
            $fatal(1, "hrl_learn_loss_dqn: VW=%0d PW=%0d DW=%0d must be in 2..30", VW, PW, DW);
        if (PF < 0 || PF > 24)
            $fatal(1, "hrl_learn_loss_dqn: PF=%0d must be in 0..24 (the reward's alignment)", PF);
        if (VF + PF - DF < -4 || VF + PF - DF > NW)
            $fatal(1, "hrl_learn_loss_dqn: VF+PF-DF=%0d must be in -4..%0d", VF + PF - DF, NW);
    end

    // ------------------------------------------------------------ stage 1: pick the words
    reg  [AB-1:0] best;
    reg  signed [VW-1:0] best_v;
    integer a;
    always @(*) begin
        best = {AB{1'b0}};
        best_v = double_q ? $signed(in_qn_online[0 +: VW]) : $signed(in_qn_target[0 +: VW]);
        for (a = 1; a < A; a = a + 1) begin
            if (double_q ? ($signed(in_qn_online[a*VW +: VW]) > best_v)
                         : ($signed(in_qn_target[a*VW +: VW]) > best_v)) begin
                best = a[AB-1:0];
                best_v = double_q ? $signed(in_qn_online[a*VW +: VW])
                                  : $signed(in_qn_target[a*VW +: VW]);
            end
        end
    end

    reg              v1;
    reg  signed [VW-1:0] qn1, qt1, r1;
    reg  signed [PW-1:0] disc1, w1;
    reg  [AB-1:0]    act1;
    always @(posedge clk) begin
        v1 <= in_valid;
        qn1 <= in_qn_target[best*VW +: VW];
        qt1 <= in_q[in_action*VW +: VW];
        r1 <= in_reward;
        disc1 <= in_discount;
        w1 <= in_weight;
        act1 <= in_action;
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

    reg              v2, sat2;
    reg  signed [VW-1:0] target2, qt2;
    reg  signed [PW-1:0] w2;
    reg  [AB-1:0]    act2;
    always @(posedge clk) begin
        v2 <= v1;
        target2 <= target_w;
        sat2 <= sat_t;
        qt2 <= qt1;
        w2 <= w1;
        act2 <= act1;
        if (rst) v2 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 3: td and its clip
    wire signed [VW:0] diff = {target2[VW-1], target2} - {qt2[VW-1], qt2};
    wire [VW-1:0] td_w;
    wire          sat_d;
    hrl_learn_narrow #(.IW(VW+1), .OW(VW), .SMAX(0)) narrow_td (
        .clk(clk), .x(diff), .shift(8'sd0), .width(VW[5:0]), .y(td_w), .sat(sat_d));
    wire signed [VW-1:0] td_s = td_w;
    wire signed [VW-1:0] hub = huber;
    wire signed [VW-1:0] clipped = !use_huber ? td_s
                                 : (td_s > hub ? hub : (td_s < -hub ? -hub : td_s));

    reg              v3;
    reg  [1:0]       sat3;
    reg  signed [VW-1:0] td3, clip3;
    reg  signed [PW-1:0] w3;
    reg  [AB-1:0]    act3;
    always @(posedge clk) begin
        v3 <= v2;
        sat3 <= {1'b0, sat2} + {1'b0, sat_d};
        td3 <= td_s;
        clip3 <= clipped;
        w3 <= w2;
        act3 <= act2;
        if (rst) v3 <= 1'b0;
    end

    // ------------------------------------------------------------ stage 4: the output delta
    wire signed [NW-1:0] negc = -{{(NW-VW){clip3[VW-1]}}, clip3};
    wire signed [NW-1:0] w_x = {{(NW-PW){w3[PW-1]}}, w3};
    wire signed [NW-1:0] prod = negc * w_x;
    localparam integer DSHIFT_I = VF + PF - DF;
    wire signed [7:0] dshift = DSHIFT_I[7:0];
    wire [DW-1:0] delta_w;
    wire          sat_o;
    hrl_learn_narrow #(.IW(NW), .OW(DW), .SMAX(NW)) narrow_delta (
        .clk(clk), .x(prod), .shift(dshift), .width(DW[5:0]), .y(delta_w), .sat(sat_o));
    // |td|, the most negative word saturating to the largest.
    wire [VW-1:0] abs_w = td3[VW-1] ? ((td3 == {1'b1, {(VW-1){1'b0}}}) ? {1'b0, {(VW-1){1'b1}}}
                                                                      : -td3)
                                    : td3;

    genvar g;
    generate
        for (g = 0; g < A; g = g + 1) begin : g_out
            always @(posedge clk)
                out_delta[g*DW +: DW] <= (act3 == g) ? delta_w : {DW{1'b0}};
        end
    endgenerate
    always @(posedge clk) begin
        out_valid <= v3;
        out_td <= td3;
        out_abs_td <= abs_w;
        out_sat <= sat3 + {1'b0, sat_o};
        if (rst) out_valid <= 1'b0;
    end
endmodule

`default_nettype wire
