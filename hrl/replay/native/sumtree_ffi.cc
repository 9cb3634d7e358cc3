// CPU kernels of the K-ary sum tree as XLA FFI custom calls.
//
// Semantics are those of hrl/replay/sumtree.py and hrl/replay/formats.py (the reference); this
// file restates them in scalar C++ so one batch costs one custom call instead of dozens of
// small XLA ops. Layout (see sumtree.py): level 0 is the root (1 word); level l >= 1 is a
// row-major (rows_l, K) array whose row j holds the K children of node j of level l - 1.
//
// Float32 rules that make the results reproducible:
//  * A parent is the sum of its K children added left to right from 0.0f. XLA:CPU's own
//    jnp.sum uses that order in its loop emitter but a vectorised YNNPACK order for larger
//    shapes, so the reference's float parents depend on the batch shape; the tests bound the
//    difference (fixed point is exact either way).
//  * Sampling uses the prefix sums XLA:CPU computes for jnp.cumsum: reduce-window, which XLA
//    rewrites for windows longer than 16 into sequential 16-wide chunk scans plus a
//    sequential scan of the chunk totals (inclusive = chunk_prefix + in_chunk_prefix).
//  * Build with -ffp-contract=off and without -ffast-math: no FMA contraction, no
//    reassociation, so each + and * rounds exactly as the reference's ops do.
//
// Buffers arrive aliased (input_output_aliases), so update writes the tree in place.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kMaxFanout = 64;
constexpr int kCumsumChunk = 16;  // XLA's reduce-window rewrite base length (see header).

struct Level {
  void* data;
  int64_t rows;  // rows of K words (level 0: 1 row of 1 word)
};

// Reads the level buffers and checks that they form a tree of fanout K with word dtype `dt`.
template <typename Levels>
ffi::Error CollectLevels(const Levels& levels, ffi::DataType dt, int64_t fanout,
                         std::vector<Level>* out) {
  out->clear();
  const size_t n = levels.size();
  if (n < 2) return ffi::Error::InvalidArgument("sum tree needs at least 2 levels");
  for (size_t l = 0; l < n; ++l) {
    auto maybe = levels.template get<ffi::AnyBuffer>(l);
    if (maybe.has_error()) return maybe.error();
    ffi::AnyBuffer buf = *maybe;
    if (buf.element_type() != dt)
      return ffi::Error::InvalidArgument("level " + std::to_string(l) + " has the wrong dtype");
    auto dims = buf.dimensions();
    if (l == 0) {
      if (buf.element_count() != 1)
        return ffi::Error::InvalidArgument("level 0 (root) must hold exactly one word");
      out->push_back({buf.untyped_data(), 1});
    } else {
      if (dims.size() != 2 || dims[1] != fanout)
        return ffi::Error::InvalidArgument("level " + std::to_string(l) +
                                           " must have shape (rows, fanout=" +
                                           std::to_string(fanout) + ")");
      out->push_back({buf.untyped_data(), dims[0]});
    }
  }
  return ffi::Error::Success();
}

template <typename Rets>
ffi::Error CollectRetLevels(const Rets& levels, std::vector<void*>* out) {
  out->clear();
  for (size_t l = 0; l < levels.size(); ++l) {
    auto maybe = levels.template get<ffi::AnyBuffer>(l);
    if (maybe.has_error()) return maybe.error();
    out->push_back((*maybe)->untyped_data());
  }
  return ffi::Error::Success();
}

ffi::Error CheckFanout(int64_t fanout) {
  if (fanout < 2 || fanout > kMaxFanout || (fanout & (fanout - 1)) != 0)
    return ffi::Error::InvalidArgument("fanout must be a power of two in [2, 64], got " +
                                       std::to_string(fanout));
  return ffi::Error::Success();
}

int Log2(int64_t k) {
  int s = 0;
  while ((int64_t{1} << s) < k) ++s;
  return s;
}

// --------------------------------------------------------------------------- combine

struct Float32Format {
  using Word = float;
  static constexpr ffi::DataType kType = ffi::DataType::F32;
  // jnp.sum over the K children in its loop-emitter order: left to right from 0.
  static inline float Combine(const float* c, int64_t k, int /*s*/) {
    float acc = 0.0f;
    for (int64_t j = 0; j < k; ++j) acc += c[j];
    return acc;
  }
};

struct FixedPointFormat {
  using Word = uint32_t;
  static constexpr ffi::DataType kType = ffi::DataType::U32;
  // formats.FixedPoint.combine: ceil(sum / K) with the sum split at log2(K) bits (no overflow).
  static inline uint32_t Combine(const uint32_t* c, int64_t k, int s) {
    const uint32_t mask = static_cast<uint32_t>(k - 1);
    uint32_t hi = 0, lo = 0;
    for (int64_t j = 0; j < k; ++j) {
      hi += c[j] >> s;
      lo += c[j] & mask;
    }
    return hi + ((lo + mask) >> s);
  }
};

struct MinFloat32Format {
  using Word = float;
  static constexpr ffi::DataType kType = ffi::DataType::F32;
  // formats.MinFloat32.combine: jnp.min over the children (init +inf, NaN propagates).
  static inline float Combine(const float* c, int64_t k, int /*s*/) {
    float acc = __builtin_inff();
    for (int64_t j = 0; j < k; ++j) {
      const float v = c[j];
      acc = (v != v || acc != acc) ? v + acc : (v < acc ? v : acc);
    }
    return acc;
  }
};

// --------------------------------------------------------------------------- update

// The update proper on raw level pointers (level l has rows[l] rows of K words).
template <typename Fmt, int K>
void UpdateLevels(const std::vector<void*>& levels, const std::vector<int64_t>& rows,
                  const int32_t* indices, const typename Fmt::Word* words, int64_t batch,
                  int64_t capacity) {
  using Word = typename Fmt::Word;
  constexpr int s = K == 2 ? 1 : K == 4 ? 2 : K == 8 ? 3 : K == 16 ? 4 : K == 32 ? 5 : 6;
  const int depth = static_cast<int>(levels.size()) - 1;
  Word* leaves = static_cast<Word*>(levels[depth]);
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t idx = indices[i];
    if (idx >= 0 && idx < capacity) leaves[idx] = words[i];
  }
  // node[i]: the current ancestor of sample i (out-of-range -> leaf 0's ancestors).
  std::vector<int64_t> node(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t idx = indices[i];
    node[i] = (idx >= 0 && idx < capacity) ? idx : 0;
  }
  for (int level = depth - 1; level >= 0; --level) {
    const Word* children = static_cast<const Word*>(levels[level + 1]);
    Word* parents = static_cast<Word*>(levels[level]);
    const int64_t child_rows = rows[level + 1];
    for (int64_t i = 0; i < batch; ++i) node[i] >>= s;
    if (child_rows <= batch) {
      for (int64_t r = 0; r < child_rows; ++r) parents[r] = Fmt::Combine(children + r * K, K, s);
    } else {
      int64_t previous = -1;  // consecutive duplicates (common after sorting) are done once
      for (int64_t i = 0; i < batch; ++i) {
        const int64_t r = node[i];
        if (r == previous) continue;
        previous = r;
        if (i + 8 < batch) __builtin_prefetch(children + node[i + 8] * K);
        parents[r] = Fmt::Combine(children + r * K, K, s);
      }
    }
  }
}

// sumtree.update_words: leaves written in batch order (so the last duplicate wins), indices
// outside [0, capacity) dropped; then every ancestor recomputed from its children, bottom up.
// Like the reference, a level with no more rows of children than the batch has indices is
// recomputed whole, and an out-of-range index recomputes the ancestors of leaf 0.
template <typename Fmt>
ffi::Error UpdateImpl(ffi::AnyBuffer indices_buf, ffi::AnyBuffer words_buf,
                      ffi::RemainingArgs levels_in, ffi::RemainingRets levels_out,
                      int64_t fanout, int64_t capacity) {
  using Word = typename Fmt::Word;
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  if (indices_buf.element_type() != ffi::DataType::S32)
    return ffi::Error::InvalidArgument("indices must be int32");
  if (words_buf.element_type() != Fmt::kType)
    return ffi::Error::InvalidArgument("words have the wrong dtype for this format");
  const int64_t batch = static_cast<int64_t>(indices_buf.element_count());
  if (static_cast<int64_t>(words_buf.element_count()) != batch)
    return ffi::Error::InvalidArgument("indices and words differ in length");

  std::vector<Level> in;
  if (auto e = CollectLevels(levels_in, Fmt::kType, fanout, &in); e.failure()) return e;
  std::vector<void*> out;
  if (auto e = CollectRetLevels(levels_out, &out); e.failure()) return e;
  if (out.size() != in.size())
    return ffi::Error::InvalidArgument("number of result levels differs from input levels");
  // The Python side aliases every level; if XLA ever hands separate buffers, copy first.
  for (size_t l = 0; l < in.size(); ++l) {
    if (out[l] != in[l].data)
      std::memcpy(out[l], in[l].data, sizeof(Word) * in[l].rows * (l == 0 ? 1 : fanout));
  }

  const int64_t leaf_words = in.back().rows * fanout;
  if (capacity < 1 || capacity > leaf_words)
    return ffi::Error::InvalidArgument("capacity " + std::to_string(capacity) +
                                       " does not fit the leaf level");
  std::vector<int64_t> rows(in.size());
  for (size_t l = 0; l < in.size(); ++l) rows[l] = in[l].rows;
  const int32_t* indices = indices_buf.typed_data<int32_t>();
  const Word* words = reinterpret_cast<const Word*>(words_buf.untyped_data());
  switch (fanout) {  // a compile-time K lets the compiler unroll the row sums
    case 2: UpdateLevels<Fmt, 2>(out, rows, indices, words, batch, capacity); break;
    case 4: UpdateLevels<Fmt, 4>(out, rows, indices, words, batch, capacity); break;
    case 8: UpdateLevels<Fmt, 8>(out, rows, indices, words, batch, capacity); break;
    case 16: UpdateLevels<Fmt, 16>(out, rows, indices, words, batch, capacity); break;
    case 32: UpdateLevels<Fmt, 32>(out, rows, indices, words, batch, capacity); break;
    case 64: UpdateLevels<Fmt, 64>(out, rows, indices, words, batch, capacity); break;
  }
  return ffi::Error::Success();
}

// --------------------------------------------------------------------------- sampling

inline uint32_t MulHi(uint32_t a, uint32_t b) {
  return static_cast<uint32_t>((static_cast<uint64_t>(a) * b) >> 32);
}

// formats.stratify_bits: frac_i = i * stride + mulhi(bits_i, stride), stride = (2^32-1) // B.
void Fractions(const uint32_t* bits, int64_t batch, bool stratified, uint32_t* frac) {
  if (!stratified) {
    std::memcpy(frac, bits, sizeof(uint32_t) * batch);
    return;
  }
  const uint32_t stride = static_cast<uint32_t>(0xFFFFFFFFull / static_cast<uint64_t>(batch));
  for (int64_t i = 0; i < batch; ++i)
    frac[i] = static_cast<uint32_t>(i) * stride + MulHi(bits[i], stride);
}

// Samples are processed level by level (all B rows of one level before the next) and, within
// a level, in groups of kGroup interleaved samples: their row loads are independent, so cache
// misses overlap, and their K-long sequential prefix sums form kGroup independent dependency
// chains the core runs side by side. Rows are clamped to the level, as XLA clamps gathers.
constexpr int kGroup = 8;

inline int64_t ClampRow(int64_t r, int64_t last_row) { return r < last_row ? r : last_row; }

// max(j where c[j] > 0), or 0 if none: the reference's fallback when no prefix exceeds T.
template <int K, typename Word>
inline int LastNonzero(const Word* c) {
  int last = 0;
  for (int j = 0; j < K; ++j) last = c[j] > 0 ? j : last;
  return last;
}

// sumtree._descend_float. Prefix sums follow jnp.cumsum on XLA:CPU (see the header):
// sequential within 16-wide chunks, chunk prefix added afterwards.
template <int K>
void DescendFloat(const std::vector<Level>& lv, const uint32_t* frac, int64_t batch,
                  int32_t* out_node) {
  constexpr int kChunk = K < kCumsumChunk ? K : kCumsumChunk;
  const int depth = static_cast<int>(lv.size()) - 1;
  const float root = *static_cast<const float*>(lv[0].data);
  std::vector<float> target(batch);
  std::vector<int64_t> node(batch, 0);
  for (int64_t i = 0; i < batch; ++i)
    target[i] = (static_cast<float>(frac[i]) * 0x1p-32f) * root;
  for (int level = 1; level <= depth; ++level) {
    const float* rows = static_cast<const float*>(lv[level].data);
    const int64_t last_row = lv[level].rows - 1;
    for (int64_t i0 = 0; i0 < batch; i0 += kGroup) {
      const int g_n = batch - i0 < kGroup ? static_cast<int>(batch - i0) : kGroup;
      if (level > 1) {
        for (int64_t p = i0 + kGroup; p < i0 + 2 * kGroup && p < batch; ++p)
          __builtin_prefetch(rows + ClampRow(node[p], last_row) * K);
      }
      const float* c[kGroup];
      float t[kGroup], chunk_prefix[kGroup], acc[kGroup];
      float inclusive[kGroup][K];
      int count[kGroup];
      for (int g = 0; g < kGroup; ++g) {
        const int64_t i = i0 + (g < g_n ? g : 0);
        c[g] = rows + ClampRow(node[i], last_row) * K;
        t[g] = target[i];
        chunk_prefix[g] = 0.0f;
        count[g] = 0;
      }
      for (int base = 0; base < K; base += kChunk) {
        for (int g = 0; g < kGroup; ++g) acc[g] = 0.0f;
        for (int j = base; j < base + kChunk; ++j) {
          for (int g = 0; g < kGroup; ++g) {
            acc[g] += c[g][j];
            inclusive[g][j] = acc[g];
            if constexpr (K <= kCumsumChunk) count[g] += acc[g] <= t[g];
          }
        }
        if constexpr (K > kCumsumChunk) {
          for (int j = base; j < base + kChunk; ++j) {
            for (int g = 0; g < kGroup; ++g) {
              const float v = chunk_prefix[g] + inclusive[g][j];
              inclusive[g][j] = v;
              count[g] += v <= t[g];
            }
          }
          for (int g = 0; g < kGroup; ++g) chunk_prefix[g] = chunk_prefix[g] + acc[g];
        }
      }
      for (int g = 0; g < g_n; ++g) {
        const int64_t i = i0 + g;
        int child = count[g];
        if (child >= K) child = LastNonzero<K>(c[g]);  // past the end only through rounding
        const float picked = inclusive[g][child] - c[g][child];  // exclusive prefix, as XLA forms it
        const float rest = t[g] - picked;
        target[i] = rest > 0.0f ? rest : 0.0f;
        node[i] = node[i] * K + child;
      }
    }
  }
  for (int64_t i = 0; i < batch; ++i) out_node[i] = static_cast<int32_t>(node[i]);
}

// sumtree._descend_fixed: integer descent, T = t * K + digit at each level. The reference
// compares split prefix sums (hi, lo) with (t, digit) lexicographically, lo and digit < K;
// that is exactly prefix <= t * K + digit on the unsplit sums, which fit in 64 bits here.
// Prefix sums of unsigned words are non-decreasing, so the count of prefixes <= T is the
// chosen child and the last such prefix is its exclusive prefix sum.
template <int K>
void DescendFixed(const std::vector<Level>& lv, const uint32_t* frac, int64_t batch,
                  int32_t* out_node) {
  const int depth = static_cast<int>(lv.size()) - 1;
  const int s = Log2(K);
  constexpr uint32_t mask = static_cast<uint32_t>(K - 1);
  const uint32_t root = *static_cast<const uint32_t*>(lv[0].data);
  std::vector<uint32_t> t(batch), low(batch);
  std::vector<int64_t> node(batch, 0);
  for (int64_t i = 0; i < batch; ++i) {
    t[i] = MulHi(frac[i], root);
    low[i] = frac[i] * root;  // low word of the 64-bit product (uint32 wrap)
  }
  for (int level = 1; level <= depth; ++level) {
    const uint32_t* rows = static_cast<const uint32_t*>(lv[level].data);
    const int64_t last_row = lv[level].rows - 1;
    const int shift = 32 - level * s;
    for (int64_t i = 0; i < batch; ++i) {
      if (level > 1 && i + kGroup < batch)
        __builtin_prefetch(rows + ClampRow(node[i + kGroup], last_row) * K);
      const uint32_t* c = rows + ClampRow(node[i], last_row) * K;
      const uint32_t digit = shift >= 0 ? (low[i] >> shift) & mask : 0u;
      const uint64_t target = (static_cast<uint64_t>(t[i]) << s) | digit;
      uint64_t prefix[K];
      uint64_t running = 0;
      int child = 0;
      for (int j = 0; j < K; ++j) {
        running += c[j];
        prefix[j] = running;
        child += running <= target;
      }
      if (child >= K) {  // only through the round-up slack: take the last non-zero child
        child = LastNonzero<K>(c);
        t[i] = c[child] - 1u;
      } else {
        const uint64_t excl = child > 0 ? prefix[child - 1] : 0;
        t[i] = static_cast<uint32_t>(target - excl);  // == ((t << s) | digit) - p_excl mod 2^32
      }
      node[i] = node[i] * K + child;
    }
  }
  for (int64_t i = 0; i < batch; ++i) out_node[i] = static_cast<int32_t>(node[i]);
}

template <typename Fmt, int K>
void Descend(const std::vector<Level>& lv, const uint32_t* frac, int64_t batch, int32_t* out) {
  if constexpr (Fmt::kType == ffi::DataType::F32) {
    DescendFloat<K>(lv, frac, batch, out);
  } else {
    DescendFixed<K>(lv, frac, batch, out);
  }
}

template <typename Fmt>
ffi::Error SampleImpl(ffi::AnyBuffer bits_buf, ffi::RemainingArgs levels_in,
                      ffi::Result<ffi::AnyBuffer> out_indices, int64_t fanout, bool stratified) {
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  if (bits_buf.element_type() != ffi::DataType::U32)
    return ffi::Error::InvalidArgument("bits must be uint32");
  if (out_indices->element_type() != ffi::DataType::S32)
    return ffi::Error::InvalidArgument("sampled indices must be int32");
  const int64_t batch = static_cast<int64_t>(bits_buf.element_count());
  if (static_cast<int64_t>(out_indices->element_count()) != batch)
    return ffi::Error::InvalidArgument("result length differs from the number of bits");
  std::vector<Level> lv;
  if (auto e = CollectLevels(levels_in, Fmt::kType, fanout, &lv); e.failure()) return e;
  if (batch == 0) return ffi::Error::Success();
  std::vector<uint32_t> frac(batch);
  Fractions(bits_buf.typed_data<uint32_t>(), batch, stratified, frac.data());
  int32_t* result = out_indices->typed_data<int32_t>();
  switch (fanout) {  // a compile-time K lets the compiler unroll the row loops
    case 2: Descend<Fmt, 2>(lv, frac.data(), batch, result); break;
    case 4: Descend<Fmt, 4>(lv, frac.data(), batch, result); break;
    case 8: Descend<Fmt, 8>(lv, frac.data(), batch, result); break;
    case 16: Descend<Fmt, 16>(lv, frac.data(), batch, result); break;
    case 32: Descend<Fmt, 32>(lv, frac.data(), batch, result); break;
    case 64: Descend<Fmt, 64>(lv, frac.data(), batch, result); break;
  }
  return ffi::Error::Success();
}

}  // namespace

#define HRL_UPDATE_BINDING                 \
  ffi::Ffi::Bind()                         \
      .Arg<ffi::AnyBuffer>() /* indices */ \
      .Arg<ffi::AnyBuffer>() /* words */   \
      .RemainingArgs()       /* levels */  \
      .RemainingRets()       /* levels, aliased */ \
      .Attr<int64_t>("fanout")             \
      .Attr<int64_t>("capacity")

#define HRL_SAMPLE_BINDING                 \
  ffi::Ffi::Bind()                         \
      .Arg<ffi::AnyBuffer>() /* bits */    \
      .RemainingArgs()       /* levels */  \
      .Ret<ffi::AnyBuffer>() /* indices */ \
      .Attr<int64_t>("fanout")             \
      .Attr<bool>("stratified")

XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlSumTreeUpdateF32, UpdateImpl<Float32Format>, HRL_UPDATE_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlSumTreeUpdateU32, UpdateImpl<FixedPointFormat>,
                              HRL_UPDATE_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlSumTreeUpdateMinF32, UpdateImpl<MinFloat32Format>,
                              HRL_UPDATE_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlSumTreeSampleF32, SampleImpl<Float32Format>, HRL_SAMPLE_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlSumTreeSampleU32, SampleImpl<FixedPointFormat>,
                              HRL_SAMPLE_BINDING);
