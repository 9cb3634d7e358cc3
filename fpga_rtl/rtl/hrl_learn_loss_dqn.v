// hrl_learn_loss_dqn: the DQN loss unit, one sample per cycle, LAT = 20 register stages. Bit for
// bit hrl.fixed_point.losses.dqn_loss_unit:
//   q_next  = q_next_target[argmax_a q_next_online[a]] (double; the first of equal words),
//             or max_a q_next_target[a] (double = 0)
//   target  = narrow(discount * q_next + reward)     (one multiply-add, to the value format)
//   td      = narrow(target - q[action])              (exact, saturating)
//   delta   = narrow(-weight * clip(td, -huber, huber))  (to the delta format; no clip
//             when use_huber = 0)
//   out     = delta at the taken action, 0 elsewhere; |td| (saturating) for the priorities.
// The target, td and delta lines are hrl_learn_td's, which DDPG's loss unit shares.
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
    localparam NW = VW + PW + 2;          // -clipped * weight, exact (hrl_learn_td's)
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
    // index; E7-E19 the TD pipeline (hrl_learn_td's C1-C13: the target, td, the clip, the
    // delta); E20 the outputs. One product, add, compare or narrowing segment per
    // register-to-register segment (experiments/results/fpga_learner/clock.md).
    localparam TL = 6;                       // tree levels: 2**TL >= A
    localparam N0 = 1 << TL;
    reg [LAT:1] vp;                          // vp[n]: a sample is at E<n>
    always @(posedge clk) begin
        vp <= {vp[LAT-1:1], in_valid};
        if (rst) vp <= {LAT{1'b0}};
    end

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
    wire [VW-1:0] q6, r6;
    wire [PW-1:0] d6, w6;
    wire [AB-1:0] a6;
    hrl_delay #(.W(VW), .N(TL)) q_to6 (.clk(clk), .d(in_q[in_action*VW +: VW]), .q(q6));
    hrl_delay #(.W(VW), .N(TL)) r_to6 (.clk(clk), .d(in_reward), .q(r6));
    hrl_delay #(.W(PW), .N(TL)) d_to6 (.clk(clk), .d(in_discount), .q(d6));
    hrl_delay #(.W(PW), .N(TL)) w_to6 (.clk(clk), .d(in_weight), .q(w6));
    hrl_delay #(.W(AB), .N(TL)) a_to6 (.clk(clk), .d(in_action), .q(a6));

    // ---- E7-E19: the TD pipeline (hrl_learn_td), its operands the E6 registers
    wire [DW-1:0] delta19;
    wire [VW-1:0] td19, abs19;
    wire [1:0]    sat19;
    hrl_learn_td #(.VW(VW), .VF(VF), .PW(PW), .PF(PF), .DW(DW), .DF(DF)) td_inst (
        .clk(clk), .use_huber(use_huber), .huber(huber), .q(q6), .q_next(nt[TL][0]),
        .reward(r6), .discount(d6), .weight(w6), .out_delta(delta19), .out_td(td19),
        .out_abs_td(abs19), .out_sat(sat19));
    wire [AB-1:0] a19;
    hrl_delay #(.W(AB), .N(13)) a_to19 (.clk(clk), .d(a6), .q(a19));

    // ---- E20: the outputs, the delta at the taken action
    genvar g;
    generate
        for (g = 0; g < A; g = g + 1) begin : g_out
            always @(posedge clk)
                out_delta[g*DW +: DW] <= (a19 == g) ? delta19 : {DW{1'b0}};
        end
    endgenerate
    always @(posedge clk) begin
        out_td <= td19;
        out_abs_td <= abs19;
        out_sat <= sat19;
    end
    assign out_valid = vp[LAT];
    /* verilator lint_off UNUSEDSIGNAL */
    wire unused_tree = ^{nc[TL][0], nv[TL][0]};
    /* verilator lint_on UNUSEDSIGNAL */
endmodule

`default_nettype wire
