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
    localparam RB = $clog2(G + 1);   // bits of a count up to G (<= NB)

    initial begin
        if (DW < 32 || DW > 512 || (DW & (DW - 1)) != 0)
            $fatal(1, "%m: DW=%0d must be a power of two in [32, 512]", DW);
        if (G < 1 || G > 32) $fatal(1, "%m: G=%0d must be in [1, 32]", G);
    end

    reg [32*C-1:0] buf_r;
    reg [NB-1:0] held;           // valid words in buf_r, from word 0
    reg [CW-1:0] group_r;        // min(held, G): the words the next group carries
    reg          group_full;     // group_r == G
    reg [NB-1:0] rest_r;         // held - group_r: the words kept when that group leaves
    reg          out_r;          // m_valid: held != 0 and (held >= G or no words to come)
    reg          room_r;         // held <= G: a beat fits
    reg [31:0]   in_left;        // words of the job not yet received
    reg          in_more;        // in_left != 0
    reg [NB-1:0] beat_r;         // min(in_left, NW): the words the next beat brings

    assign s_ready = in_more && room_r;
    wire s_fire = s_valid && s_ready;

    // A partial group only at the end of the job, so group sizes depend on count alone.
    assign m_valid = out_r;
    assign m_words = buf_r[32*G-1:0];
    assign m_count = group_r;
    wire m_fire = m_valid && m_ready;
    assign busy = in_more || held != {NB{1'b0}};

    // The buffer's next words both ways, a group leaving (shifted down by group_r words, a
    // beat placed after rest_r) or not (a beat placed after held), with every shift by a
    // register: m_ready, which the consumer drives, only picks between them (and-or, so
    // that synthesis does not share the shifters behind a mux of their amounts). Each shift
    // is as narrow as the cases that reach it allow:
    // - a group that leaves is full (the buffer shifts down by G words, a constant) or the
    //   job's last (every word held leaves and no beat comes after it: the buffer's words
    //   are then don't-care, and zeros);
    // - a beat comes only while held <= G (room_r), when a leaving group takes every word
    //   held (rest_r is 0) and a kept buffer takes the beat after at most G words (held's
    //   low RB bits).
    wire [32*C-1:0] beat = {{(32*C-DW){1'b0}}, s_data};
    wire [32*C-1:0] ones = {{(32*C-DW){1'b0}}, {DW{1'b1}}};
    wire [32*C-1:0] shifted = {(32*C){group_full}} & (buf_r >> (32 * G));
    wire [32*C-1:0] next_take = s_fire ? ((shifted & ~ones) | beat) : shifted;
    wire [RB-1:0]   held_sh = held[RB-1:0];
    wire [32*C-1:0] next_keep = (buf_r & ~(ones << (32 * held_sh))) | (beat << (32 * held_sh));
    wire [NB-1:0] keep = m_fire ? rest_r : held;
    wire [NB-1:0] held_n = keep + (s_fire ? beat_r : {NB{1'b0}});
    wire [31:0]   in_left_n = in_left - {{(32-NB){1'b0}}, beat_r};
    wire          more_n = s_fire ? in_left_n != 32'd0 : in_more;
    wire          full_n = held_n >= G[NB-1:0];

    always @(posedge clk) begin
        if (m_fire || s_fire) begin
            buf_r <= ({(32*C){m_fire}} & next_take) | ({(32*C){!m_fire}} & next_keep);
            held <= held_n;
            group_r <= full_n ? G[CW-1:0] : held_n[CW-1:0];
            group_full <= full_n;
            rest_r <= full_n ? held_n - G[NB-1:0] : {NB{1'b0}};
            out_r <= held_n != {NB{1'b0}} && (full_n || !more_n);
            room_r <= held_n <= G[NB-1:0];
        end
        if (s_fire) begin
            in_left <= in_left_n;
            in_more <= in_left_n != 32'd0;
            beat_r <= (in_left_n < NW) ? in_left_n[NB-1:0] : NW[NB-1:0];
        end
        if (start) begin
            in_left <= count;
            in_more <= count != 32'd0;
            beat_r <= (count < NW) ? count[NB-1:0] : NW[NB-1:0];
            held <= {NB{1'b0}};
            group_r <= {CW{1'b0}};
            group_full <= 1'b0;
            rest_r <= {NB{1'b0}};
            out_r <= 1'b0;
            room_r <= 1'b1;
        end
        if (rst) begin
            buf_r <= {32*C{1'b0}};
            held <= {NB{1'b0}};
            group_r <= {CW{1'b0}};
            group_full <= 1'b0;
            rest_r <= {NB{1'b0}};
            out_r <= 1'b0;
            room_r <= 1'b1;
            in_left <= 32'd0;
            in_more <= 1'b0;
            beat_r <= {NB{1'b0}};
        end
    end

endmodule

`default_nettype wire
