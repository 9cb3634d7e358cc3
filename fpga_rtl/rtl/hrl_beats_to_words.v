// hrl_beats_to_words: width converter from AXI data beats (DW/32 words each) to groups of
// up to G 32-bit words, one group per cycle.
//
// A `start` pulse loads the job: `count` words arrive as ceil(count / (DW/32)) beats on
// s_* (word 0 in the low bits; the words of the last beat past `count` are ignored). The
// m_* stream carries groups of G words (word 0 in the low bits) and, at the end of the job,
// one group of the remaining count % G words; `m_count` says how many words of the group
// are valid. So two converters fed the same `count` produce the same group sizes in the
// same order, which is how the kernel pairs indices with words. A beat is accepted whenever
// the buffer (DW/32 + G words) has room for it, so a full-rate consumer never waits once
// the buffer holds G words.
`default_nettype none

module hrl_beats_to_words #(
    // Data bits per beat (32..512, a power of two).
    parameter DW = 512,
    // Words per output group (1..32).
    parameter G = 4,
    // Bits of m_count.
    parameter CW = $clog2(G + 1)
) (
    input  wire              clk,
    input  wire              rst,

    input  wire              start,
    input  wire [31:0]       count,
    output wire              busy,

    input  wire [DW-1:0]     s_data,
    input  wire              s_valid,
    output wire              s_ready,

    output wire [32*G-1:0]   m_words,
    output wire [CW-1:0]     m_count,
    output wire              m_valid,
    input  wire              m_ready
);

    localparam NW = DW / 32;       // words per beat
    localparam C = NW + G;         // buffer words: a beat fits whenever <= G are held
    localparam NB = $clog2(C + 1);

    initial begin
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: DW=%0d must be a power of two in [32, 512]", DW);
        if (G < 1 || G > 32) $fatal(1, "%m: G=%0d must be in [1, 32]", G);
    end

    reg [32*C-1:0] buf_r;
    reg [NB-1:0] held;           // valid words in buf_r, from word 0
    reg [31:0] in_left;          // words of the job not yet received

    wire [NB-1:0] beat_words = (in_left < NW) ? in_left[NB-1:0] : NW[NB-1:0];
    assign s_ready = in_left != 32'd0 && held <= G[NB-1:0];
    wire s_fire = s_valid && s_ready;

    wire [NB-1:0] group = (held < G[NB-1:0]) ? held : G[NB-1:0];
    // A partial group only at the end of the job, so group sizes depend on count alone.
    assign m_valid = held != {NB{1'b0}} && (held >= G[NB-1:0] || in_left == 32'd0);
    assign m_words = buf_r[32*G-1:0];
    assign m_count = group[CW-1:0];
    wire m_fire = m_valid && m_ready;
    assign busy = in_left != 32'd0 || held != {NB{1'b0}};

    // Words leave from the bottom; a beat lands right above the words that stay.
    wire [NB-1:0] take = m_fire ? group : {NB{1'b0}};
    wire [NB-1:0] keep = held - take;
    wire [32*C-1:0] shifted = buf_r >> (32 * take);
    wire [32*C-1:0] beat_at = {{(32*C-DW){1'b0}}, s_data} << (32 * keep);
    wire [32*C-1:0] beat_mask = {{(32*C-DW){1'b0}}, {DW{1'b1}}} << (32 * keep);

    always @(posedge clk) begin
        if (m_fire || s_fire) begin
            buf_r <= s_fire ? ((shifted & ~beat_mask) | beat_at) : shifted;
            held <= keep + (s_fire ? beat_words : {NB{1'b0}});
        end
        if (s_fire) in_left <= in_left - {{(32-NB){1'b0}}, beat_words};
        if (start) begin
            in_left <= count;
            held <= {NB{1'b0}};
        end
        if (rst) begin
            buf_r <= {32*C{1'b0}};
            held <= {NB{1'b0}};
            in_left <= 32'd0;
        end
    end

endmodule

`default_nettype wire
