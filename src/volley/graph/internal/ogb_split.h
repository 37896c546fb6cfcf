// volley/graph/internal/ogb_split.h — which split/ folder of an OGB directory an import reads
// (internal; io/ogb.cc defines it for both OGB importers, homogeneous and heterogeneous).
#pragma once

#include <filesystem>
#include <string>

namespace volley::graph_internal {

// The split/ folder to read: `wanted` (IoError naming the folders present when it is not
// there), or the only one present (ValueError when there are several); empty when there is
// none.
std::string choose_ogb_split(const std::filesystem::path& root, const std::string& wanted);

}  // namespace volley::graph_internal
