// hrl_axil_ctrl: the AXI4-Lite control slave of an XRT/Vitis RTL kernel, with the ap_ctrl_hs
// protocol that XRT drives. The kernels (hrl_rmm_kernel, hrl_learn_kernel) share it: it holds
// the control word, the interrupt registers and the kernel's 32-bit argument registers; the
// kernel supplies its read-only words and says when a run ends.
//
// Register map (byte offsets; words 0..31 decoded from addr[6:2], higher bits ignored):
//   0x00 control  bit0 ap_start (host writes 1; cleared at `finish`)
//                 bit1 ap_done (set at `finish`, clear on read)  bit2 ap_idle (the kernel's
//                 `idle`)  bit3 ap_ready (as ap_done)  bit7 auto_restart: not supported, 0
//   0x04 GIE      bit0 global interrupt enable
//   0x08 IER      bit0 done interrupt enable, bit1 ready interrupt enable
//   0x0c ISR      bit0 done, bit1 ready: set at `finish` where enabled, toggled on write
//   word i, 4..31 an argument register where WRITABLE[i] (written through the byte strobes,
//                 read back, 0 after reset; `args[32 i +: 32]`), a read-only word where
//                 READ_ONLY[i] (`ro[32 i +: 32]`; writes ignored), else reads 0 and ignores
//                 writes.
// interrupt = GIE and any ISR bit. The kernel's own register map (which word is which
// argument) is in its header.
//
// Bus: a write takes its address and data in either order and gets one response (OKAY); one
// read is outstanding at a time, its data the cycle after the address (OKAY). Within a
// cycle, `finish` wins over the host: a write of ap_start, a clear-on-read of ap_done and a
// toggle of ISR in the cycle a run ends all leave the run's end standing, so XRT never
// misses a done. Cost: 32 flip-flops per argument register and a 32-way read multiplexer.
`default_nettype none

module hrl_axil_ctrl #(
    // Address bits of s_axi_control (7..16; the map uses bits 6..2).
    parameter AA = 7,
    // Bit i: word i (4..31) is an argument register.
    parameter [31:0] WRITABLE = 32'h0,
    // Bit i: word i (4..31) is a read-only word of `ro`.
    parameter [31:0] READ_ONLY = 32'h0
) (
    input  wire          clk,
    input  wire          rst,
    input  wire [AA-1:0] s_axi_control_awaddr,
    input  wire          s_axi_control_awvalid,
    output wire          s_axi_control_awready,
    input  wire [31:0]   s_axi_control_wdata,
    input  wire [3:0]    s_axi_control_wstrb,
    input  wire          s_axi_control_wvalid,
    output wire          s_axi_control_wready,
    output wire [1:0]    s_axi_control_bresp,
    output reg           s_axi_control_bvalid,
    input  wire          s_axi_control_bready,
    input  wire [AA-1:0] s_axi_control_araddr,
    input  wire          s_axi_control_arvalid,
    output wire          s_axi_control_arready,
    output reg  [31:0]   s_axi_control_rdata,
    output wire [1:0]    s_axi_control_rresp,
    output reg           s_axi_control_rvalid,
    input  wire          s_axi_control_rready,
    /* verilator lint_off SYMRSVDWORD */
    output wire          interrupt,   // the name Vitis expects
    /* verilator lint_on SYMRSVDWORD */
    // ap_start as the host set it, held until the run's `finish`
    output reg           ap_start,
    // the run ends this cycle: ap_start cleared, ap_done and ap_ready set, ISR raised
    input  wire          finish,
    // ap_idle as the kernel keeps it
    input  wire          idle,
    // the argument registers: word i at [32 i +: 32] (0 where not WRITABLE)
    output wire [1023:0] args,
    // the read-only words: word i at [32 i +: 32] (read where READ_ONLY)
    /* verilator lint_off UNUSEDSIGNAL */
    input  wire [1023:0] ro
    /* verilator lint_on UNUSEDSIGNAL */
);
    initial begin
        if (AA < 7 || AA > 16)
            $fatal(1, "%m: AA=%0d must be in [7, 16]", AA);
        if ((WRITABLE & READ_ONLY) != 0 || ((WRITABLE | READ_ONLY) & 32'hf) != 0)
            $fatal(1, "%m: WRITABLE=0x%08x and READ_ONLY=0x%08x must be disjoint words 4..31",
                   WRITABLE, READ_ONLY);
    end

    reg ap_done, ap_ready;
    reg gie;
    reg [1:0] ier, isr;

    // Writes: address and data may come in either order; one response each.
    reg aw_hold, w_hold;
    /* verilator lint_off UNUSEDSIGNAL */
    reg [AA-1:0] aw_addr;   // registers are words: the byte-offset bits are ignored
    wire [AA-1:0] ar_addr = s_axi_control_araddr;
    /* verilator lint_on UNUSEDSIGNAL */
    reg [31:0] w_data;
    reg [3:0] w_strb;
    assign s_axi_control_awready = !aw_hold && !s_axi_control_bvalid;
    assign s_axi_control_wready = !w_hold && !s_axi_control_bvalid;
    assign s_axi_control_bresp = 2'b00;
    wire wr_do = aw_hold && w_hold && !s_axi_control_bvalid;
    wire [4:0] wr_word = aw_addr[6:2];

    // Reads: one outstanding, data the cycle after the address.
    assign s_axi_control_arready = !s_axi_control_rvalid;
    assign s_axi_control_rresp = 2'b00;
    wire ar_fire = s_axi_control_arvalid && s_axi_control_arready;
    wire [4:0] rd_word = ar_addr[6:2];

    // The argument registers, byte by byte through the strobes.
    genvar gi, gb;
    generate
        for (gi = 0; gi < 32; gi = gi + 1) begin : g_arg
            if (WRITABLE[gi]) begin : g_reg
                reg [31:0] value;
                for (gb = 0; gb < 4; gb = gb + 1) begin : g_byte
                    always @(posedge clk) begin
                        if (rst)
                            value[8*gb +: 8] <= 8'd0;
                        else if (wr_do && wr_word == gi && w_strb[gb])
                            value[8*gb +: 8] <= w_data[8*gb +: 8];
                    end
                end
                assign args[32*gi +: 32] = value;
            end else begin : g_none
                assign args[32*gi +: 32] = 32'd0;
            end
        end
    endgenerate

    // What a read of each word returns (words 0..3 are the control block's).
    wire [1023:0] readable;
    generate
        for (gi = 0; gi < 32; gi = gi + 1) begin : g_read
            if (gi >= 4 && READ_ONLY[gi]) begin : g_ro
                assign readable[32*gi +: 32] = ro[32*gi +: 32];
            end else if (gi >= 4) begin : g_arg
                assign readable[32*gi +: 32] = args[32*gi +: 32];
            end else begin : g_ctrl
                assign readable[32*gi +: 32] = 32'd0;   // replaced below
            end
        end
    endgenerate

    always @(posedge clk) begin
        if (s_axi_control_awvalid && s_axi_control_awready) begin
            aw_hold <= 1'b1;
            aw_addr <= s_axi_control_awaddr;
        end
        if (s_axi_control_wvalid && s_axi_control_wready) begin
            w_hold <= 1'b1;
            w_data <= s_axi_control_wdata;
            w_strb <= s_axi_control_wstrb;
        end
        if (s_axi_control_bvalid && s_axi_control_bready) s_axi_control_bvalid <= 1'b0;

        // 0x00 returns the status and clears ap_done and ap_ready (clear on read).
        if (s_axi_control_rvalid && s_axi_control_rready) s_axi_control_rvalid <= 1'b0;
        if (ar_fire) begin
            s_axi_control_rvalid <= 1'b1;
            case (rd_word)
                5'h00: s_axi_control_rdata <= {28'd0, ap_ready, idle, ap_done, ap_start};
                5'h01: s_axi_control_rdata <= {31'd0, gie};
                5'h02: s_axi_control_rdata <= {30'd0, ier};
                5'h03: s_axi_control_rdata <= {30'd0, isr};
                default: s_axi_control_rdata <= readable[32*rd_word +: 32];
            endcase
            if (rd_word == 5'h00) begin
                ap_done <= 1'b0;
                ap_ready <= 1'b0;
            end
        end

        if (wr_do) begin
            aw_hold <= 1'b0;
            w_hold <= 1'b0;
            s_axi_control_bvalid <= 1'b1;
            case (wr_word)
                5'h00: if (w_strb[0] && w_data[0]) ap_start <= 1'b1;
                5'h01: if (w_strb[0]) gie <= w_data[0];
                5'h02: if (w_strb[0]) ier <= w_data[1:0];
                5'h03: if (w_strb[0]) isr <= isr ^ w_data[1:0];
                default: ;  // the argument registers (above); the others ignore writes
            endcase
        end

        // End of a run: done and ready together (ap_ctrl_hs, no pipelining), start cleared.
        if (finish) begin
            ap_start <= 1'b0;
            ap_done <= 1'b1;
            ap_ready <= 1'b1;
            if (ier[0]) isr[0] <= 1'b1;
            if (ier[1]) isr[1] <= 1'b1;
        end

        if (rst) begin
            aw_hold <= 1'b0;
            w_hold <= 1'b0;
            s_axi_control_bvalid <= 1'b0;
            s_axi_control_rvalid <= 1'b0;
            s_axi_control_rdata <= 32'd0;
            ap_start <= 1'b0;
            ap_done <= 1'b0;
            ap_ready <= 1'b0;
            gie <= 1'b0;
            ier <= 2'b00;
            isr <= 2'b00;
        end
    end

    assign interrupt = gie && (|isr);
endmodule

`default_nettype wire
