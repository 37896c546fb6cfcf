#include "volley/feature/cpu/gather_kernel.h"

#include <algorithm>
#include <atomic>
#include <cstring>

#include "volley/core/error.h"
#include "volley/core/half.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define VOLLEY_GATHER_X86 1
#endif

namespace volley::feature_internal {
namespace {

std::atomic<size_t> prefetch_bytes_setting{0};
constexpr size_t kDefaultPrefetchBytes = 4096;
constexpr size_t kMaxRowsAhead = 32;

// Where a row lives: identity (one tier in id order) or a packed lookup of either width.
struct IdentityLocator {
  const std::byte* base;
  size_t row_bytes;
  const std::byte* row(int64_t id) const { return base + static_cast<size_t>(id) * row_bytes; }
  void prefetch_entry(int64_t) const {}
};

template <typename Entry, int kShift>
struct LookupLocator {
  const std::byte* const* bases;
  const Entry* lookup;
  size_t row_bytes;
  const std::byte* row(int64_t id) const {
    const Entry entry = lookup[id];
    constexpr Entry kSlotMask = (Entry{1} << kShift) - 1;
    return bases[entry >> kShift] + static_cast<size_t>(entry & kSlotMask) * row_bytes;
  }
  void prefetch_entry(int64_t id) const { __builtin_prefetch(lookup + id); }
};

inline void prefetch_row(const std::byte* row, size_t row_bytes) {
  const auto first = reinterpret_cast<uintptr_t>(row) & ~uintptr_t{63};
  const auto last = reinterpret_cast<uintptr_t>(row) + row_bytes - 1;
  for (uintptr_t line = first; line <= last; line += 64) {
    __builtin_prefetch(reinterpret_cast<const void*>(line), 0, 2);  // prefetcht1: into L2
  }
}

// Copies one row of `bytes` (a multiple of 16, destination 16-byte aligned) with non-temporal
// stores.
inline void stream_row(std::byte* destination, const std::byte* source, size_t bytes) {
#if VOLLEY_GATHER_X86
  auto* to = reinterpret_cast<__m128i*>(destination);
  const auto* from = reinterpret_cast<const __m128i*>(source);
  const size_t vectors = bytes / 16;
  size_t k = 0;
  for (; k + 4 <= vectors; k += 4) {
    const __m128i a = _mm_loadu_si128(from + k);
    const __m128i b = _mm_loadu_si128(from + k + 1);
    const __m128i c = _mm_loadu_si128(from + k + 2);
    const __m128i d = _mm_loadu_si128(from + k + 3);
    _mm_stream_si128(to + k, a);
    _mm_stream_si128(to + k + 1, b);
    _mm_stream_si128(to + k + 2, c);
    _mm_stream_si128(to + k + 3, d);
  }
  for (; k < vectors; ++k) _mm_stream_si128(to + k, _mm_loadu_si128(from + k));
#else
  std::memcpy(destination, source, bytes);
#endif
}

inline void store_fence() {
#if VOLLEY_GATHER_X86
  _mm_sfence();
#endif
}

// The gather loop: `emit(i, row)` writes output row i from stored row `row`. Rows are located a
// fixed distance ahead (prefetching the lookup entry twice as far) and their lines prefetched.
template <typename Locator, typename Emit>
void gather_loop(const Locator& locator, std::span<const int64_t> ids, size_t row_bytes,
                 Emit emit) {
  const size_t count = ids.size();
  size_t ahead = (prefetch_bytes() + row_bytes - 1) / std::max<size_t>(row_bytes, 1);
  ahead = std::clamp<size_t>(ahead, 1, kMaxRowsAhead);
  const std::byte* ring[kMaxRowsAhead];
  const size_t warm = std::min(ahead, count);
  for (size_t i = 0; i < std::min(2 * ahead, count); ++i) locator.prefetch_entry(ids[i]);
  for (size_t i = 0; i < warm; ++i) {
    ring[i] = locator.row(ids[i]);
    prefetch_row(ring[i], row_bytes);
  }
  size_t slot = 0;
  for (size_t i = 0; i < count; ++i) {
    const std::byte* row = ring[slot];
    if (i + 2 * ahead < count) locator.prefetch_entry(ids[i + 2 * ahead]);
    if (i + ahead < count) {
      const std::byte* next = locator.row(ids[i + ahead]);
      prefetch_row(next, row_bytes);
      ring[slot] = next;
    }
    emit(i, row);
    slot = slot + 1 == ahead ? 0 : slot + 1;
  }
}

// Element conversions. Each converts `width` elements of one row.
template <typename From, typename To>
void convert_row_scalar(To* destination, const std::byte* source, int64_t width) {
  const auto* from = reinterpret_cast<const From*>(source);
  for (int64_t j = 0; j < width; ++j) destination[j] = static_cast<To>(from[j]);
}

void half_row_scalar(float* destination, const std::byte* source, int64_t width) {
  const auto* from = reinterpret_cast<const uint16_t*>(source);
  for (int64_t j = 0; j < width; ++j) destination[j] = half_to_float(from[j]);
}

#if VOLLEY_GATHER_X86
// float16 → float32 with F16C (exact). With `stream`, the destination is 16-byte aligned and
// width % 4 == 0, so every store of the row is a whole 16-byte non-temporal store (mixing
// ordinary and non-temporal stores within a cache line would flush write-combining buffers).
__attribute__((target("avx,f16c"))) void half_row_f16c(float* destination, const std::byte* source,
                                                       int64_t width, bool stream) {
  const auto* from = reinterpret_cast<const uint16_t*>(source);
  int64_t j = 0;
  if (stream) {
    for (; j + 8 <= width; j += 8) {
      const __m256 values =
          _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + j)));
      _mm_stream_ps(destination + j, _mm256_castps256_ps128(values));
      _mm_stream_ps(destination + j + 4, _mm256_extractf128_ps(values, 1));
    }
    for (; j + 4 <= width; j += 4) {
      _mm_stream_ps(destination + j,
                    _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(from + j))));
    }
    return;
  }
  for (; j + 8 <= width; j += 8) {
    const __m128i halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + j));
    _mm256_storeu_ps(destination + j, _mm256_cvtph_ps(halves));
  }
  for (; j < width; ++j) destination[j] = half_to_float(from[j]);
}

// F16C from CPUID leaf 1 (ECX bit 29): clang before 15 has no "f16c" for
// __builtin_cpu_supports.
bool cpu_has_f16c() {
  static const bool has = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & (1u << 29)) != 0 &&
           __builtin_cpu_supports("avx");
  }();
  return has;
}
#endif

// bfloat16 → float32: the 16 bits become the high half of the float (exact). `stream` as above.
void bfloat16_row(float* destination, const std::byte* source, int64_t width, bool stream) {
  const auto* from = reinterpret_cast<const uint16_t*>(source);
  int64_t j = 0;
#if VOLLEY_GATHER_X86
  const __m128i zero = _mm_setzero_si128();
  for (; j + 8 <= width; j += 8) {
    const __m128i values = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + j));
    const __m128 low = _mm_castsi128_ps(_mm_unpacklo_epi16(zero, values));
    const __m128 high = _mm_castsi128_ps(_mm_unpackhi_epi16(zero, values));
    if (stream) {
      _mm_stream_ps(destination + j, low);
      _mm_stream_ps(destination + j + 4, high);
    } else {
      _mm_storeu_ps(destination + j, low);
      _mm_storeu_ps(destination + j + 4, high);
    }
  }
  if (stream) {
    for (; j + 4 <= width; j += 4) {
      const __m128i values = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(from + j));
      _mm_stream_ps(destination + j, _mm_castsi128_ps(_mm_unpacklo_epi16(zero, values)));
    }
    return;
  }
#else
  (void)stream;
#endif
  for (; j < width; ++j) destination[j] = bfloat16_to_float(from[j]);
}

void float_to_half_row(uint16_t* destination, const std::byte* source, int64_t width) {
  const auto* from = reinterpret_cast<const float*>(source);
  for (int64_t j = 0; j < width; ++j) destination[j] = float_to_half(from[j]);
}

void float_to_bfloat16_row(uint16_t* destination, const std::byte* source, int64_t width) {
  const auto* from = reinterpret_cast<const float*>(source);
  for (int64_t j = 0; j < width; ++j) destination[j] = float_to_bfloat16(from[j]);
}

// A row converter: writes output row (`out_row` elements of the output type) from a stored row.
using RowConverter = void (*)(std::byte* destination, const std::byte* source, int64_t width,
                              bool stream);

template <typename From, typename To>
void convert_adapter(std::byte* destination, const std::byte* source, int64_t width, bool) {
  convert_row_scalar<From, To>(reinterpret_cast<To*>(destination), source, width);
}

void half_adapter(std::byte* destination, const std::byte* source, int64_t width, bool stream) {
#if VOLLEY_GATHER_X86
  if (cpu_has_f16c()) {
    half_row_f16c(reinterpret_cast<float*>(destination), source, width, stream);
    return;
  }
#endif
  (void)stream;
  half_row_scalar(reinterpret_cast<float*>(destination), source, width);
}

void bfloat16_adapter(std::byte* destination, const std::byte* source, int64_t width, bool stream) {
  bfloat16_row(reinterpret_cast<float*>(destination), source, width, stream);
}

void to_half_adapter(std::byte* destination, const std::byte* source, int64_t width, bool) {
  float_to_half_row(reinterpret_cast<uint16_t*>(destination), source, width);
}

void to_bfloat16_adapter(std::byte* destination, const std::byte* source, int64_t width, bool) {
  float_to_bfloat16_row(reinterpret_cast<uint16_t*>(destination), source, width);
}

template <typename To>
RowConverter integer_or_float_converter(DType from) {
  switch (from) {
    case DType::kBool:
    case DType::kUInt8:
      return convert_adapter<uint8_t, To>;
    case DType::kInt8:
      return convert_adapter<int8_t, To>;
    case DType::kInt16:
      return convert_adapter<int16_t, To>;
    case DType::kInt32:
      return convert_adapter<int32_t, To>;
    case DType::kInt64:
      return convert_adapter<int64_t, To>;
    case DType::kFloat64:
      return convert_adapter<double, To>;
    default:
      return nullptr;
  }
}

RowConverter converter_for(DType from, DType to) {
  if (to == DType::kFloat32) {
    if (from == DType::kFloat16) return half_adapter;
    if (from == DType::kBFloat16) return bfloat16_adapter;
    return integer_or_float_converter<float>(from);
  }
  if (to == DType::kInt64) return integer_or_float_converter<int64_t>(from);
  if (from == DType::kFloat32 && to == DType::kFloat16) return to_half_adapter;
  if (from == DType::kFloat32 && to == DType::kBFloat16) return to_bfloat16_adapter;
  return nullptr;
}

// Rows of a size known at compile time, copied with cached stores (the copy compiles to one or
// two moves instead of a call per row).
template <size_t kBytes, typename Locator>
void gather_fixed(const Locator& locator, std::span<const int64_t> ids, std::byte* out) {
  gather_loop(locator, ids, kBytes,
              [&](size_t i, const std::byte* row) { std::memcpy(out + i * kBytes, row, kBytes); });
}

template <typename Locator>
void run(const Locator& locator, const RowMap& map, std::span<const int64_t> ids, DType out_dtype,
         std::byte* out, bool stream) {
  const size_t row_bytes = map.row_bytes;
  if (out_dtype == map.dtype) {
    const bool can_stream =
        stream && row_bytes % 16 == 0 && (reinterpret_cast<uintptr_t>(out) & 15) == 0;
    if (can_stream) {
      gather_loop(locator, ids, row_bytes, [&](size_t i, const std::byte* row) {
        stream_row(out + i * row_bytes, row, row_bytes);
      });
      store_fence();
    } else if (row_bytes == 8) {  // int64 labels, float64 scalars: a move, not a memcpy call
      gather_fixed<8>(locator, ids, out);
    } else if (row_bytes == 4) {
      gather_fixed<4>(locator, ids, out);
    } else {
      gather_loop(locator, ids, row_bytes, [&](size_t i, const std::byte* row) {
        std::memcpy(out + i * row_bytes, row, row_bytes);
      });
    }
    return;
  }
  const RowConverter convert = converter_for(map.dtype, out_dtype);
  VOLLEY_ASSERT(convert != nullptr);
  const size_t out_row_bytes = static_cast<size_t>(map.width) * dtype_size(out_dtype);
  const int64_t width = map.width;
  // Non-temporal stores only where every store of every row can be one (see half_row_f16c):
  // the vectorised float16 / bfloat16 → float32 paths, whole 16-byte groups, aligned output.
  const bool vector_path = out_dtype == DType::kFloat32 &&
                           (map.dtype == DType::kFloat16 || map.dtype == DType::kBFloat16);
  stream = stream && vector_path && width % 4 == 0 && (reinterpret_cast<uintptr_t>(out) & 15) == 0;
#if VOLLEY_GATHER_X86
  if (map.dtype == DType::kFloat16 && !cpu_has_f16c()) stream = false;
#else
  stream = false;
#endif
  gather_loop(locator, ids, row_bytes, [&](size_t i, const std::byte* row) {
    convert(out + i * out_row_bytes, row, width, stream);
  });
  if (stream) store_fence();
}

}  // namespace

void set_prefetch_bytes(size_t bytes) { prefetch_bytes_setting.store(bytes); }

size_t prefetch_bytes() {
  const size_t bytes = prefetch_bytes_setting.load(std::memory_order_relaxed);
  return bytes == 0 ? kDefaultPrefetchBytes : bytes;
}

void gather_kernel(const RowMap& map, std::span<const int64_t> ids, DType out_dtype, std::byte* out,
                   StoreMode mode, size_t total_output_bytes) {
  if (ids.empty() || map.row_bytes == 0) return;
  const bool stream = mode == StoreMode::kStreaming ||
                      (mode == StoreMode::kAuto && total_output_bytes >= kStreamingThreshold);
  if (map.lookup == nullptr) {
    run(IdentityLocator{map.bases[0], map.row_bytes}, map, ids, out_dtype, out, stream);
  } else if (map.lookup_is_32bit) {
    run(LookupLocator<uint32_t, kTierShift32>{map.bases, static_cast<const uint32_t*>(map.lookup),
                                              map.row_bytes},
        map, ids, out_dtype, out, stream);
  } else {
    run(LookupLocator<uint64_t, kTierShift64>{map.bases, static_cast<const uint64_t*>(map.lookup),
                                              map.row_bytes},
        map, ids, out_dtype, out, stream);
  }
}

}  // namespace volley::feature_internal
