// hrl_learn_loss_dqn: the DQN loss unit, one sample per cycle, LAT = 20 register stages. Bit for
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
    output wire              out_valid,
    output reg  [A*DW-1:0]   out_delta,   // the output delta row
    output reg  [VW-1:0]     out_td,
    output reg  [VW-1:0]     out_abs_td,
    output reg  [1:0]        out_sat
);
    localparam AB = (A > 1) ? $clog2(A) : 1;
    localparam MW = VW + PW + 1;          // discount * q_next + reward, exact
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (with -min)
    localparam LAT = 20;                  // registers from the inputs to the outputs

    initial begin
        if (A < 1 || A > 64) $fatal(1, "hrl_learn_loss_dqn: A=%0d must be in 1..64", A);
        if (VW < 2 || VW > 30 || PW < 2 || PW > 30 || DW < 2 || DW > 30)
            $fatal(1, "hrl_learn_loss_dqn: VW=%0d PW=%0d DW=%0d must be in 2..30", VW, PW, DW);
        if (PF < 0 || PF > 24)
            $fatal(1, "hrl_learn_loss_dqn: PF=%0d must be in 0..24 (the reward's alignment)", PF);
        if (VF + PF - DF < -4 || VF + PF - DF > NW)
            $fatal(1, "hrl_learn_loss_dqn: VF+PF-DF=%0d must be in -4..%0d", VF + PF - DF, NW);
    end

    // The pipeline: E1-E6 the argmax, a tree of 2-word compares, one level a register
    // (six levels: any A up to 64, the latency the same for every A), the tie to the lower
    // index; E7-E8 discount * q_next; E9 + reward (aligned); E10-E12 the target's
    // narrowing; E13 target - q[action]; E14 its clamp (td); E15 the clip, negated;
    // E16-E17 -clip * weight; E18-E20 the delta's narrowing, E20 the outputs. One
    // product, add or narrowing segment per register-to-register segment
    // (experiments/results/fpga_learner/clock.md).
    localparam TL = 6;                       // tree levels: 2**TL >= A
    localparam N0 = 1 << TL;
    reg [LAT:1] vp;                          // vp[n]: a sample is at E<n>
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        if (rst) vp <= {LAT{1'b0}};
    end
    integer k;

    // ---- E1-E6: the argmax. Node n of level l holds (valid, compared word, target word).
    reg              nv [1:TL][0:N0/2-1];
    reg signed [VW-1:0] nc [1:TL][0:N0/2-1];
    reg signed [VW-1:0] nt [1:TL][0:N0/2-1];
    integer lv, n;
    always @(posedge clk) begin
        for (n = 0; n < N0 / 2; n = n + 1) begin : leaves
            // level 1 from the inputs: words 2n and 2n + 1
            reg lv_ok, rv_ok;
            reg signed [VW-1:0] lc, rc, lt, rt;
            lv_ok = (2 * n) < A;
            rv_ok = (2 * n + 1) < A;
            lc = lv_ok ? (double_q ? $signed(in_qn_online[(2*n)*VW +: VW])
                                   : $signed(in_qn_target[(2*n)*VW +: VW])) : {VW{1'b0}};
            rc = rv_ok ? (double_q ? $signed(in_qn_online[(2*n+1)*VW +: VW])
                                   : $signed(in_qn_target[(2*n+1)*VW +: VW])) : {VW{1'b0}};
            lt = lv_ok ? $signed(in_qn_target[(2*n)*VW +: VW]) : {VW{1'b0}};
            rt = rv_ok ? $signed(in_qn_target[(2*n+1)*VW +: VW]) : {VW{1'b0}};
            if (rv_ok && (!lv_ok || rc > lc)) begin
                nv[1][n] <= 1'b1;
                nc[1][n] <= rc;
                nt[1][n] <= rt;
            end else begin
                nv[1][n] <= lv_ok;
                nc[1][n] <= lc;
                nt[1][n] <= lt;
            end
        end
        for (lv = 2; lv <= TL; lv = lv + 1)
            for (n = 0; n < (N0 >> lv); n = n + 1)
                if (nv[lv-1][2*n+1] && (!nv[lv-1][2*n] || nc[lv-1][2*n+1] > nc[lv-1][2*n]))
                begin
                    nv[lv][n] <= 1'b1;
                    nc[lv][n] <= nc[lv-1][2*n+1];
                    nt[lv][n] <= nt[lv-1][2*n+1];
                end else begin
                    nv[lv][n] <= nv[lv-1][2*n];
                    nc[lv][n] <= nc[lv-1][2*n];
                    nt[lv][n] <= nt[lv-1][2*n];
                end
    end

    // The side band to E6: q[action] (picked at E1), the reward, discount, weight, action.
    reg signed [VW-1:0] sq_t [1:TL];
    reg signed [VW-1:0] s_r  [1:TL];
    reg signed [PW-1:0] s_d  [1:TL];
    reg signed [PW-1:0] s_w  [1:TL];
    reg [AB-1:0]        s_a  [1:TL];
    always @(posedge clk) begin
        sq_t[1] <= in_q[in_action*VW +: VW];
        s_r[1] <= in_reward;
        s_d[1] <= in_discount;
        s_w[1] <= in_weight;
        s_a[1] <= in_action;
        for (k = 2; k <= TL; k = k + 1) begin
            sq_t[k] <= sq_t[k-1];
            s_r[k] <= s_r[k-1];
            s_d[k] <= s_d[k-1];
            s_w[k] <= s_w[k-1];
            s_a[k] <= s_a[k-1];
        end
    end

    // ---- E7-E12: the TD target
    wire signed [VW-1:0] qn6 = nt[TL][0];
    wire signed [MW-1:0] qn_x = {{(MW-VW){qn6[VW-1]}}, qn6};
    wire signed [MW-1:0] d_x = {{(MW-PW){s_d[TL][PW-1]}}, s_d[TL]};
    reg  signed [MW-1:0] pt7, pt8, mac9;
    reg  signed [VW-1:0] r7, r8;
    always @(posedge clk) begin
        pt7 <= qn_x * d_x;
        pt8 <= pt7;
        r7 <= s_r[TL];
        r8 <= r7;
        mac9 <= pt8 + ({{(MW-VW){r8[VW-1]}}, r8} <<< PF);
    end
    wire [VW-1:0] target_w;
    wire          sat_t;
    hrl_learn_narrow #(.IW(MW), .OW(VW), .SMAX(MW), .PIPE(2)) narrow_target (
        .clk(clk), .x(mac9), .shift(PF[7:0]), .width(VW[5:0]), .y(target_w), .sat(sat_t));
    // q[action], the weight and the action from E6 on
    reg signed [VW-1:0] qt_d [7:12];
    reg signed [PW-1:0] w_d  [7:15];
    reg [AB-1:0]        a_d  [7:20];
    always @(posedge clk) begin
        qt_d[7] <= sq_t[TL];
        w_d[7] <= s_w[TL];
        a_d[7] <= s_a[TL];
        for (k = 8; k <= 12; k = k + 1) qt_d[k] <= qt_d[k-1];
        for (k = 8; k <= 15; k = k + 1) w_d[k] <= w_d[k-1];
        for (k = 8; k <= 20; k = k + 1) a_d[k] <= a_d[k-1];
    end
    reg signed [VW-1:0] target12;
    reg                 sat12;
    always @(posedge clk) begin
        target12 <= target_w;
        sat12 <= sat_t;
    end

    // ---- E13-E15: td and its clip
    reg  signed [VW:0] diff13;
    always @(posedge clk) diff13 <= {target12[VW-1], target12} - {qt_d[12][VW-1], qt_d[12]};
    wire [VW-1:0] td_w;
    wire          sat_d;
    hrl_learn_narrow #(.IW(VW+1), .OW(VW), .SMAX(0)) narrow_td (
        .clk(clk), .x(diff13), .shift(8'sd0), .width(VW[5:0]), .y(td_w), .sat(sat_d));
    reg  signed [VW-1:0] td14;
    reg  [1:0]           sat14;
    reg                  sat13;
    always @(posedge clk) begin
        sat13 <= sat12;
        td14 <= td_w;
        sat14 <= {1'b0, sat13} + {1'b0, sat_d};
    end
    // -huber registered (huber is held for the whole pass), so that the clip's compare
    // does not wait for a negation; the clipped word negated in VW+1 bits, sign-extended.
    wire signed [VW-1:0] hub = huber;
    reg  signed [VW-1:0] neg_hub;
    always @(posedge clk) neg_hub <= -hub;
    wire signed [VW-1:0] clipped = !use_huber ? td14
                                 : (td14 > hub ? hub : (td14 < neg_hub ? neg_hub : td14));
    wire signed [VW:0]   neg_clip = -{clipped[VW-1], clipped};
    reg  signed [NW-1:0] negc15;
    reg  signed [VW-1:0] td15;
    always @(posedge clk) begin
        negc15 <= {{(NW-VW-1){neg_clip[VW]}}, neg_clip};
        td15 <= td14;
    end

    // ---- E16-E20: the output delta; |td|
    wire signed [NW-1:0] w_x = {{(NW-PW){w_d[15][PW-1]}}, w_d[15]};
    reg  signed [NW-1:0] pd16, pd17;
    always @(posedge clk) begin
        pd16 <= negc15 * w_x;
        pd17 <= pd16;
    end
    localparam integer DSHIFT_I = VF + PF - DF;
    wire signed [7:0] dshift = DSHIFT_I[7:0];
    wire [DW-1:0] delta_w;
    wire          sat_o;
    hrl_learn_narrow #(.IW(NW), .OW(DW), .SMAX(NW), .PIPE(2)) narrow_delta (
        .clk(clk), .x(pd17), .shift(dshift), .width(DW[5:0]), .y(delta_w), .sat(sat_o));
    // |td|, the most negative word saturating to the largest (at E16), then to E19.
    reg  [VW-1:0] abs_d [16:19];
    reg  signed [VW-1:0] td_d [16:19];
    reg  [1:0]    sat_dd [15:19];
    always @(posedge clk) begin
        abs_d[16] <= td15[VW-1] ? ((td15 == {1'b1, {(VW-1){1'b0}}}) ? {1'b0, {(VW-1){1'b1}}}
                                                                  : -td15)
                                : td15;
        td_d[16] <= td15;
        sat_dd[15] <= sat14;
        for (k = 17; k <= 19; k = k + 1) begin
            abs_d[k] <= abs_d[k-1];
            td_d[k] <= td_d[k-1];
        end
        for (k = 16; k <= 19; k = k + 1) sat_dd[k] <= sat_dd[k-1];
    end

    genvar g;
    generate
        for (g = 0; g < A; g = g + 1) begin : g_out
            always @(posedge clk)
                out_delta[g*DW +: DW] <= (a_d[19] == g) ? delta_w : {DW{1'b0}};
        end
    endgenerate
    always @(posedge clk) begin
        out_td <= td_d[19];
        out_abs_td <= abs_d[19];
        out_sat <= sat_dd[19] + {1'b0, sat_o};
    end
    assign out_valid = vp[LAT];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_tree = ^{nc[TL][0], nv[TL][0], a_d[20]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
