// hrl_mul_pipe: an unsigned A x B multiplier (low PW bits) followed by N registers (N = 0:
// combinational). With the operands registered by the caller, the N output registers are
// what synthesis packs into, or retimes through, the DSP48E2 cascade of a wide product
// (MREG, PREG and the cascade stages); yosys packs what it can (xilinx_dsp), Vivado
// retimes the rest.
`default_nettype none

module hrl_mul_pipe #(
    parameter AW = 32,
    parameter BW = 32,
    // Product bits kept (the low PW bits; AW + BW for the whole product).
    parameter PW = 64,
    parameter N = 1
) (
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire          clk,   // unused for N = 0
    /* verilator lint_on UNUSEDSIGNAL */
    input  wire [AW-1:0] a,
    input  wire [BW-1:0] b,
    output wire [PW-1:0] p
);
    wire [PW-1:0] prod = a * b;   // operands widened to PW by the context: unsigned
    hrl_delay #(.W(PW), .N(N)) pipe_inst (.clk(clk), .d(prod), .q(p));
endmodule

`default_nettype wire
