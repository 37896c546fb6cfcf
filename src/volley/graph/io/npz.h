// volley/graph/io/npz.h — numpy .npz archives (a zip of .npy members) and graphs stored in them.
//
//   NpzFile npz = NpzFile::open("cora.npz");      // maps the file, reads the zip directory
//   for (const std::string& name : npz.names()) ...  // "adj_data", "labels", ...
//   Array labels = npz.read("labels");             // or npz.read("labels.npy")
//
//   NpzGraph cora = read_npz_graph("cora.npz");    // edges + features + labels
//
// Members may be stored (np.savez) or deflated (np.savez_compressed). Zip64 archives (members or
// archives over 4 GiB), encrypted members and other compression methods are rejected with an
// IoError saying so; the zip64 extras numpy puts in local headers (force_zip64) are fine, since
// sizes and offsets come from the central directory. Every member's CRC-32 is checked when it is
// read. Members whose dtype Volley has no use for (numpy's fixed-width unicode '<U7', objects) are
// listed, and header_fields() describes them, but read() refuses them.
//
// Thread safety: a NpzFile is immutable after open(); read() may be called from many threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "volley/core/array.h"
#include "volley/core/buffer.h"
#include "volley/graph/io/edge_list.h"
#include "volley/graph/io/npy.h"

namespace volley {

// One member of the archive, as its zip directory entry describes it.
struct NpzMember {
  std::string file_name;  // as stored, e.g. "labels.npy"
  std::string name;       // file_name without ".npy": the array name numpy uses
  bool deflated = false;  // compression method 8; otherwise stored (method 0)
  uint64_t compressed_size = 0;
  uint64_t size = 0;  // uncompressed bytes of the .npy image
  uint32_t crc32 = 0;
  uint64_t data_offset = 0;  // where the (compressed) bytes start in the archive
};

class NpzFile {
 public:
  // Maps `path` and reads its zip directory. Throws IoError when the file cannot be read, is not
  // a zip archive, is truncated, or uses zip64 / encryption / another compression method.
  static NpzFile open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<NpzMember>& members() const { return members_; }
  // Array names (member names without ".npy"), in archive order.
  std::vector<std::string> names() const;
  // Whether a member is named `name` or `name` + ".npy".
  bool contains(const std::string& name) const;

  // Reads a member as an array. A stored member whose data is aligned is a zero-copy view of the
  // mapped archive; others are inflated or copied into heap memory. Throws IoError for a missing
  // member (listing the members), a CRC mismatch, or a bad .npy image (see npy.h).
  Array read(const std::string& name) const;
  // The member's .npy header dict without reading (or inflating) all of its data; stores the
  // offset of its data within the member's .npy image in `*data_offset` when not null.
  NpyHeaderFields header_fields(const std::string& name, size_t* data_offset = nullptr) const;

 private:
  const NpzMember& member(const std::string& name) const;
  static constexpr uint64_t kWholeMember = ~uint64_t{0};
  // The member's uncompressed bytes: all of them, size and CRC checked (limit == kWholeMember),
  // or the first `limit` (fewer when the member is shorter), unchecked.
  Buffer member_bytes(const NpzMember& member, uint64_t limit) const;

  std::string path_;
  Buffer file_;
  std::vector<NpzMember> members_;
};

// A graph read from an .npz, before it is turned into a Csr.
struct NpzGraph {
  EdgeList edges;                    // edge i goes from edges.src[i] to edges.dst[i]
  std::optional<int64_t> num_nodes;  // when the archive states it (a sparse matrix's shape)
  std::optional<Array> features;     // float32 [N, D]
  std::optional<Array> labels;       // int64 [N]
};

// Reads a graph from an .npz in one of these layouts (the first that matches):
//   * a scipy CSR adjacency, as in shchur/gnn-benchmark (Cora, CiteSeer): adj_data, adj_indices,
//     adj_indptr, adj_shape (or the "adj_matrix." prefix). Entry (i, j) is the edge i -> j; its
//     value becomes the edge weight unless every value is 1. Optional attr_* (same layout): node
//     features, densified to float32 [N, D]. Optional labels: integers [N].
//   * edge_index: int [2, E] or [E, 2] (PyG's layout), or src and dst: int [E] each. Optional
//     dense features ("features" or "x", [N, D], cast to float32) and labels ("labels" or "y").
// Other members (node_names, class_names, ...) are ignored. Throws IoError naming the archive and
// member for a missing or inconsistent member (lengths, shapes, ids out of range).
NpzGraph read_npz_graph(const std::string& path);

}  // namespace volley
