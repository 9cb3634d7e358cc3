// CPU kernels of the K-ary sum tree as XLA FFI custom calls.
//
// Semantics are those of hrl/replay/sumtree.py and hrl/replay/formats.py (the reference); this
// file restates them in C++ so one batch costs one custom call instead of dozens of small XLA
// ops. Layout (see sumtree.py): level 0 is the root (1 word); level l >= 1 is a row-major
// (rows_l, K) array whose row j holds the K children of node j of level l - 1.
//
// Kernels: the tree operations (update, sample from bits) for hrl.replay.native, and the
// replay buffer's own steps (hrl/replay/buffer.py): one-call sample from a Threefry key,
// gathers of packed transition rows, and the priority update of both trees. Where float
// sums are vectorised, the lanes are different samples or rows, never different children of
// one row, so every lane adds in the reference's order.
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
//
// vmap: every handler takes a stack of independent instances (seeds, trees) in one call, so a
// vmapped training loop runs each kernel once per step rather than once per instance inside a
// loop that slices every instance's tree out and writes it back (vmap_method="sequential").
// Each vmapped axis adds one leading dimension to every buffer; results hold it in full, an
// operand in full or as 1 (not batched along that axis under "expand_dims": shared, read with
// stride 0). The instance count is read off a result whose unbatched rank is known, and the
// single-instance kernel runs on each instance's pointer offsets, so an aliased tree is still
// written where it lies and every instance computes exactly what an unbatched call would.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "xla/ffi/api/ffi.h"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace ffi = xla::ffi;

namespace {

constexpr int64_t kMaxFanout = 64;
constexpr int kCumsumChunk = 16;  // XLA's reduce-window rewrite base length (see header).

// Four float lanes (GCC/Clang vector extensions: SSE, AVX or NEON, whatever the target has).
typedef float F4 __attribute__((vector_size(16)));
typedef int32_t I4 __attribute__((vector_size(16)));
constexpr int kLanes = 4;

inline F4 Select(I4 mask, F4 a, F4 b) {  // mask lanes are all ones or all zeros
  return (F4)(((I4)a & mask) | ((I4)b & ~mask));
}

struct Level {
  void* data;
  int64_t rows;  // rows of K words (level 0: 1 row of 1 word)
};

// --------------------------------------------------------------------------- batching

// Fixed-size, not std::vector: these are set up for every buffer of every call, and heap
// allocations there cost an unbatched call (the common case) measurable time per step.
constexpr size_t kMaxDims = 32;  // vmapped axes plus an instance's own rank, per buffer

// The vmapped leading dimensions of one call (see the header), outermost first.
struct Instances {
  size_t n = 0;  // vmapped axes; 0 outside vmap
  int64_t dims[kMaxDims];
  int64_t count = 1;  // product of dims; 0 for an empty vmap
};

// The instances are the `leading` outer dimensions of a result: results always hold them in
// full, while an operand may hold a dimension as 1.
ffi::Error LeadingInstances(const ffi::AnyBuffer& result, size_t leading, Instances* out) {
  auto dims = result.dimensions();
  if (dims.size() < leading)
    return ffi::Error::InvalidArgument("a result has fewer dimensions than the vmapped axes");
  if (leading > kMaxDims) return ffi::Error::InvalidArgument("too many vmapped axes");
  out->n = leading;
  out->count = 1;
  for (size_t d = 0; d < leading; ++d) {
    out->dims[d] = dims[d];
    out->count *= dims[d];
  }
  return ffi::Error::Success();
}

// Instances of a call whose result `result` has rank `unbatched_rank` outside vmap.
ffi::Error InstancesOf(const ffi::AnyBuffer& result, size_t unbatched_rank, Instances* out) {
  const size_t rank = result.dimensions().size();
  if (rank < unbatched_rank)
    return ffi::Error::InvalidArgument("a result has fewer dimensions than the kernel's own");
  return LeadingInstances(result, rank - unbatched_rank, out);
}

// One buffer as an array per instance: dims[0, rank) is an instance's shape and at(b) its
// first byte for instance b (row-major over the instance dimensions, as XLA lays the buffer
// out). A dimension held as 1 gets stride 0: every instance reads the one shared copy.
class PerInstance {
 public:
  ffi::Error Init(const ffi::AnyBuffer& buf, const Instances& inst, const char* what) {
    auto all = buf.dimensions();
    const size_t n = inst.n;
    if (all.size() < n)
      return ffi::Error::InvalidArgument(std::string(what) + " lacks the vmapped axes");
    if (all.size() > kMaxDims)
      return ffi::Error::InvalidArgument(std::string(what) + " has too many dimensions");
    inst_ = &inst;
    rank = all.size() - n;
    elements = 1;
    for (size_t d = 0; d < rank; ++d) {
      dims[d] = all[n + d];
      elements *= dims[d];
    }
    type = buf.element_type();
    bytes = static_cast<int64_t>(ffi::ByteWidth(type)) * elements;
    base_ = static_cast<char*>(buf.untyped_data());
    int64_t stride = bytes;
    for (size_t d = n; d-- > 0;) {
      if (all[d] != inst.dims[d] && all[d] != 1)
        return ffi::Error::InvalidArgument(std::string(what) + ": vmapped axis " +
                                           std::to_string(d) + " has size " +
                                           std::to_string(all[d]) + ", not " +
                                           std::to_string(inst.dims[d]) + " or 1");
      strides_[d] = all[d] == 1 ? 0 : stride;
      stride *= all[d];
    }
    return ffi::Error::Success();
  }

  char* at(int64_t b) const {
    int64_t offset = 0;
    for (size_t d = inst_->n; d-- > 0;) {
      offset += (b % inst_->dims[d]) * strides_[d];
      b /= inst_->dims[d];
    }
    return base_ + offset;
  }

  size_t rank = 0;  // of one instance
  int64_t dims[kMaxDims];
  ffi::DataType type = ffi::DataType::INVALID;
  int64_t elements = 0;  // per instance
  int64_t bytes = 0;     // per instance

 private:
  const Instances* inst_ = nullptr;  // outlives this view (both live in the handler)
  char* base_ = nullptr;
  int64_t strides_[kMaxDims];  // bytes per step of each vmapped axis (0: shared)
};

inline ffi::AnyBuffer Deref(ffi::AnyBuffer b) { return b; }
inline ffi::AnyBuffer Deref(ffi::Result<ffi::AnyBuffer> b) { return *b; }

// Buffer `i` of RemainingArgs or RemainingRets, per instance.
template <typename List>
ffi::Error GetPerInstance(const List& list, size_t i, const Instances& inst, const char* what,
                          PerInstance* out) {
  auto maybe = list.template get<ffi::AnyBuffer>(i);
  if (maybe.has_error()) return maybe.error();
  return out->Init(Deref(*maybe), inst, what);
}

// The instances read off result `i` of RemainingRets (see InstancesOf).
ffi::Error InstancesOfRet(const ffi::RemainingRets& rets, size_t i, size_t unbatched_rank,
                          Instances* out) {
  if (i >= rets.size()) return ffi::Error::InvalidArgument("too few results");
  auto maybe = rets.get<ffi::AnyBuffer>(i);
  if (maybe.has_error()) return maybe.error();
  return InstancesOf(Deref(*maybe), unbatched_rank, out);
}

// Reads the level buffers levels[first, first + count) (count < 0: to the end) and checks
// that each instance's levels form a tree of fanout K with word dtype `dt`.
template <typename Levels>
ffi::Error CollectLevels(const Levels& levels, const Instances& inst, ffi::DataType dt,
                         int64_t fanout, std::vector<PerInstance>* out, size_t first = 0,
                         int64_t count = -1) {
  out->clear();
  const size_t n = count < 0 ? levels.size() - first : static_cast<size_t>(count);
  if (n < 2) return ffi::Error::InvalidArgument("sum tree needs at least 2 levels");
  if (first + n > levels.size()) return ffi::Error::InvalidArgument("too few level buffers");
  out->reserve(n);
  for (size_t l = 0; l < n; ++l) {
    out->emplace_back();
    PerInstance& level = out->back();
    if (auto e = GetPerInstance(levels, first + l, inst, "a tree level", &level); e.failure())
      return e;
    if (level.type != dt)
      return ffi::Error::InvalidArgument("level " + std::to_string(l) + " has the wrong dtype");
    if (l == 0) {
      if (level.elements != 1)
        return ffi::Error::InvalidArgument("level 0 (root) must hold exactly one word");
    } else if (level.rank != 2 || level.dims[1] != fanout) {
      return ffi::Error::InvalidArgument("level " + std::to_string(l) +
                                         " must have shape (rows, fanout=" +
                                         std::to_string(fanout) + ")");
    }
  }
  return ffi::Error::Success();
}

// Instance b's levels.
void LevelsAt(const std::vector<PerInstance>& levels, int64_t b, std::vector<Level>* out) {
  out->clear();
  for (size_t l = 0; l < levels.size(); ++l)
    out->push_back({levels[l].at(b), l == 0 ? 1 : levels[l].dims[0]});
}

void PointersAt(const std::vector<PerInstance>& levels, int64_t b, std::vector<void*>* out) {
  out->clear();
  for (const PerInstance& level : levels) out->push_back(level.at(b));
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

// --------------------------------------------------------------------------- huge pages

// Random rows of a large table (the replay rows, the leaf levels) miss the TLB on every
// access with 4 KiB pages: a 2^20-slot buffer of 48-byte rows spans 12k pages. Backing such
// a buffer with 2 MiB pages turns each row read into a single cache miss. Linux with
// transparent huge pages in "madvise" mode (the common default) does that only for regions
// that ask, so the kernels ask: MADV_HUGEPAGE for future faults and MADV_COLLAPSE (Linux >=
// 6.1) to rebuild the pages already there (a cost per MiB the first time, little once
// collapsed). XLA may free a buffer and hand the same address to a new one, so an address is
// asked again when its last request is more than kAdviseEvery old. Failures are ignored: this
// changes speed, never results. $HRL_NATIVE_NO_HUGEPAGES (any value) turns it off.
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kAdviseMinBytes = size_t{8} << 20;
constexpr auto kAdviseEvery = std::chrono::seconds(2);

void AdviseHugePages(const void* data, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes < kAdviseMinBytes) return;
  static const bool disabled = std::getenv("HRL_NATIVE_NO_HUGEPAGES") != nullptr;
  if (disabled) return;
  static std::mutex mu;
  static std::unordered_map<const void*, std::chrono::steady_clock::time_point> asked;
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = asked.find(data);
    if (it != asked.end() && now - it->second < kAdviseEvery) return;
    asked[data] = now;
  }
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHugePage - 1);
  if (end <= begin) return;
  void* start = reinterpret_cast<void*>(begin);
  madvise(start, end - begin, MADV_HUGEPAGE);
#if defined(MADV_COLLAPSE)
  madvise(start, end - begin, MADV_COLLAPSE);
#else
  madvise(start, end - begin, 25 /* MADV_COLLAPSE */);
#endif
#else
  (void)data;
  (void)bytes;
#endif
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
  // The NaN-free case (the buffer never stores NaN) runs in vector lanes without branches;
  // a NaN child takes the scalar loop with the propagation rule.
  static inline float Combine(const float* c, int64_t k, int /*s*/) {
    if (k >= kLanes) {  // min is order-free without NaN: 4 lanes, then across the lanes
      F4 m;
      std::memcpy(&m, c, sizeof(F4));
      I4 nan = m != m;
      for (int64_t j = kLanes; j < k; j += kLanes) {
        F4 v;
        std::memcpy(&v, c + j, sizeof(F4));
        nan |= v != v;
        m = Select(v < m, v, m);
      }
      if ((nan[0] | nan[1] | nan[2] | nan[3]) == 0) {
        float acc = m[0];
        for (int l = 1; l < kLanes; ++l) acc = m[l] < acc ? m[l] : acc;
        return acc;
      }
    }
    float acc = __builtin_inff();
    for (int64_t j = 0; j < k; ++j) {
      const float v = c[j];
      acc = (v != v || acc != acc) ? v + acc : (v < acc ? v : acc);
    }
    return acc;
  }
};

// --------------------------------------------------------------------------- update

// parents[r] = Combine(row r of children) for every r in `todo`. Float32 sums run in vector
// lanes, one row per lane: each lane still adds its K children left to right from 0, so every
// parent rounds exactly as the scalar Combine does, but four dependency chains advance at once
// (one chain of K dependent float adds per row is what bounds the scalar loop).
constexpr int64_t kCombineAhead = 16;  // rows of children prefetched ahead

template <typename Fmt, int K>
void CombineRows(const typename Fmt::Word* children, typename Fmt::Word* parents,
                 const std::vector<int64_t>& todo, int s) {
  const int64_t n = static_cast<int64_t>(todo.size());
  int64_t done = 0;
  if constexpr (std::is_same_v<Fmt, Float32Format> && K >= kLanes) {
    for (; done + kLanes <= n; done += kLanes) {
      const float* c[kLanes];
      for (int l = 0; l < kLanes; ++l) c[l] = children + todo[done + l] * K;
      for (int64_t p = done + kCombineAhead; p < done + kCombineAhead + kLanes && p < n; ++p)
        __builtin_prefetch(children + todo[p] * K);
      F4 acc = F4{};
      for (int j = 0; j < K; j += kLanes) {
        F4 r[kLanes];
        for (int l = 0; l < kLanes; ++l) std::memcpy(&r[l], c[l] + j, sizeof(F4));
        const F4 t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
        const F4 t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
        const F4 t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
        const F4 t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
        acc += __builtin_shufflevector(t0, t2, 0, 1, 4, 5);  // child j of the four rows
        acc += __builtin_shufflevector(t0, t2, 2, 3, 6, 7);  // child j + 1
        acc += __builtin_shufflevector(t1, t3, 0, 1, 4, 5);  // child j + 2
        acc += __builtin_shufflevector(t1, t3, 2, 3, 6, 7);  // child j + 3
      }
      for (int l = 0; l < kLanes; ++l) parents[todo[done + l]] = acc[l];
    }
  }
  for (int64_t i = done; i < n; ++i) {
    if (i + kCombineAhead < n) __builtin_prefetch(children + todo[i + kCombineAhead] * K);
    parents[todo[i]] = Fmt::Combine(children + todo[i] * K, K, s);
  }
}

constexpr int64_t kWriteAhead = 16;  // leaf writes: prefetch the line this many writes ahead

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
    if (i + kWriteAhead < batch) {
      const int32_t ahead = indices[i + kWriteAhead];
      if (ahead >= 0 && ahead < capacity) __builtin_prefetch(leaves + ahead, 1);
    }
    const int32_t idx = indices[i];
    if (idx >= 0 && idx < capacity) leaves[idx] = words[i];
  }
  // node[i]: the current ancestor of sample i (out-of-range -> leaf 0's ancestors).
  std::vector<int64_t> node(batch);
  for (int64_t i = 0; i < batch; ++i) {
    const int32_t idx = indices[i];
    node[i] = (idx >= 0 && idx < capacity) ? idx : 0;
  }
  std::vector<int64_t> todo;  // rows of children whose parent is recomputed at this level
  todo.reserve(batch);
  for (int level = depth - 1; level >= 0; --level) {
    const Word* children = static_cast<const Word*>(levels[level + 1]);
    Word* parents = static_cast<Word*>(levels[level]);
    const int64_t child_rows = rows[level + 1];
    for (int64_t i = 0; i < batch; ++i) node[i] >>= s;
    todo.clear();
    if (child_rows <= batch) {
      for (int64_t r = 0; r < child_rows; ++r) todo.push_back(r);
    } else {
      int64_t previous = -1;  // consecutive duplicates (common after sorting) are done once
      for (int64_t i = 0; i < batch; ++i) {
        if (node[i] != previous) todo.push_back(node[i]);
        previous = node[i];
      }
    }
    CombineRows<Fmt, K>(children, parents, todo, s);
  }
}

// Writes `words` at `indices` into the tree whose level buffers are in/out (aliased, or
// copied first) and fixes every ancestor.
template <typename Fmt>
ffi::Error UpdateTree(const std::vector<Level>& in, const std::vector<void*>& out,
                      const int32_t* indices, const typename Fmt::Word* words, int64_t batch,
                      int64_t fanout, int64_t capacity) {
  using Word = typename Fmt::Word;
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
  Instances inst;
  if (auto e = InstancesOfRet(levels_out, 0, 1, &inst); e.failure()) return e;
  PerInstance indices, words;
  if (auto e = indices.Init(indices_buf, inst, "indices"); e.failure()) return e;
  if (auto e = words.Init(words_buf, inst, "words"); e.failure()) return e;
  if (indices.type != ffi::DataType::S32) return ffi::Error::InvalidArgument("indices must be int32");
  if (words.type != Fmt::kType)
    return ffi::Error::InvalidArgument("words have the wrong dtype for this format");
  const int64_t batch = indices.elements;
  if (words.elements != batch)
    return ffi::Error::InvalidArgument("indices and words differ in length");
  std::vector<PerInstance> in, out;
  if (auto e = CollectLevels(levels_in, inst, Fmt::kType, fanout, &in); e.failure()) return e;
  if (auto e = CollectLevels(levels_out, inst, Fmt::kType, fanout, &out); e.failure()) return e;
  if (inst.count == 0) return ffi::Error::Success();
  AdviseHugePages(out.back().at(0), static_cast<size_t>(out.back().bytes * inst.count));
  std::vector<Level> in_b;
  std::vector<void*> out_b;
  for (int64_t b = 0; b < inst.count; ++b) {
    LevelsAt(in, b, &in_b);
    PointersAt(out, b, &out_b);
    if (auto e = UpdateTree<Fmt>(in_b, out_b, reinterpret_cast<const int32_t*>(indices.at(b)),
                                 reinterpret_cast<const Word*>(words.at(b)), batch, fanout,
                                 capacity);
        e.failure())
      return e;
  }
  return ffi::Error::Success();
}

// buffer.PrioritizedReplay.update's bookkeeping and both tree writes in one call: an index
// is valid if 0 <= index < size (invalid ones are dropped); max_priority_out =
// max(max_priority, raw of the valid, finite entries), raw = |td| + eps as the caller formed
// it; `words` (the sum tree's encoded priorities) and `min_values` (the min tree's) were formed
// by the caller from the same raw values. With n_min_levels == 0 there is no min tree
// (weights="batch").
template <typename Fmt>
ffi::Error ReplayUpdateImpl(ffi::AnyBuffer indices_buf, ffi::AnyBuffer raw_buf,
                            ffi::AnyBuffer words_buf, ffi::AnyBuffer min_values_buf,
                            ffi::AnyBuffer size_buf, ffi::AnyBuffer max_buf,
                            ffi::RemainingArgs levels_in, ffi::Result<ffi::AnyBuffer> max_out_buf,
                            ffi::RemainingRets levels_out, int64_t fanout, int64_t capacity,
                            int64_t n_sum_levels) {
  using Word = typename Fmt::Word;
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  Instances inst;
  if (auto e = InstancesOf(*max_out_buf, 0, &inst); e.failure()) return e;
  PerInstance indices, raw, words, min_values, size, max_in, max_out;
  if (auto e = indices.Init(indices_buf, inst, "indices"); e.failure()) return e;
  if (auto e = raw.Init(raw_buf, inst, "raw priorities"); e.failure()) return e;
  if (auto e = words.Init(words_buf, inst, "words"); e.failure()) return e;
  if (auto e = min_values.Init(min_values_buf, inst, "min values"); e.failure()) return e;
  if (auto e = size.Init(size_buf, inst, "size"); e.failure()) return e;
  if (auto e = max_in.Init(max_buf, inst, "max priority"); e.failure()) return e;
  if (auto e = max_out.Init(*max_out_buf, inst, "new max priority"); e.failure()) return e;
  const int64_t batch = indices.elements;
  if (indices.type != ffi::DataType::S32 || raw.type != ffi::DataType::F32 ||
      words.type != Fmt::kType || min_values.type != ffi::DataType::F32)
    return ffi::Error::InvalidArgument("indices int32, raw and min values float32, words in format");
  if (raw.elements != batch || words.elements != batch)
    return ffi::Error::InvalidArgument("indices, raw priorities and words differ in length");
  if (size.type != ffi::DataType::S32 || size.elements != 1 ||
      max_in.type != ffi::DataType::F32 || max_in.elements != 1 ||
      max_out.type != ffi::DataType::F32 || max_out.elements != 1)
    return ffi::Error::InvalidArgument("size must be an int32 and max_priority a float32 scalar");
  const int64_t n_min_levels = static_cast<int64_t>(levels_in.size()) - n_sum_levels;
  std::vector<PerInstance> sum_in, min_in, sum_out, min_out;
  if (auto e = CollectLevels(levels_in, inst, Fmt::kType, fanout, &sum_in, 0, n_sum_levels);
      e.failure())
    return e;
  if (auto e = CollectLevels(levels_out, inst, Fmt::kType, fanout, &sum_out, 0, n_sum_levels);
      e.failure())
    return e;
  if (n_min_levels > 0) {
    if (min_values.elements != batch)
      return ffi::Error::InvalidArgument("min values and indices differ in length");
    if (auto e = CollectLevels(levels_in, inst, ffi::DataType::F32, fanout, &min_in,
                               n_sum_levels, n_min_levels);
        e.failure())
      return e;
    if (auto e = CollectLevels(levels_out, inst, ffi::DataType::F32, fanout, &min_out,
                               n_sum_levels, n_min_levels);
        e.failure())
      return e;
  }
  if (inst.count == 0) return ffi::Error::Success();
  AdviseHugePages(sum_out.back().at(0), static_cast<size_t>(sum_out.back().bytes * inst.count));
  if (n_min_levels > 0)
    AdviseHugePages(min_out.back().at(0), static_cast<size_t>(min_out.back().bytes * inst.count));
  std::vector<int32_t> kept(batch);
  std::vector<Level> in_b;
  std::vector<void*> out_b;
  for (int64_t b = 0; b < inst.count; ++b) {
    const int32_t n = *reinterpret_cast<const int32_t*>(size.at(b));
    const int32_t* idx = reinterpret_cast<const int32_t*>(indices.at(b));
    const float* r = reinterpret_cast<const float*>(raw.at(b));
    float max_priority = *reinterpret_cast<const float*>(max_in.at(b));
    for (int64_t i = 0; i < batch; ++i) {
      const bool valid = idx[i] >= 0 && idx[i] < n;
      kept[i] = valid ? idx[i] : -1;  // -1: dropped by the tree update
      if (valid && std::isfinite(r[i]) && r[i] > max_priority) max_priority = r[i];
    }
    *reinterpret_cast<float*>(max_out.at(b)) = max_priority;
    LevelsAt(sum_in, b, &in_b);
    PointersAt(sum_out, b, &out_b);
    if (auto e = UpdateTree<Fmt>(in_b, out_b, kept.data(),
                                 reinterpret_cast<const Word*>(words.at(b)), batch, fanout,
                                 capacity);
        e.failure())
      return e;
    if (n_min_levels > 0) {
      LevelsAt(min_in, b, &in_b);
      PointersAt(min_out, b, &out_b);
      if (auto e = UpdateTree<MinFloat32Format>(
              in_b, out_b, kept.data(), reinterpret_cast<const float*>(min_values.at(b)), batch,
              fanout, capacity);
          e.failure())
        return e;
    }
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

// Rows of another table to prefetch as soon as the descent knows each sample's leaf (the
// buffer's transition rows, which the gather that follows reads): their cache misses then
// overlap the rest of the descent instead of stalling the gather.
struct RowPrefetch {
  const char* base = nullptr;  // nullptr: nothing to prefetch
  int64_t row_bytes = 0;
  int64_t last = 0;  // rows are clamped to [0, last], as the caller clamps the indices
  inline void operator()(int64_t leaf) const {
    if (base == nullptr) return;
    const char* row = base + (leaf < last ? leaf : last) * row_bytes;
    __builtin_prefetch(row);
    __builtin_prefetch(row + row_bytes - 1);  // a row may span two cache lines
  }
};

// sumtree._descend_float. Prefix sums follow jnp.cumsum on XLA:CPU (see the header):
// sequential within 16-wide chunks, the sum of the earlier chunks added afterwards.
//
// Vectorised across samples, not across children: lane l of a vector is sample l of a group,
// so every lane adds its K children in the reference's sequential order and rounds exactly
// as scalar code would, while one instruction serves kLanes samples. Per child and vector
// lane: one add, one compare (the child is the count of prefixes <= T) and one store of the
// prefix, which is read back only at the chosen child.
constexpr int kVectors = kGroup / kLanes;  // independent add chains per group

template <int K>
void DescendFloat(const std::vector<Level>& lv, const uint32_t* frac, int64_t batch,
                  int32_t* out_node, const RowPrefetch& prefetch) {
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
      for (int g = 0; g < kGroup; ++g)
        c[g] = rows + ClampRow(node[i0 + (g < g_n ? g : 0)], last_row) * K;
      F4 t[kVectors], chunk_prefix[kVectors], acc[kVectors];
      F4 inclusive[kVectors][K];  // the lanes' prefix sums, read back only at the child
      I4 count[kVectors];
      for (int v = 0; v < kVectors; ++v) {
        for (int l = 0; l < kLanes; ++l) {
          const int g = v * kLanes + l;
          t[v][l] = target[i0 + (g < g_n ? g : 0)];
        }
        chunk_prefix[v] = F4{};
        count[v] = I4{};
      }
      for (int base = 0; base < K; base += kChunk) {
        for (int v = 0; v < kVectors; ++v) acc[v] = F4{};
        auto step = [&](int v, int j, F4 w) {
          acc[v] += w;
          const F4 val = K > kCumsumChunk ? chunk_prefix[v] + acc[v] : acc[v];
          inclusive[v][j] = val;
          count[v] -= val <= t[v];  // true lanes are -1
        };
        if constexpr (K >= kLanes) {
          // Four children of four samples: four row loads and a 4x4 transpose.
          for (int j = base; j < base + kChunk; j += kLanes) {
            for (int v = 0; v < kVectors; ++v) {
              const float* const* cv = c + v * kLanes;
              F4 r[kLanes];
              for (int l = 0; l < kLanes; ++l) std::memcpy(&r[l], cv[l] + j, sizeof(F4));
              const F4 t0 = __builtin_shufflevector(r[0], r[1], 0, 4, 1, 5);
              const F4 t1 = __builtin_shufflevector(r[0], r[1], 2, 6, 3, 7);
              const F4 t2 = __builtin_shufflevector(r[2], r[3], 0, 4, 1, 5);
              const F4 t3 = __builtin_shufflevector(r[2], r[3], 2, 6, 3, 7);
              step(v, j, __builtin_shufflevector(t0, t2, 0, 1, 4, 5));
              step(v, j + 1, __builtin_shufflevector(t0, t2, 2, 3, 6, 7));
              step(v, j + 2, __builtin_shufflevector(t1, t3, 0, 1, 4, 5));
              step(v, j + 3, __builtin_shufflevector(t1, t3, 2, 3, 6, 7));
            }
          }
        } else {
          for (int j = base; j < base + kChunk; ++j) {
            for (int v = 0; v < kVectors; ++v) {
              const float* const* cv = c + v * kLanes;
              step(v, j, F4{cv[0][j], cv[1][j], cv[2][j], cv[3][j]});
            }
          }
        }
        if constexpr (K > kCumsumChunk)
          for (int v = 0; v < kVectors; ++v) chunk_prefix[v] = chunk_prefix[v] + acc[v];
      }
      for (int g = 0; g < g_n; ++g) {
        const int v = g / kLanes, l = g % kLanes;
        const int64_t i = i0 + g;
        int child = count[v][l];
        if (child >= K) child = LastNonzero<K>(c[g]);  // past the end only through rounding
        const float picked = inclusive[v][child][l] - c[g][child];  // exclusive, as XLA forms it
        const float rest = target[i] - picked;
        target[i] = rest > 0.0f ? rest : 0.0f;
        node[i] = node[i] * K + child;
        if (level == depth) prefetch(node[i]);
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
                  int32_t* out_node, const RowPrefetch& prefetch) {
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
      uint64_t running = 0, excl = 0;
      int child = 0;
      for (int j = 0; j < K; ++j) {
        running += c[j];
        const bool below = running <= target;
        excl = below ? running : excl;
        child += below;
      }
      if (child >= K) {  // only through the round-up slack: take the last non-zero child
        child = LastNonzero<K>(c);
        t[i] = c[child] - 1u;
      } else {
        t[i] = static_cast<uint32_t>(target - excl);  // == ((t << s) | digit) - p_excl mod 2^32
      }
      node[i] = node[i] * K + child;
    }
  }
  for (int64_t i = 0; i < batch; ++i) out_node[i] = static_cast<int32_t>(node[i]);
}

template <typename Fmt, int K>
void Descend(const std::vector<Level>& lv, const uint32_t* frac, int64_t batch, int32_t* out,
             const RowPrefetch& prefetch = RowPrefetch{}) {
  if constexpr (Fmt::kType == ffi::DataType::F32) {
    DescendFloat<K>(lv, frac, batch, out, prefetch);
  } else {
    DescendFixed<K>(lv, frac, batch, out, prefetch);
  }
}

template <typename Fmt>
ffi::Error SampleImpl(ffi::AnyBuffer bits_buf, ffi::RemainingArgs levels_in,
                      ffi::Result<ffi::AnyBuffer> out_buf, int64_t fanout, bool stratified) {
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  Instances inst;
  if (auto e = InstancesOf(*out_buf, 1, &inst); e.failure()) return e;
  PerInstance bits, out;
  if (auto e = bits.Init(bits_buf, inst, "bits"); e.failure()) return e;
  if (auto e = out.Init(*out_buf, inst, "sampled indices"); e.failure()) return e;
  if (bits.type != ffi::DataType::U32) return ffi::Error::InvalidArgument("bits must be uint32");
  if (out.type != ffi::DataType::S32)
    return ffi::Error::InvalidArgument("sampled indices must be int32");
  const int64_t batch = bits.elements;
  if (out.elements != batch)
    return ffi::Error::InvalidArgument("result length differs from the number of bits");
  std::vector<PerInstance> levels;
  if (auto e = CollectLevels(levels_in, inst, Fmt::kType, fanout, &levels); e.failure()) return e;
  if (batch == 0 || inst.count == 0) return ffi::Error::Success();
  std::vector<uint32_t> frac(batch);
  std::vector<Level> lv;
  for (int64_t b = 0; b < inst.count; ++b) {
    LevelsAt(levels, b, &lv);
    Fractions(reinterpret_cast<const uint32_t*>(bits.at(b)), batch, stratified, frac.data());
    int32_t* result = reinterpret_cast<int32_t*>(out.at(b));
    switch (fanout) {  // a compile-time K lets the compiler unroll the row loops
      case 2: Descend<Fmt, 2>(lv, frac.data(), batch, result); break;
      case 4: Descend<Fmt, 4>(lv, frac.data(), batch, result); break;
      case 8: Descend<Fmt, 8>(lv, frac.data(), batch, result); break;
      case 16: Descend<Fmt, 16>(lv, frac.data(), batch, result); break;
      case 32: Descend<Fmt, 32>(lv, frac.data(), batch, result); break;
      case 64: Descend<Fmt, 64>(lv, frac.data(), batch, result); break;
    }
  }
  return ffi::Error::Success();
}

// --------------------------------------------------------------------------- random bits

inline uint32_t Rotl(uint32_t v, int d) { return (v << d) | (v >> (32 - d)); }

// jax.random.bits(key, (n,), jnp.uint32) for a threefry2x32 key under
// jax_threefry_partitionable (JAX's default): the 64-bit counter i is hashed as the pair
// (hi, lo) = (i >> 32, i & 0xffffffff) with Threefry-2x32 (20 rounds) and the two output words
// are xor-ed. Reproducing it here saves XLA:CPU's rolled 5-iteration while loop per batch
// (experiments/bench/bench_replay.py measures it); the Python side only takes this path when that config and key type hold.
void ThreefryBits(uint32_t k0, uint32_t k1, int64_t n, uint32_t* out) {
  static constexpr int kRot[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {k0, k1, k0 ^ k1 ^ 0x1BD11BDAu};
  for (int64_t i = 0; i < n; ++i) {
    uint32_t x0 = static_cast<uint32_t>(static_cast<uint64_t>(i) >> 32) + ks[0];
    uint32_t x1 = static_cast<uint32_t>(i) + ks[1];
    for (int r = 0; r < 5; ++r) {
      for (int j = 0; j < 4; ++j) {
        x0 += x1;
        x1 = Rotl(x1, kRot[r & 1][j]);
        x1 ^= x0;
      }
      x0 += ks[(r + 1) % 3];
      x1 += ks[(r + 2) % 3] + static_cast<uint32_t>(r + 1);
    }
    out[i] = x0 ^ x1;
  }
}

// buffer.PrioritizedReplay.sample's tree part in one call: threefry bits from the key,
// (stratified) descent, indices clamped to the filled part [0, max(size, 1) - 1], and the
// clamped indices' leaf words (the caller decodes them into probabilities and IS weights).
// The sampled rows of `rows_buf` (the transitions; 0 rows: none) are prefetched on the way.
template <typename Fmt>
ffi::Error SampleKeyImpl(ffi::AnyBuffer key_buf, ffi::AnyBuffer size_buf,
                         ffi::AnyBuffer rows_buf, ffi::RemainingArgs levels_in,
                         ffi::Result<ffi::AnyBuffer> out_indices_buf,
                         ffi::Result<ffi::AnyBuffer> out_words_buf, int64_t fanout,
                         bool stratified) {
  using Word = typename Fmt::Word;
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  Instances inst;
  if (auto e = InstancesOf(*out_indices_buf, 1, &inst); e.failure()) return e;
  PerInstance key, size, rows, out_indices, out_words;
  if (auto e = key.Init(key_buf, inst, "key"); e.failure()) return e;
  if (auto e = size.Init(size_buf, inst, "size"); e.failure()) return e;
  if (auto e = rows.Init(rows_buf, inst, "rows"); e.failure()) return e;
  if (auto e = out_indices.Init(*out_indices_buf, inst, "indices"); e.failure()) return e;
  if (auto e = out_words.Init(*out_words_buf, inst, "leaf words"); e.failure()) return e;
  if (key.type != ffi::DataType::U32 || key.elements != 2)
    return ffi::Error::InvalidArgument("key must be the 2 uint32 words of a threefry2x32 key");
  if (size.type != ffi::DataType::S32 || size.elements != 1)
    return ffi::Error::InvalidArgument("size must be an int32 scalar");
  if (out_indices.type != ffi::DataType::S32 || out_words.type != Fmt::kType)
    return ffi::Error::InvalidArgument("results must be int32 indices and leaf words");
  const int64_t batch = out_indices.elements;
  if (out_words.elements != batch)
    return ffi::Error::InvalidArgument("indices and leaf words differ in length");
  std::vector<PerInstance> levels;
  if (auto e = CollectLevels(levels_in, inst, Fmt::kType, fanout, &levels); e.failure()) return e;
  if (batch == 0 || inst.count == 0) return ffi::Error::Success();
  // Whole buffers: a shared (stride-0) one is advised once, a stacked one in one piece.
  AdviseHugePages(levels.back().at(0), static_cast<size_t>(levels.back().bytes * inst.count));
  const bool has_rows = rows.rank > 0 && rows.dims[0] > 0 && rows.bytes > 0;
  if (has_rows) AdviseHugePages(rows.at(0), static_cast<size_t>(rows.bytes * inst.count));
  std::vector<uint32_t> bits(batch), frac(batch);
  std::vector<Level> lv;
  for (int64_t b = 0; b < inst.count; ++b) {
    LevelsAt(levels, b, &lv);
    const uint32_t* k = reinterpret_cast<const uint32_t*>(key.at(b));
    ThreefryBits(k[0], k[1], batch, bits.data());
    Fractions(bits.data(), batch, stratified, frac.data());
    int32_t* result = reinterpret_cast<int32_t*>(out_indices.at(b));
    const int32_t n = *reinterpret_cast<const int32_t*>(size.at(b));
    const int32_t last = n > 1 ? n - 1 : 0;
    RowPrefetch prefetch;  // the rows the gather will read (a table with no rows: none)
    if (has_rows) {
      prefetch.base = rows.at(b);
      prefetch.row_bytes = rows.bytes / rows.dims[0];
      prefetch.last = last < rows.dims[0] - 1 ? last : rows.dims[0] - 1;
    }
    switch (fanout) {
      case 2: Descend<Fmt, 2>(lv, frac.data(), batch, result, prefetch); break;
      case 4: Descend<Fmt, 4>(lv, frac.data(), batch, result, prefetch); break;
      case 8: Descend<Fmt, 8>(lv, frac.data(), batch, result, prefetch); break;
      case 16: Descend<Fmt, 16>(lv, frac.data(), batch, result, prefetch); break;
      case 32: Descend<Fmt, 32>(lv, frac.data(), batch, result, prefetch); break;
      case 64: Descend<Fmt, 64>(lv, frac.data(), batch, result, prefetch); break;
    }
    const Word* leaves = reinterpret_cast<const Word*>(lv.back().data);
    Word* words = reinterpret_cast<Word*>(out_words.at(b));
    for (int64_t i = 0; i < batch; ++i) {
      const int32_t idx = result[i] < last ? result[i] : last;
      result[i] = idx;
      words[i] = leaves[idx];
    }
  }
  return ffi::Error::Success();
}

// --------------------------------------------------------------------------- row gather

constexpr int64_t kGatherAhead = 16;  // rows prefetched ahead of the copy

// One instance's gather: row clamp(indices[i]) of `src` split into the fields' arrays.
void GatherRows(const char* src, int64_t rows, int64_t row_bytes, const int32_t* indices,
                int64_t batch, const std::vector<char*>& dst, ffi::Span<const int64_t> offsets,
                ffi::Span<const int64_t> sizes) {
  const size_t m = dst.size();
  auto row = [&](int64_t i) {
    int64_t r = indices[i];
    r = r < 0 ? 0 : (r >= rows ? rows - 1 : r);
    return src + r * row_bytes;
  };
  for (int64_t i = 0; i < batch && i < kGatherAhead; ++i) {
    __builtin_prefetch(row(i));
    __builtin_prefetch(row(i) + row_bytes - 1);
  }
  for (int64_t i = 0; i < batch; ++i) {
    if (i + kGatherAhead < batch) {
      __builtin_prefetch(row(i + kGatherAhead));
      __builtin_prefetch(row(i + kGatherAhead) + row_bytes - 1);  // a row may span two lines
    }
    const char* from = row(i);
    for (size_t j = 0; j < m; ++j) {
      char* to = dst[j] + i * sizes[j];
      switch (sizes[j]) {
        case 1: std::memcpy(to, from + offsets[j], 1); break;
        case 4: std::memcpy(to, from + offsets[j], 4); break;
        case 8: std::memcpy(to, from + offsets[j], 8); break;
        case 16: std::memcpy(to, from + offsets[j], 16); break;
        default: std::memcpy(to, from + offsets[j], sizes[j]);
      }
    }
  }
}

// out_j[i] = bytes [offsets[j], offsets[j] + sizes[j]) of row clamp(indices[i]) of `table`:
// the sampled rows of packed transitions (hrl.replay.rows) split straight into their fields,
// so no XLA slice/bitcast ops follow the gather (outside a fused loop XLA:CPU dispatches such
// small independent ops to its thread pool, which costs more than the copies themselves).
// XLA's own gather pays a dispatch and a cache miss per row for every array; here the row
// loads are prefetched kGatherAhead rows ahead so their cache misses overlap.
ffi::Error GatherFieldsImpl(ffi::AnyBuffer indices_buf, ffi::AnyBuffer table_buf,
                            ffi::RemainingRets outs, ffi::Span<const int64_t> offsets,
                            ffi::Span<const int64_t> sizes) {
  const size_t m = outs.size();
  if (offsets.size() != m || sizes.size() != m)
    return ffi::Error::InvalidArgument("one offset and one size per field");
  if (m == 0) return ffi::Error::Success();
  // The fields' own ranks vary, the table's is 2 (rows, words) outside vmap.
  const size_t table_rank = table_buf.dimensions().size();
  if (table_rank < 2) return ffi::Error::InvalidArgument("the table must have rows of words");
  Instances inst;
  {
    auto first = outs.get<ffi::AnyBuffer>(0);
    if (first.has_error()) return first.error();
    if (auto e = LeadingInstances(Deref(*first), table_rank - 2, &inst); e.failure()) return e;
  }
  PerInstance indices, table;
  if (auto e = indices.Init(indices_buf, inst, "indices"); e.failure()) return e;
  if (auto e = table.Init(table_buf, inst, "table"); e.failure()) return e;
  if (indices.type != ffi::DataType::S32)
    return ffi::Error::InvalidArgument("indices must be int32");
  if (table.dims[0] < 1)
    return ffi::Error::InvalidArgument("the table needs a leading dimension of at least 1");
  const int64_t rows = table.dims[0];
  const int64_t row_bytes = table.bytes / rows;
  const int64_t batch = indices.elements;
  std::vector<PerInstance> dst(m);
  for (size_t j = 0; j < m; ++j) {
    if (auto e = GetPerInstance(outs, j, inst, "a field", &dst[j]); e.failure()) return e;
    if (offsets[j] < 0 || sizes[j] < 0 || offsets[j] + sizes[j] > row_bytes)
      return ffi::Error::InvalidArgument("field " + std::to_string(j) + " lies outside the row");
    if (dst[j].bytes != sizes[j] * batch)
      return ffi::Error::InvalidArgument("field " + std::to_string(j) + " has the wrong size");
  }
  if (inst.count == 0) return ffi::Error::Success();
  AdviseHugePages(table.at(0), static_cast<size_t>(table.bytes * inst.count));
  std::vector<char*> to_field(m);
  for (int64_t b = 0; b < inst.count; ++b) {
    const char* src = table.at(b);
    const int32_t* idx = reinterpret_cast<const int32_t*>(indices.at(b));
    for (size_t j = 0; j < m; ++j) to_field[j] = dst[j].at(b);
    GatherRows(src, rows, row_bytes, idx, batch, to_field, offsets, sizes);
  }
  return ffi::Error::Success();
}

// --------------------------------------------------------------------------- packed handle

// The per-call path of hrl.replay.handle (ReplayHandle): the buffer's state in three arrays
// (the transition rows; both trees' levels packed one after another into one 32-bit word
// array; the scalars insert_pos, size, max_priority's bits, added as uint32[4]) and every step
// in custom calls, so that the only XLA ops left are the two pow()s (XLA's own, which the
// reference uses; libm's powf gives the same bits only under XLA's flush-to-zero mode, which
// the direct entry point below sets) and XLA:CPU runs the whole program inline on
// the calling thread (a program under its cost model's 1000-flop threshold is "cheap": no
// hand-off to the thread pool even with async dispatch). Arithmetic is the reference's, op
// for op (buffer.py, formats.py); no vmap: one instance per call.
constexpr int kScalarInsertPos = 0, kScalarSize = 1, kScalarMaxPriority = 2;

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t FloatToBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// One tree inside the packed word array: level l starts at offset[l] and has rows[l] rows.
ffi::Error PackedLevels(uint32_t* base, int64_t total_words, ffi::Span<const int64_t> rows,
                        int64_t fanout, int64_t first_word, std::vector<Level>* out,
                        std::vector<void*>* ptrs, int64_t* words_used) {
  out->clear();
  ptrs->clear();
  int64_t at = first_word;
  for (size_t l = 0; l < rows.size(); ++l) {
    const int64_t n = l == 0 ? 1 : rows[l] * fanout;
    if (rows[l] < 1 || at + n > total_words)
      return ffi::Error::InvalidArgument("packed tree levels do not fit the tree array");
    out->push_back({base + at, l == 0 ? 1 : rows[l]});
    ptrs->push_back(base + at);
    at += n;
  }
  *words_used = at - first_word;
  return ffi::Error::Success();
}

ffi::Error CheckFlat(const ffi::AnyBuffer& b, ffi::DataType dt, int64_t n, const char* what) {
  if (b.element_type() != dt || b.dimensions().size() != 1 ||
      (n >= 0 && b.element_count() != static_cast<size_t>(n)))
    return ffi::Error::InvalidArgument(std::string(what) + ": wrong dtype or shape");
  return ffi::Error::Success();
}

// raw = |td| + eps; pre = raw if finite else max_priority (then stored = pre ** alpha in XLA).
ffi::Error HandlePrepImpl(ffi::AnyBuffer td_buf, ffi::AnyBuffer scalars_buf,
                          ffi::Result<ffi::AnyBuffer> raw_buf, ffi::Result<ffi::AnyBuffer> pre_buf,
                          float eps) {
  const int64_t n = static_cast<int64_t>(td_buf.element_count());
  if (auto e = CheckFlat(td_buf, ffi::DataType::F32, -1, "td errors"); e.failure()) return e;
  if (auto e = CheckFlat(scalars_buf, ffi::DataType::U32, 4, "scalars"); e.failure()) return e;
  if (auto e = CheckFlat(*raw_buf, ffi::DataType::F32, n, "raw"); e.failure()) return e;
  if (auto e = CheckFlat(*pre_buf, ffi::DataType::F32, n, "pre"); e.failure()) return e;
  const float* td = static_cast<const float*>(td_buf.untyped_data());
  const float max_priority =
      BitsToFloat(static_cast<const uint32_t*>(scalars_buf.untyped_data())[kScalarMaxPriority]);
  float* raw = static_cast<float*>(raw_buf->untyped_data());
  float* pre = static_cast<float*>(pre_buf->untyped_data());
  for (int64_t i = 0; i < n; ++i) {
    raw[i] = std::fabs(td[i]) + eps;
    pre[i] = std::isfinite(raw[i]) ? raw[i] : max_priority;
  }
  return ffi::Error::Success();
}

// formats.FixedPoint.encode / Float32.encode of one priority (already raised to alpha).
template <typename Fmt>
inline typename Fmt::Word Encode(float p, float scale, uint32_t max_word) {
  if constexpr (std::is_same_v<Fmt, Float32Format>) {
    (void)scale;
    (void)max_word;
    return p < 0.0f ? 0.0f : p;
  } else {
    const float scaled = std::nearbyint(p * scale);
    const float top = static_cast<float>(max_word);
    float q = scaled > 0.0f ? scaled : 0.0f;  // jnp.clip: maximum, then minimum
    if (scaled != scaled) q = scaled;
    q = (q < top || q != q) ? q : top;
    uint32_t word = q >= 0x1p32f ? max_word : static_cast<uint32_t>(q);
    word = word < max_word ? word : max_word;
    const bool normal = p >= 0x1p-126f;
    return (normal && word == 0) ? 1u : word;
  }
}

template <typename Fmt>
inline float Decode(typename Fmt::Word w, float scale) {
  if constexpr (std::is_same_v<Fmt, Float32Format>) {
    (void)scale;
    return w;
  } else {
    return static_cast<float>(w) * scale;
  }
}

// The step's static layout: the packed trees' shape and the priority format's constants.
struct StepLayout {
  int64_t fanout, capacity;
  ffi::Span<const int64_t> level_rows;
  bool has_min, stratified;
  float encode_scale;
  int64_t max_word;
  float leaf_scale, root_scale;
};

// The transition rows (only prefetched by the step): rows = 0 for none.
struct TableView {
  const char* base;
  int64_t rows, row_bytes;
};

// HandleStepImpl on plain pointers (scalars and trees updated in place), shared by the XLA
// custom call and the direct entry point hrl_direct_step below.
template <typename Fmt>
ffi::Error HandleStepCore(const StepLayout& lay, const int32_t* idx, const float* raw,
                          const float* stored, int64_t u, const uint32_t* key, uint32_t* scalars,
                          uint32_t* trees, int64_t total, TableView rows, int32_t* result,
                          float* probs, float* ratio, int64_t b) {
  using Word = typename Fmt::Word;
  const int64_t fanout = lay.fanout, capacity = lay.capacity;
  std::vector<Level> sum_lv, min_lv;
  std::vector<void*> sum_ptr, min_ptr;
  int64_t sum_words = 0, min_words = 0;
  if (auto e = PackedLevels(trees, total, lay.level_rows, fanout, 0, &sum_lv, &sum_ptr, &sum_words);
      e.failure())
    return e;
  if (lay.has_min) {
    if (auto e = PackedLevels(trees, total, lay.level_rows, fanout, sum_words, &min_lv, &min_ptr,
                              &min_words);
        e.failure())
      return e;
  }
  const int32_t size = static_cast<int32_t>(scalars[kScalarSize]);
  if (u > 0) {
    AdviseHugePages(sum_ptr.back(), sizeof(Word) * sum_lv.back().rows * fanout);
    float max_priority = BitsToFloat(scalars[kScalarMaxPriority]);
    std::vector<int32_t> kept(u);
    std::vector<Word> words(u);
    for (int64_t i = 0; i < u; ++i) {
      const bool valid = idx[i] >= 0 && idx[i] < size;
      kept[i] = valid ? idx[i] : -1;
      if (valid && std::isfinite(raw[i]) && raw[i] > max_priority) max_priority = raw[i];
      words[i] = Encode<Fmt>(stored[i], lay.encode_scale, static_cast<uint32_t>(lay.max_word));
    }
    scalars[kScalarMaxPriority] = FloatToBits(max_priority);
    if (auto e = UpdateTree<Fmt>(sum_lv, sum_ptr, kept.data(), words.data(), u, fanout, capacity);
        e.failure())
      return e;
    if (lay.has_min) {
      if (auto e = UpdateTree<MinFloat32Format>(min_lv, min_ptr, kept.data(), stored, u, fanout,
                                                capacity);
          e.failure())
        return e;
    }
  }
  if (b == 0) return ffi::Error::Success();
  std::vector<uint32_t> bits(b), frac(b);
  ThreefryBits(key[0], key[1], b, bits.data());
  Fractions(bits.data(), b, lay.stratified, frac.data());
  const int32_t last = size > 1 ? size - 1 : 0;
  RowPrefetch prefetch;
  if (rows.rows > 0) {
    prefetch.base = rows.base;
    prefetch.row_bytes = rows.row_bytes;
    prefetch.last = last < rows.rows - 1 ? last : rows.rows - 1;
  }
  switch (fanout) {
    case 2: Descend<Fmt, 2>(sum_lv, frac.data(), b, result, prefetch); break;
    case 4: Descend<Fmt, 4>(sum_lv, frac.data(), b, result, prefetch); break;
    case 8: Descend<Fmt, 8>(sum_lv, frac.data(), b, result, prefetch); break;
    case 16: Descend<Fmt, 16>(sum_lv, frac.data(), b, result, prefetch); break;
    case 32: Descend<Fmt, 32>(sum_lv, frac.data(), b, result, prefetch); break;
    case 64: Descend<Fmt, 64>(sum_lv, frac.data(), b, result, prefetch); break;
  }
  // buffer.importance_weights up to the pow: one reciprocal, then products.
  const Word* leaves = static_cast<const Word*>(sum_lv.back().data);
  const float total_p =
      Decode<Fmt>(*static_cast<const Word*>(sum_lv[0].data), lay.root_scale);
  const float inv_total = 1.0f / (total_p > 1e-30f || total_p != total_p ? total_p : 1e-30f);
  float p_min = 0.0f;
  for (int64_t i = 0; i < b; ++i) {
    const int32_t idx = result[i] < last ? result[i] : last;
    result[i] = idx;
    probs[i] = Decode<Fmt>(leaves[idx], lay.leaf_scale) * inv_total;
  }
  if (lay.has_min) {
    p_min = *static_cast<const float*>(min_lv[0].data) * inv_total;
  } else {  // jnp.min (NaN propagates)
    p_min = probs[0];
    for (int64_t i = 1; i < b; ++i)
      p_min = (probs[i] != probs[i] || p_min != p_min) ? probs[i] + p_min
                                                      : (probs[i] < p_min ? probs[i] : p_min);
  }
  for (int64_t i = 0; i < b; ++i) {
    const float p = probs[i];
    ratio[i] = p_min / (p > 1e-30f || p != p ? p : 1e-30f);
  }
  return ffi::Error::Success();
}

// The update of the previous batch (upd_* of length U, U = 0: none) and then the sample of
// the next (B = length of the results, B = 0: none), on the packed state, in place:
// PrioritizedReplay.update's bookkeeping and both trees, then .sample's descent, leaf reads
// and IS-weight arithmetic up to the ratio P_min / P_i (XLA raises it to beta).
template <typename Fmt>
ffi::Error HandleStepImpl(ffi::AnyBuffer idx_buf, ffi::AnyBuffer raw_buf, ffi::AnyBuffer stored_buf,
                          ffi::AnyBuffer key_buf, ffi::AnyBuffer scalars_in, ffi::AnyBuffer trees_in,
                          ffi::AnyBuffer rows_buf, ffi::Result<ffi::AnyBuffer> scalars_out,
                          ffi::Result<ffi::AnyBuffer> trees_out,
                          ffi::Result<ffi::AnyBuffer> out_idx_buf,
                          ffi::Result<ffi::AnyBuffer> probs_buf,
                          ffi::Result<ffi::AnyBuffer> ratio_buf, int64_t fanout, int64_t capacity,
                          ffi::Span<const int64_t> level_rows, bool has_min, bool stratified,
                          float encode_scale, int64_t max_word, float leaf_scale,
                          float root_scale) {
  if (auto e = CheckFanout(fanout); e.failure()) return e;
  const int64_t u = static_cast<int64_t>(idx_buf.element_count());
  const int64_t b = static_cast<int64_t>(out_idx_buf->element_count());
  if (auto e = CheckFlat(idx_buf, ffi::DataType::S32, u, "update indices"); e.failure()) return e;
  if (auto e = CheckFlat(raw_buf, ffi::DataType::F32, u, "raw"); e.failure()) return e;
  if (auto e = CheckFlat(stored_buf, ffi::DataType::F32, u, "stored"); e.failure()) return e;
  if (auto e = CheckFlat(key_buf, ffi::DataType::U32, 2, "key"); e.failure()) return e;
  if (auto e = CheckFlat(scalars_in, ffi::DataType::U32, 4, "scalars"); e.failure()) return e;
  if (auto e = CheckFlat(*scalars_out, ffi::DataType::U32, 4, "scalars"); e.failure()) return e;
  const int64_t total = static_cast<int64_t>(trees_in.element_count());
  if (auto e = CheckFlat(trees_in, ffi::DataType::U32, -1, "trees"); e.failure()) return e;
  if (auto e = CheckFlat(*trees_out, ffi::DataType::U32, total, "trees"); e.failure()) return e;
  if (auto e = CheckFlat(*probs_buf, ffi::DataType::F32, b, "probabilities"); e.failure()) return e;
  if (auto e = CheckFlat(*ratio_buf, ffi::DataType::F32, b, "ratios"); e.failure()) return e;
  if (out_idx_buf->element_type() != ffi::DataType::S32)
    return ffi::Error::InvalidArgument("sampled indices must be int32");
  uint32_t* trees = static_cast<uint32_t*>(trees_out->untyped_data());
  if (trees_in.untyped_data() != trees)
    std::memcpy(trees, trees_in.untyped_data(), sizeof(uint32_t) * total);
  uint32_t* scalars = static_cast<uint32_t*>(scalars_out->untyped_data());
  if (scalars_in.untyped_data() != scalars)
    std::memcpy(scalars, scalars_in.untyped_data(), sizeof(uint32_t) * 4);
  StepLayout layout{fanout, capacity, level_rows, has_min, stratified, encode_scale, max_word,
                    leaf_scale, root_scale};
  const bool table = rows_buf.dimensions().size() == 2;
  TableView rows{static_cast<const char*>(rows_buf.untyped_data()),
                 table ? static_cast<int64_t>(rows_buf.dimensions()[0]) : 0,
                 table ? static_cast<int64_t>(ffi::ByteWidth(rows_buf.element_type())) *
                             static_cast<int64_t>(rows_buf.dimensions()[1])
                       : 0};
  return HandleStepCore<Fmt>(
      layout, static_cast<const int32_t*>(idx_buf.untyped_data()),
      static_cast<const float*>(raw_buf.untyped_data()),
      static_cast<const float*>(stored_buf.untyped_data()), u,
      static_cast<const uint32_t*>(key_buf.untyped_data()), scalars, trees, total, rows,
      static_cast<int32_t*>(out_idx_buf->untyped_data()),
      static_cast<float*>(probs_buf->untyped_data()),
      static_cast<float*>(ratio_buf->untyped_data()), b);
}

// The IS weights' last step (where(size > 0 & P > 0, min(w, 1), 0)) and the sampled rows'
// fields (see GatherFieldsImpl), on plain pointers.
void HandleFinishCore(const float* w, const float* probs, int32_t size, const int32_t* idx,
                      int64_t b, float* weights, TableView table, const std::vector<char*>& dst,
                      ffi::Span<const int64_t> offsets, ffi::Span<const int64_t> sizes) {
  for (int64_t i = 0; i < b; ++i) {
    const float capped = (w[i] < 1.0f || w[i] != w[i]) ? w[i] : 1.0f;  // jnp.minimum
    weights[i] = (size > 0 && probs[i] > 0.0f) ? capped : 0.0f;
  }
  if (dst.empty() || b == 0) return;
  AdviseHugePages(table.base, static_cast<size_t>(table.rows * table.row_bytes));
  GatherRows(table.base, table.rows, table.row_bytes, idx, b, dst, offsets, sizes);
}

// The IS weights' last step (where(size > 0 & P > 0, min(w, 1), 0)) and the sampled rows'
// fields (see GatherFieldsImpl).
ffi::Error HandleFinishImpl(ffi::AnyBuffer w_buf, ffi::AnyBuffer probs_buf,
                            ffi::AnyBuffer scalars_buf, ffi::AnyBuffer idx_buf,
                            ffi::AnyBuffer table_buf, ffi::Result<ffi::AnyBuffer> weights_buf,
                            ffi::RemainingRets outs, ffi::Span<const int64_t> offsets,
                            ffi::Span<const int64_t> sizes) {
  const int64_t b = static_cast<int64_t>(idx_buf.element_count());
  if (auto e = CheckFlat(w_buf, ffi::DataType::F32, b, "pow"); e.failure()) return e;
  if (auto e = CheckFlat(probs_buf, ffi::DataType::F32, b, "probabilities"); e.failure()) return e;
  if (auto e = CheckFlat(scalars_buf, ffi::DataType::U32, 4, "scalars"); e.failure()) return e;
  if (auto e = CheckFlat(idx_buf, ffi::DataType::S32, b, "indices"); e.failure()) return e;
  if (auto e = CheckFlat(*weights_buf, ffi::DataType::F32, b, "weights"); e.failure()) return e;
  const size_t m = outs.size();
  if (offsets.size() != m || sizes.size() != m)
    return ffi::Error::InvalidArgument("one offset and one size per field");
  if (table_buf.dimensions().size() != 2 || table_buf.dimensions()[0] < 1)
    return ffi::Error::InvalidArgument("the table must be 2-D with at least one row");
  const int32_t size = static_cast<int32_t>(
      static_cast<const uint32_t*>(scalars_buf.untyped_data())[kScalarSize]);
  const int64_t rows = table_buf.dimensions()[0];
  const int64_t row_bytes = static_cast<int64_t>(ffi::ByteWidth(table_buf.element_type())) *
                            table_buf.dimensions()[1];
  std::vector<char*> dst(m);
  for (size_t j = 0; j < m; ++j) {
    auto maybe = outs.get<ffi::AnyBuffer>(j);
    if (maybe.has_error()) return maybe.error();
    ffi::AnyBuffer field = Deref(*maybe);
    if (offsets[j] < 0 || sizes[j] < 0 || offsets[j] + sizes[j] > row_bytes)
      return ffi::Error::InvalidArgument("field " + std::to_string(j) + " lies outside the row");
    if (static_cast<int64_t>(field.size_bytes()) != sizes[j] * b)
      return ffi::Error::InvalidArgument("field " + std::to_string(j) + " has the wrong size");
    dst[j] = static_cast<char*>(field.untyped_data());
  }
  HandleFinishCore(static_cast<const float*>(w_buf.untyped_data()),
                   static_cast<const float*>(probs_buf.untyped_data()), size,
                   static_cast<const int32_t*>(idx_buf.untyped_data()), b,
                   static_cast<float*>(weights_buf->untyped_data()),
                   TableView{static_cast<const char*>(table_buf.untyped_data()), rows, row_bytes},
                   dst, offsets, sizes);
  return ffi::Error::Success();
}

// ---------------------------------------------------------------------- direct entry point

// ReplayHandle's direct path (hrl/replay/host_native/packed.py): one update_and_sample (or sample, update, or an add's tree
// writes) on NumPy arrays, called through ctypes, without XLA. Everything XLA computes
// between the custom calls of the jitted path is done here too: prep (|td| + eps, NaN ->
// max_priority), the two pow()s, with libm's powf, which XLA:CPU's pow calls (the handle
// checks at run time that they agree before it takes this path, else it stays on XLA).
// Mirrored by ctypes in host_native/packed.py (_Plan): keep the field order.
struct HrlDirectPlan {
  int64_t fixed_point;  // 0: Float32 sum tree, 1: FixedPoint
  int64_t fanout, capacity, n_levels;
  const int64_t* level_rows;
  int64_t has_min, total_words;
  double encode_scale;  // float32 values, exactly
  int64_t max_word;
  double leaf_scale, root_scale, alpha, eps;
  int64_t table_rows, row_bytes, n_fields;
  const int64_t* offsets;
  const int64_t* sizes;
  // Non-finite TD errors: 0 refuse the update (ReplayHandle raises, naming the entry), 1 give
  // them the largest priority so far, as PrioritizedReplay.update does under jit (a training
  // loop's host replay must keep the jitted buffer's semantics).
  int64_t nonfinite_to_max;
};

template <typename Fmt>
ffi::Error DirectStep(const HrlDirectPlan& plan, uint32_t* scalars, uint32_t* trees,
                      const char* table, const int32_t* upd_idx, const float* td,
                      const float* given_raw, int64_t u, const uint32_t* key, float beta,
                      int64_t b, int32_t* out_idx, float* out_probs, float* out_weights,
                      char* const* field_dst) {
  if (auto e = CheckFanout(plan.fanout); e.failure()) return e;
  const ffi::Span<const int64_t> level_rows(plan.level_rows, plan.n_levels);
  const StepLayout lay{plan.fanout,
                       plan.capacity,
                       level_rows,
                       plan.has_min != 0,
                       true,
                       static_cast<float>(plan.encode_scale),
                       plan.max_word,
                       static_cast<float>(plan.leaf_scale),
                       static_cast<float>(plan.root_scale)};
  if (td != nullptr && plan.nonfinite_to_max == 0) {  // before anything changes: the caller
                                                      // raises, naming the entry
    for (int64_t i = 0; i < u; ++i)
      if (!std::isfinite(td[i]))
        return ffi::Error(ffi::ErrorCode::kOutOfRange, std::to_string(i));
  }
  std::vector<float> raw(u), stored(u);
  const float max_priority = BitsToFloat(scalars[kScalarMaxPriority]);
  const float eps = static_cast<float>(plan.eps), alpha = static_cast<float>(plan.alpha);
  for (int64_t i = 0; i < u; ++i) {  // HandlePrepImpl, then jnp.power(pre, alpha)
    raw[i] = given_raw != nullptr ? given_raw[i] : std::fabs(td[i]) + eps;
    const float pre = std::isfinite(raw[i]) ? raw[i] : max_priority;
    stored[i] = ::powf(pre, alpha);
  }
  const TableView rows{table, plan.table_rows, plan.row_bytes};
  std::vector<float> ratio(b);
  if (auto e = HandleStepCore<Fmt>(lay, upd_idx, raw.data(), stored.data(), u, key, scalars,
                                   trees, plan.total_words, rows, out_idx, out_probs,
                                   ratio.data(), b);
      e.failure())
    return e;
  if (b == 0) return ffi::Error::Success();
  for (int64_t i = 0; i < b; ++i) ratio[i] = ::powf(ratio[i], beta);  // jnp.power(ratio, beta)
  const std::vector<char*> dst(field_dst, field_dst + plan.n_fields);
  HandleFinishCore(ratio.data(), out_probs, static_cast<int32_t>(scalars[kScalarSize]), out_idx,
                   b, out_weights, rows, dst,
                   ffi::Span<const int64_t>(plan.offsets, plan.n_fields),
                   ffi::Span<const int64_t>(plan.sizes, plan.n_fields));
  return ffi::Error::Success();
}

}  // namespace

// XLA:CPU runs its programs, custom calls included, with denormals flushed to zero (inputs
// read as zero, results written as zero: MXCSR's DAZ and FTZ bits); the direct entry points
// run under the same mode so that their float ops, powf included, round as in the program.
namespace {
class ScopedFlushDenormals {
 public:
#if defined(__x86_64__) || defined(__i386__)
  ScopedFlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
  ~ScopedFlushDenormals() { _mm_setcsr(saved_); }

 private:
  unsigned int saved_;
#endif
};
}  // namespace

// 0 on success; 2 if td holds a value that is not finite (err: its index; nothing changed);
// else 1 with the message in err (NUL-terminated, cut to err_len bytes).
// td or given_raw (an add's raw priorities) for the u updates; b = 0: no sample.
extern "C" int hrl_direct_step(const HrlDirectPlan* plan, uint32_t* scalars, uint32_t* trees,
                               const char* table, const int32_t* upd_idx, const float* td,
                               const float* given_raw, int64_t u, const uint32_t* key,
                               float beta, int64_t b, int32_t* out_idx, float* out_probs,
                               float* out_weights, char* const* field_dst, char* err,
                               int64_t err_len) {
  ScopedFlushDenormals flush;
  const ffi::Error e =
      plan->fixed_point
          ? DirectStep<FixedPointFormat>(*plan, scalars, trees, table, upd_idx, td, given_raw, u,
                                         key, beta, b, out_idx, out_probs, out_weights, field_dst)
          : DirectStep<Float32Format>(*plan, scalars, trees, table, upd_idx, td, given_raw, u,
                                      key, beta, b, out_idx, out_probs, out_weights, field_dst);
  if (!e.failure()) return 0;
  if (err_len > 0) {
    std::strncpy(err, e.message().c_str(), static_cast<size_t>(err_len - 1));
    err[err_len - 1] = '\0';
  }
  return e.errc() == ffi::ErrorCode::kOutOfRange ? 2 : 1;
}

// out[i] = powf(x[i], y): the handle's check that libm's powf is XLA:CPU's pow here.
extern "C" void hrl_powf(const float* x, int64_t n, float y, float* out) {
  ScopedFlushDenormals flush;
  for (int64_t i = 0; i < n; ++i) out[i] = ::powf(x[i], y);
}

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

#define HRL_SAMPLE_KEY_BINDING                  \
  ffi::Ffi::Bind()                              \
      .Arg<ffi::AnyBuffer>() /* key words */    \
      .Arg<ffi::AnyBuffer>() /* size */         \
      .Arg<ffi::AnyBuffer>() /* rows to prefetch */ \
      .RemainingArgs()       /* levels */       \
      .Ret<ffi::AnyBuffer>() /* indices */      \
      .Ret<ffi::AnyBuffer>() /* leaf words */   \
      .Attr<int64_t>("fanout")                  \
      .Attr<bool>("stratified")

XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlReplaySampleF32, SampleKeyImpl<Float32Format>,
                              HRL_SAMPLE_KEY_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlReplaySampleU32, SampleKeyImpl<FixedPointFormat>,
                              HRL_SAMPLE_KEY_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlGatherFields, GatherFieldsImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>() /* indices */
                                  .Arg<ffi::AnyBuffer>() /* table of rows */
                                  .RemainingRets()       /* one array per field */
                                  .Attr<ffi::Span<const int64_t>>("offsets")
                                  .Attr<ffi::Span<const int64_t>>("sizes"));

#define HRL_REPLAY_UPDATE_BINDING                      \
  ffi::Ffi::Bind()                                     \
      .Arg<ffi::AnyBuffer>() /* indices */             \
      .Arg<ffi::AnyBuffer>() /* raw priorities */      \
      .Arg<ffi::AnyBuffer>() /* sum-tree words */      \
      .Arg<ffi::AnyBuffer>() /* min-tree values */     \
      .Arg<ffi::AnyBuffer>() /* size */                \
      .Arg<ffi::AnyBuffer>() /* max priority */        \
      .RemainingArgs()       /* sum levels, min levels */ \
      .Ret<ffi::AnyBuffer>() /* new max priority */    \
      .RemainingRets()       /* levels, aliased */     \
      .Attr<int64_t>("fanout")                         \
      .Attr<int64_t>("capacity")                       \
      .Attr<int64_t>("n_sum_levels")

XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlReplayUpdateF32, ReplayUpdateImpl<Float32Format>,
                              HRL_REPLAY_UPDATE_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlReplayUpdateU32, ReplayUpdateImpl<FixedPointFormat>,
                              HRL_REPLAY_UPDATE_BINDING);

XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlHandlePrep, HandlePrepImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>() /* td errors */
                                  .Arg<ffi::AnyBuffer>() /* scalars */
                                  .Ret<ffi::AnyBuffer>() /* raw */
                                  .Ret<ffi::AnyBuffer>() /* pre (before alpha) */
                                  .Attr<float>("eps"));

#define HRL_HANDLE_STEP_BINDING                            \
  ffi::Ffi::Bind()                                         \
      .Arg<ffi::AnyBuffer>() /* update indices */          \
      .Arg<ffi::AnyBuffer>() /* raw priorities */          \
      .Arg<ffi::AnyBuffer>() /* stored (raw ** alpha) */   \
      .Arg<ffi::AnyBuffer>() /* key words */               \
      .Arg<ffi::AnyBuffer>() /* scalars */                 \
      .Arg<ffi::AnyBuffer>() /* packed trees */            \
      .Arg<ffi::AnyBuffer>() /* rows to prefetch */        \
      .Ret<ffi::AnyBuffer>() /* scalars, aliased */        \
      .Ret<ffi::AnyBuffer>() /* packed trees, aliased */   \
      .Ret<ffi::AnyBuffer>() /* sampled indices */         \
      .Ret<ffi::AnyBuffer>() /* probabilities */           \
      .Ret<ffi::AnyBuffer>() /* P_min / P_i */             \
      .Attr<int64_t>("fanout")                             \
      .Attr<int64_t>("capacity")                           \
      .Attr<ffi::Span<const int64_t>>("level_rows")        \
      .Attr<bool>("has_min")                               \
      .Attr<bool>("stratified")                            \
      .Attr<float>("encode_scale")                         \
      .Attr<int64_t>("max_word")                           \
      .Attr<float>("leaf_scale")                           \
      .Attr<float>("root_scale")

XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlHandleStepF32, HandleStepImpl<Float32Format>,
                              HRL_HANDLE_STEP_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlHandleStepU32, HandleStepImpl<FixedPointFormat>,
                              HRL_HANDLE_STEP_BINDING);
XLA_FFI_DEFINE_HANDLER_SYMBOL(HrlHandleFinish, HandleFinishImpl,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>() /* w = ratio ** beta */
                                  .Arg<ffi::AnyBuffer>() /* probabilities */
                                  .Arg<ffi::AnyBuffer>() /* scalars */
                                  .Arg<ffi::AnyBuffer>() /* sampled indices */
                                  .Arg<ffi::AnyBuffer>() /* table of rows */
                                  .Ret<ffi::AnyBuffer>() /* IS weights */
                                  .RemainingRets()       /* one array per field */
                                  .Attr<ffi::Span<const int64_t>>("offsets")
                                  .Attr<ffi::Span<const int64_t>>("sizes"));
