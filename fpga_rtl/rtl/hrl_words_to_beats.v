// hrl_words_to_beats: width converter from groups of up to G 32-bit words per cycle to AXI
// data beats of DW/32 words with byte strobes.
//
// A `start` pulse loads the job: `count` words arrive on s_* in groups (`s_count` valid
// words, word 0 in the low bits; 0 < s_count <= G). The m_* stream carries full beats and,
// at the end of the job, one beat of the remaining words with the strobes of the rest low:
// ceil(count / (DW/32)) beats in all, the count the AXI write engine is given. A group is
// accepted whenever the buffer (DW/32 + G words) has room for it.
`default_nettype none

module hrl_words_to_beats #(
    // Data bits per beat (32..512, a power of two).
    parameter DW = 512,
    // Words per input group (1..128).
    parameter G = 2,
    // Bits of s_count.
    parameter CW = $clog2(G + 1)
) (
    input  wire              clk,
    input  wire              rst,

    input  wire              start,
    input  wire [31:0]       count,

    input  wire [32*G-1:0]   s_words,
    input  wire [CW-1:0]     s_count,
    input  wire              s_valid,
    output wire              s_ready,

    output wire [DW-1:0]     m_data,
    output reg  [DW/8-1:0]   m_strb,
    output wire              m_valid,
    input  wire              m_ready
);

    localparam NW = DW / 32;       // words per beat
    localparam C = NW + G;         // buffer words: a group fits whenever <= NW are held
    localparam NB = $clog2(C + 1);

    initial begin
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: DW=%0d must be a power of two in [32, 512]", DW);
        if (G < 1 || G > 128) $fatal(1, "%m: G=%0d must be in [1, 128]", G);
    end

    reg [32*C-1:0] buf_r;
    reg [NB-1:0] held;           // valid words in buf_r, from word 0
    reg [NB-1:0] beat_r;         // min(held, NW): the words the next beat carries
    reg          beat_full;      // beat_r == NW
    reg [NB-1:0] rest_r;         // held - beat_r: the words kept when that beat leaves
    reg [31:0] in_left;          // words of the job not yet received
    reg        in_more;          // in_left != 0 (a register: s_ready's, m_valid's term)

    assign s_ready = in_more && held <= NW[NB-1:0];
    wire s_fire = s_valid && s_ready;

    // A partial beat only at the end of the job.
    assign m_valid = held != {NB{1'b0}} && (held >= NW[NB-1:0] || !in_more);
    assign m_data = buf_r[DW-1:0];
    integer j;
    always @* begin
        for (j = 0; j < NW; j = j + 1)
            m_strb[4*j +: 4] = (j < beat_r) ? 4'hF : 4'h0;
    end
    wire m_fire = m_valid && m_ready;

    // The buffer's next words both ways, a beat leaving (shifted down by beat_r words, a
    // group placed after rest_r) or not (a group placed after held), with every shift by a
    // register: m_ready, which the AXI side drives, only picks between them, and reaches
    // the buffer through two multiplexers instead of a subtract and two shifters. The pick
    // is written as and-or, not `?:`: synthesis would share the two shifters behind a mux
    // of their amounts (yosys opt_share), which puts m_ready in front of a shifter again.
    // Each shift is as narrow as the cases that reach it allow:
    // - a beat that leaves is full (the buffer shifts down by NW words, a constant) or the
    //   job's last (every word held leaves and no group comes after it: the buffer's words
    //   are then don't-care, and zeros);
    // - a group comes only while held <= NW (s_ready), so with a full beat leaving held is
    //   NW, the beat takes every word held (rest_r is 0) and the group lands at word 0.
    wire [32*C-1:0] group = {{(32*C-32*G){1'b0}}, s_words};
    wire [32*C-1:0] ones = {{(32*C-32*G){1'b0}}, {32*G{1'b1}}};
    wire [32*C-1:0] shifted = {(32*C){beat_full}} & (buf_r >> (32 * NW));
    wire [32*C-1:0] next_take = s_fire ? ((shifted & ~ones) | group) : shifted;
    wire [32*C-1:0] next_keep = (buf_r & ~(ones << (32 * held))) | (group << (32 * held));
    /* verilator lint_off UNUSEDSIGNAL */
    wire [NB+CW-1:0] group_ext = {{NB{1'b0}}, s_count};   // NB >= CW
    /* verilator lint_on UNUSEDSIGNAL */
    wire [NB-1:0] group_words = group_ext[NB-1:0];
    wire [NB-1:0] keep = m_fire ? rest_r : held;
    wire [NB-1:0] held_n = keep + (s_fire ? group_words : {NB{1'b0}});
    wire          held_n_part = held_n < NW[NB-1:0];
    wire [31:0]   in_left_n = in_left - {{(32-NB){1'b0}}, group_words};

    always @(posedge clk) begin
        if (m_fire || s_fire) begin
            buf_r <= ({(32*C){m_fire}} & next_take) | ({(32*C){!m_fire}} & next_keep);
            held <= held_n;
            beat_r <= held_n_part ? held_n : NW[NB-1:0];
            beat_full <= !held_n_part;
            rest_r <= held_n_part ? {NB{1'b0}} : held_n - NW[NB-1:0];
        end
        if (s_fire) begin
            in_left <= in_left_n;
            in_more <= in_left_n != 32'd0;
        end
        if (start) begin
            in_left <= count;
            in_more <= count != 32'd0;
            held <= {NB{1'b0}};
            beat_r <= {NB{1'b0}};
            beat_full <= 1'b0;
            rest_r <= {NB{1'b0}};
        end
        if (rst) begin
            buf_r <= {32*C{1'b0}};
            held <= {NB{1'b0}};
            beat_r <= {NB{1'b0}};
            beat_full <= 1'b0;
            rest_r <= {NB{1'b0}};
            in_left <= 32'd0;
            in_more <= 1'b0;
        end
    end

endmodule

`default_nettype wire
