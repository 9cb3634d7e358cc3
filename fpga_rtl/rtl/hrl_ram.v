// hrl_ram: one bank of one sum-tree level. Synchronous reads: rdata shows, the cycle after,
// the word stored before the clock edge of the read (a write in the same cycle is not seen:
// hrl_rmm forwards that value itself).
//
// NW = 1: one memory, which yosys/Vivado map to simple-dual-port block RAM (or LUT RAM when
// shallow). NW > 1: a live-value table (LaForest & Steffan, FPGA 2010): NW x NR memories of
// one write and one read port each, so every one maps to block RAM, plus a table of
// log2(NW) bits per word, in flip-flops, that records which write port wrote each word last.
`default_nettype none

module hrl_ram #(
    // Words stored.
    parameter DEPTH = 16,
    // Address width; must cover DEPTH (at least 1).
    parameter AW = 4,
    // Bits per word.
    parameter W = 32,
    // Write ports. Two ports writing one address in one cycle: the higher port wins.
    parameter NW = 1,
    // Read ports, each with its own registered output.
    parameter NR = 1
) (
    input  wire          clk,
    input  wire [NW-1:0] we,
    input  wire [NW*AW-1:0] waddr,
    input  wire [NW*W-1:0]  wdata,
    input  wire [NR*AW-1:0] raddr,
    output reg  [NR*W-1:0]  rdata
);

    initial begin
        if (DEPTH < 1 || (1 << AW) < DEPTH)
            $fatal(1, "%m: AW=%0d does not cover DEPTH=%0d", AW, DEPTH);
        if (NW < 1 || NR < 1)
            $fatal(1, "%m: NW=%0d and NR=%0d must be >= 1", NW, NR);
    end

    // AW is shared by every level of hrl_rmm; addresses above DEPTH never occur (the row of
    // a node at level l is < K**(l-1) by construction), so the index is narrowed here.
    /* verilator lint_off WIDTHTRUNC */
    generate
        if (NW == 1) begin : g_single
            reg [W-1:0] mem [0:DEPTH-1];
            integer rp;
            always @(posedge clk) begin
                if (we[0]) mem[waddr[AW-1:0]] <= wdata[W-1:0];
            end
            always @(posedge clk) begin
                for (rp = 0; rp < NR; rp = rp + 1)
                    rdata[rp*W +: W] <= mem[raddr[rp*AW +: AW]];
            end
        end else begin : g_lvt
            localparam LW = $clog2(NW);
            reg [LW-1:0] lvt [0:DEPTH-1];
            reg [NR*LW-1:0] lvt_q;         // live write port of each read, registered
            wire [NW*NR*W-1:0] bank_q;     // registered read data of every (write, read) copy
            integer wp, rp;
            always @(posedge clk) begin
                for (wp = 0; wp < NW; wp = wp + 1)
                    if (we[wp]) lvt[waddr[wp*AW +: AW]] <= wp[LW-1:0];
            end
            always @(posedge clk) begin
                for (rp = 0; rp < NR; rp = rp + 1)
                    lvt_q[rp*LW +: LW] <= lvt[raddr[rp*AW +: AW]];
            end
            genvar gw, gr;
            for (gw = 0; gw < NW; gw = gw + 1) begin : g_wport
                for (gr = 0; gr < NR; gr = gr + 1) begin : g_rport
                    reg [W-1:0] mem [0:DEPTH-1];
                    reg [W-1:0] q;
                    always @(posedge clk) begin
                        if (we[gw]) mem[waddr[gw*AW +: AW]] <= wdata[gw*W +: W];
                    end
                    always @(posedge clk) begin
                        q <= mem[raddr[gr*AW +: AW]];
                    end
                    assign bank_q[(gw*NR+gr)*W +: W] = q;
                end
            end
            always @* begin
                for (rp = 0; rp < NR; rp = rp + 1)
                    rdata[rp*W +: W] = bank_q[({{(32-LW){1'b0}}, lvt_q[rp*LW +: LW]}*NR+rp)*W +: W];
            end
        end
    endgenerate
    /* verilator lint_on WIDTHTRUNC */

endmodule

`default_nettype wire
