// hrl_delay: N pipeline registers on a W-bit bus (N = 0: a wire). No enable, no reset.
`default_nettype none

module hrl_delay #(
    parameter W = 1,
    parameter N = 1
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire         clk,   // unused for N = 0
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [W-1:0] d,
    output wire [W-1:0] q
);
    generate
        if (N == 0) begin : g_wire
            assign q = d;
        end else begin : g_regs
            reg [W-1:0] sr [0:N-1];
            integer i;
            always @(posedge clk) begin
                sr[0] <= d;
                for (i = 1; i < N; i = i + 1) sr[i] <= sr[i-1];
            end
            assign q = sr[N-1];
        end
    endgenerate
endmodule

`default_nettype wire
