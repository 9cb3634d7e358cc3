/* K-ary sum tree kernels: the OpenCL form of hrl/replay/sumtree.py (the reference).
 *
 * Every kernel here is part of the host contract of hrl.replay.backends.opencl: an FPGA
 * binary (xclbin) loaded instead of this source must provide the same kernel names with the
 * same arguments in the same order.
 *
 * Tree layout: all levels in one buffer `tree`, root first. Level l starts at word
 * level_offset[l] (l = 0..depth) and level_offset[depth + 1] is the total word count. Level
 * l >= 1 is rows of K = 2**log2_fanout words: row j holds the children of node j of level
 * l - 1, so leaf i is word level_offset[depth] + i and its ancestor at level l is node
 * i >> ((depth - l) * log2_fanout).
 *
 * Formats: `_f32` kernels keep IEEE floats; `_fixed` kernels keep uint32 words with the rules
 * of hrl/replay/formats.py (encode, ceil-combine, integer descent), bit for bit.
 *
 * Update kernels run as ONE work-group (global size == local size) and loop over the batch,
 * so the levels can be separated by work-group barriers inside one launch: duplicate indices
 * are resolved first (last in batch order wins, through atomic_max on a per-leaf `owner`
 * array that must hold -1 everywhere on entry and is left so on exit), then each level is
 * recomputed from its children, bottom up. Items that share an ancestor write the same
 * value (computed from the same, already final, children). Levels with no more parents than
 * the batch has items are recomputed whole, as in the reference.
 *
 * Sample kernels use one work item per sample (global size >= batch).
 */

/* Sums and products must round exactly as the reference's separate operations do. */
#pragma OPENCL FP_CONTRACT OFF

/* ------------------------------------------------------------------ formats */

/* formats.FixedPoint.combine: ceil(sum(children) / K) without 32-bit overflow. */
inline uint fixed_combine(__global const uint *row, uint log2_fanout)
{
    const uint fanout = 1u << log2_fanout, mask = fanout - 1u;
    uint hi = 0u, lo = 0u;
    for (uint j = 0; j < fanout; ++j) {
        const uint c = row[j];
        hi += c >> log2_fanout;
        lo += c & mask;
    }
    return hi + ((lo + mask) >> log2_fanout);
}

/* Float32.combine, summed left to right. XLA's order for jnp.sum is its own (it depends on
 * the shape), so float trees agree with the reference within the bound stated in
 * hrl/replay/backends/opencl.py, not bit for bit. */
inline float f32_combine(__global const float *row, uint log2_fanout)
{
    const uint fanout = 1u << log2_fanout;
    float sum = 0.0f;
    for (uint j = 0; j < fanout; ++j)
        sum += row[j];
    return sum;
}

/* formats.FixedPoint.encode: rint(p * 2**F), saturated to [0, max_word]; a normal p > 0
 * gives >= 1. Subnormal p counts as zero, as the format's rules say (whether or not this
 * device flushes subnormals: the comparison with FLT_MIN decides, not the arithmetic). */
inline uint fixed_encode(float p, uint leaf_frac_bits, uint max_word)
{
    const float scale = as_float((leaf_frac_bits + 127u) << 23); /* 2**F, F in [0, 32] */
    const float scaled = rint(p * scale);
    const float q = fmin(fmax(scaled, 0.0f), (float)max_word);
    uint word = (q >= 0x1p32f) ? max_word : (uint)q;
    word = min(word, max_word);
    if (word == 0u && p >= FLT_MIN)
        word = 1u;
    return word;
}

/* ------------------------------------------------------------------ update */

/* The body shared by the update kernels; LEAF_WORD(i) is batch item i's leaf word. */
#define HRL_UPDATE_BODY(LEAF_WORD, COMBINE)                                                  \
    const uint lid = get_local_id(0), lsize = get_local_size(0);                            \
    const uint leaf_base = level_offset[depth];                                              \
    for (uint i = lid; i < batch; i += lsize)                                                \
        atomic_max(&owner[indices[i]], (int)i);                                              \
    barrier(CLK_GLOBAL_MEM_FENCE);                                                           \
    for (uint i = lid; i < batch; i += lsize) {                                              \
        const int leaf = indices[i];                                                         \
        if (owner[leaf] == (int)i)                                                           \
            tree[leaf_base + (uint)leaf] = LEAF_WORD(i);                                     \
    }                                                                                        \
    barrier(CLK_GLOBAL_MEM_FENCE);                                                           \
    for (uint i = lid; i < batch; i += lsize)                                                \
        owner[indices[i]] = -1;                                                              \
    for (int level = (int)depth - 1; level >= 0; --level) {                                  \
        const uint parent_base = level_offset[level];                                        \
        const uint child_base = level_offset[level + 1];                                     \
        const uint parents = (level_offset[level + 2] - child_base) >> log2_fanout;          \
        const uint shift = (depth - (uint)level) * log2_fanout;                              \
        if (parents <= batch) {                                                              \
            for (uint p = lid; p < parents; p += lsize)                                      \
                tree[parent_base + p] =                                                      \
                    COMBINE(tree + child_base + (p << log2_fanout), log2_fanout);            \
        } else {                                                                             \
            for (uint i = lid; i < batch; i += lsize) {                                      \
                const uint p = shift < 32u ? ((uint)indices[i] >> shift) : 0u;               \
                tree[parent_base + p] =                                                      \
                    COMBINE(tree + child_base + (p << log2_fanout), log2_fanout);            \
            }                                                                                \
        }                                                                                    \
        barrier(CLK_GLOBAL_MEM_FENCE);                                                       \
    }

__kernel void hrl_update_words_f32(__global float *tree, __constant uint *level_offset,
                                   __global int *owner, __global const int *indices,
                                   __global const float *words, uint batch, uint depth,
                                   uint log2_fanout)
{
#define LEAF_WORD(i) words[i]
    HRL_UPDATE_BODY(LEAF_WORD, f32_combine)
#undef LEAF_WORD
}

__kernel void hrl_update_words_fixed(__global uint *tree, __constant uint *level_offset,
                                     __global int *owner, __global const int *indices,
                                     __global const uint *words, uint batch, uint depth,
                                     uint log2_fanout)
{
#define LEAF_WORD(i) words[i]
    HRL_UPDATE_BODY(LEAF_WORD, fixed_combine)
#undef LEAF_WORD
}

/* Real priorities in, encoded on the device (formats.FixedPoint.encode). */
__kernel void hrl_update_priorities_fixed(__global uint *tree, __constant uint *level_offset,
                                          __global int *owner, __global const int *indices,
                                          __global const float *priorities, uint batch,
                                          uint depth, uint log2_fanout, uint leaf_frac_bits,
                                          uint max_word)
{
#define LEAF_WORD(i) fixed_encode(priorities[i], leaf_frac_bits, max_word)
    HRL_UPDATE_BODY(LEAF_WORD, fixed_combine)
#undef LEAF_WORD
}

/* ------------------------------------------------------------------ sample */

/* formats.stratify_bits: sample i lands in the i-th 1/B slice of the total. */
inline uint sample_fraction(__global const uint *bits, uint i, uint batch, uint stratified)
{
    if (!stratified)
        return bits[i];
    const uint stride = 0xFFFFFFFFu / batch;
    return i * stride + mul_hi(bits[i], stride);
}

/* sumtree._descend_float, operation for operation: target = (float(frac) * 2**-32) * root;
 * per level, inclusive prefix sums left to right (as XLA's cumsum on CPU), the child is the
 * number of prefixes <= target (past the end: the last non-zero child), and the target drops
 * by that child's exclusive prefix, computed as inclusive - child like the reference. */
__kernel void hrl_sample_f32(__global const float *tree, __constant uint *level_offset,
                             __global const uint *bits, __global int *out, uint batch,
                             uint depth, uint log2_fanout, uint stratified)
{
    const uint i = get_global_id(0);
    if (i >= batch)
        return;
    const uint fanout = 1u << log2_fanout;
    float target = ((float)sample_fraction(bits, i, batch, stratified) * 0x1p-32f) * tree[0];
    uint node = 0u;
    for (uint level = 1; level <= depth; ++level) {
        __global const float *row = tree + level_offset[level] + (node << log2_fanout);
        float inclusive = 0.0f;
        uint count = 0u, last_nonzero = 0u;
        for (uint j = 0; j < fanout; ++j) {
            const float c = row[j];
            inclusive = (j == 0u) ? c : inclusive + c;
            count += (inclusive <= target) ? 1u : 0u;
            if (c > 0.0f)
                last_nonzero = j;
        }
        const uint child = (count >= fanout) ? last_nonzero : count;
        float prefix = 0.0f;
        for (uint j = 0; j <= child; ++j)
            prefix = (j == 0u) ? row[0] : prefix + row[j];
        const float exclusive = prefix - row[child];
        target = fmax(target - exclusive, 0.0f);
        node = (node << log2_fanout) + child;
    }
    out[i] = (int)node;
}

/* sumtree._descend_fixed, bit for bit: the 64-bit product frac * root gives the root target
 * (high word) and log2(K) digits per level (low word, most significant first); prefix sums
 * are split at log2(K) bits so they never overflow. */
__kernel void hrl_sample_fixed(__global const uint *tree, __constant uint *level_offset,
                               __global const uint *bits, __global int *out, uint batch,
                               uint depth, uint log2_fanout, uint stratified)
{
    const uint i = get_global_id(0);
    if (i >= batch)
        return;
    const uint fanout = 1u << log2_fanout, mask = fanout - 1u;
    const uint frac = sample_fraction(bits, i, batch, stratified);
    const uint root = tree[0];
    uint t = mul_hi(frac, root);
    const uint low = frac * root;
    uint node = 0u;
    for (uint level = 1; level <= depth; ++level) {
        const uint used = level * log2_fanout;
        const uint digit = (used <= 32u) ? ((low >> (32u - used)) & mask) : 0u;
        __global const uint *row = tree + level_offset[level] + (node << log2_fanout);
        uint lo_cum = 0u, hi_cum = 0u, count = 0u, last_nonzero = 0u;
        for (uint j = 0; j < fanout; ++j) {
            const uint c = row[j];
            lo_cum += c & mask;
            hi_cum += c >> log2_fanout;
            const uint hi = hi_cum + (lo_cum >> log2_fanout), lo = lo_cum & mask;
            count += ((hi < t) || (hi == t && lo <= digit)) ? 1u : 0u; /* P_incl <= t*K+d */
            if (c > 0u)
                last_nonzero = j;
        }
        const bool overflow = count >= fanout;
        const uint child = overflow ? last_nonzero : count;
        uint exclusive = 0u; /* wraps mod 2**32 like the reference's cumsum */
        for (uint j = 0; j < child; ++j)
            exclusive += row[j];
        const uint remainder = ((t << log2_fanout) | digit) - exclusive;
        t = overflow ? row[child] - 1u : remainder;
        node = (node << log2_fanout) + child;
    }
    out[i] = (int)node;
}
