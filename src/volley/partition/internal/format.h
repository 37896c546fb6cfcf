// volley/partition/internal/format.h — the names of the partitioned dataset directory's files and
// its format markers (format: partition.h), shared by the writer and the reader (internal).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "volley/core/error.h"
#include "volley/core/files.h"
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

}  // namespace volley::internal::partition_format
