// volley/partition/internal/format.h — the names of the partitioned dataset directory's files and
// its format markers (format: partition.h), shared by the writer and the reader (internal).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "volley/graph/io/npy.h"

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
inline constexpr int64_t kFormatVersion = 1;

// "part-<p>": part p's directory inside the partitioned dataset directory.
inline std::string part_directory_name(int64_t part) { return fmt::format("part-{}", part); }

inline std::string join_path(const std::string& a, const std::string& b) {
  return (std::filesystem::path(a) / b).string();
}

// The CRC-32 partition.json records for a part's manifest files.
inline uint32_t text_crc(const std::string& text) { return crc32_of(text.data(), text.size()); }

}  // namespace volley::internal::partition_format
