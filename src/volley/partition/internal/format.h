// volley/partition/internal/format.h — the names of the partitioned dataset directory's files and
// its format markers (format: partition.h), shared by the writers and the readers of both kinds
// (internal), and what both writers compute alike (renumbering, array entries of a manifest).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "volley/core/dtype.h"
#include "volley/core/error.h"
#include "volley/core/files.h"
#include "volley/graph/io/npy.h"
#include "volley/partition/partition_book.h"

namespace volley::internal::partition_format {

inline constexpr char kManifestFile[] = "partition.json";
inline constexpr char kPartFile[] = "part.json";
inline constexpr char kDatasetManifestFile[] = "volley.json";
inline constexpr char kNodeMapFile[] = "node_map.npy";
inline constexpr char kNodeTimeFile[] = "node_time.npy";
inline constexpr char kCacheIdsFile[] = "cache_ids.npy";
inline constexpr char kCacheFeaturesFile[] = "cache_features.npy";
inline constexpr char kFormatName[] = "volley-partitioned-dataset";
inline constexpr char kPartFormatName[] = "volley-partition";
inline constexpr int64_t kFormatVersion = 1;       // homogeneous (partition.h)
inline constexpr int64_t kTypedFormatVersion = 2;  // heterogeneous (hetero_partition.h)

// A node type's node map at the directory's root: "<type>.node_map.npy", or node_map.npy for the
// one unnamed node type of version 1.
inline std::string node_map_file(std::string_view node_type) {
  return node_type.empty() ? std::string(kNodeMapFile) : fmt::format("{}.node_map.npy", node_type);
}

// "part-<p>": part p's directory inside the partitioned dataset directory.
inline std::string part_directory_name(int64_t part) { return fmt::format("part-{}", part); }

inline std::string join_path(const std::string& a, const std::string& b) {
  return (std::filesystem::path(a) / b).string();
}

// The CRC-32 partition.json records for a part's manifest files.
inline uint32_t text_crc(const std::string& text) { return crc32_of(text.data(), text.size()); }

// A part's manifest file (`path`), checked against the CRC partition.json records for it;
// returns its text. IoError naming the file and both CRCs when they differ.
inline std::string read_recorded(const std::string& path, uint32_t expected,
                                 const std::string& what) {
  const std::string text = read_file_text(path, what);
  const uint32_t found = text_crc(text);
  if (found != expected) {
    throw IoError(fmt::format(
        "{}: crc32: expected {:08x} (as {} says), found {:08x}: the partition directory does "
        "not belong to this partitioned dataset (or was modified)",
        path, expected, kManifestFile, found));
  }
  return text;
}

// Renumbering of `n` nodes assigned to parts by `part_of`: part p's nodes, in old-id order, get
// book.offsets()[p], + 1, ...
inline std::vector<int64_t> renumber(const PartitionBook& book, const int32_t* part_of, int64_t n) {
  std::vector<int64_t> new_id(static_cast<size_t>(n));
  std::vector<int64_t> next(book.offsets().begin(), book.offsets().end() - 1);
  for (int64_t v = 0; v < n; ++v) {
    new_id[static_cast<size_t>(v)] = next[static_cast<size_t>(part_of[v])]++;
  }
  return new_id;
}

// A manifest's entry for one .npy file: its name, dtype, shape and CRC-32.
inline nlohmann::ordered_json array_json(const std::string& file, DType dtype,
                                         const std::vector<int64_t>& shape, uint32_t crc) {
  return {
      {"file", file}, {"dtype", dtype_name(dtype)}, {"shape", shape}, {"crc32", crc32_hex(crc)}};
}

}  // namespace volley::internal::partition_format
