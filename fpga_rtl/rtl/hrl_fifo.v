// hrl_fifo: synchronous FIFO of 2**AW entries with a registered occupancy count.
// Output data is read combinationally from the storage (first-word fall-through).
`default_nettype none

module hrl_fifo #(
    // log2 of the number of entries.
    parameter AW = 4,
    // Bits per entry.
    parameter W = 32
) (
    input  wire         clk,
    input  wire         rst,
    input  wire         s_valid,
    output wire         s_ready,
    input  wire [W-1:0] s_data,
    output wire         m_valid,
    input  wire         m_ready,
    output wire [W-1:0] m_data,
    output reg  [AW:0]  count
);

    initial begin
        if (AW < 1) $fatal(1, "%m: AW=%0d must be >= 1", AW);
    end

    reg [W-1:0] mem [0:(1<<AW)-1];
    reg [AW-1:0] wr_ptr_reg, rd_ptr_reg;

    wire push = s_valid && s_ready;
    wire pop = m_valid && m_ready;

    assign s_ready = count != (1 << AW);
    assign m_valid = count != 0;
    assign m_data = mem[rd_ptr_reg];

    always @(posedge clk) begin
        if (push) mem[wr_ptr_reg] <= s_data;
        if (rst) begin
            wr_ptr_reg <= 0;
            rd_ptr_reg <= 0;
            count <= 0;
        end else begin
            if (push) wr_ptr_reg <= wr_ptr_reg + 1'b1;
            if (pop) rd_ptr_reg <= rd_ptr_reg + 1'b1;
            if (push && !pop) count <= count + 1'b1;
            else if (pop && !push) count <= count - 1'b1;
        end
    end

endmodule

`default_nettype wire
