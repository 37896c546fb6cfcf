#include "volley/graph/io/npz.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "volley/core/files.h"

namespace volley {
namespace {

constexpr uint32_t kEndOfDirectorySignature = 0x06054b50;
constexpr uint32_t kZip64LocatorSignature = 0x07064b50;
constexpr uint32_t kDirectoryEntrySignature = 0x02014b50;
constexpr uint32_t kLocalHeaderSignature = 0x04034b50;
constexpr size_t kEndOfDirectoryBytes = 22;
constexpr size_t kDirectoryEntryBytes = 46;
constexpr size_t kLocalHeaderBytes = 30;
constexpr uint16_t kMethodStored = 0;
constexpr uint16_t kMethodDeflated = 8;

uint16_t le16(const std::byte* p) {
  return static_cast<uint16_t>(static_cast<uint16_t>(p[0]) | (static_cast<uint16_t>(p[1]) << 8));
}

uint32_t le32(const std::byte* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// A member name fit for a message: printable ASCII kept, other bytes as \xNN.
std::string printable(const std::string& name) {
  std::string text;
  for (const char c : name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte < 0x7f) {
      text.push_back(c);
    } else {
      text += fmt::format("\\x{:02x}", byte);
    }
  }
  return text;
}

std::string strip_npy(const std::string& name) {
  return name.ends_with(".npy") ? name.substr(0, name.size() - 4) : name;
}

[[noreturn]] void zip64_unsupported(const std::string& path) {
  throw IoError(fmt::format(
      "{}: zip64 archive (a member or the archive is over 4 GiB): not supported; save the "
      "arrays as separate .npy files instead",
      path));
}

// Inflates the raw deflate stream `in` into `out`. With `to_the_end` the stream must fill `out`
// and end exactly there; otherwise at most its first `out_size` bytes are wanted, and the count
// inflated is returned (fewer when the stream is short or corrupt further on).
uint64_t inflate_raw(const std::byte* in, uint64_t in_size, std::byte* out, uint64_t out_size,
                     bool to_the_end, const std::string& source) {
  constexpr uint64_t kStep = uint64_t{1} << 30;  // zlib counts in 32-bit uInt
  z_stream stream{};
  VOLLEY_REQUIRE(inflateInit2(&stream, -MAX_WBITS) == Z_OK, RuntimeError,
                 "{}: zlib inflateInit2 failed", source);
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in));
  stream.next_out = reinterpret_cast<Bytef*>(out);
  Bytef spare;  // room for one byte too many: a stream longer than declared is corrupt
  uint64_t in_left = in_size;
  uint64_t out_left = out_size;
  bool too_long = false;
  int status = Z_OK;
  while (status == Z_OK && !too_long && (out_left > 0 || to_the_end)) {
    const auto in_chunk = static_cast<uInt>(std::min(in_left, kStep));
    const auto out_chunk = static_cast<uInt>(out_left > 0 ? std::min(out_left, kStep) : 1);
    if (out_left == 0) stream.next_out = &spare;
    stream.avail_in = in_chunk;
    stream.avail_out = out_chunk;
    status = inflate(&stream, Z_NO_FLUSH);
    in_left -= in_chunk - stream.avail_in;
    const uInt produced = out_chunk - stream.avail_out;
    if (out_left == 0 && produced > 0) too_long = true;
    out_left -= out_left == 0 ? 0 : produced;
    // Z_BUF_ERROR means "no progress in this call": go on while input remains; without input,
    // the stream was cut short.
    if (status == Z_BUF_ERROR && in_left > 0) status = Z_OK;
  }
  const std::string message = stream.msg != nullptr ? stream.msg : "";
  inflateEnd(&stream);
  if (too_long) {
    throw IoError(fmt::format("{}: deflated data: expected {} bytes, found more (corrupt archive)",
                              source, out_size));
  }
  if (!to_the_end) return out_size - out_left;
  if (out_left > 0 || status != Z_STREAM_END) {
    throw IoError(
        fmt::format("{}: deflated data: expected {} bytes, found {} ({})", source, out_size,
                    out_size - out_left,
                    status == Z_DATA_ERROR ? "corrupt data: " + message : "the stream ends early"));
  }
  return out_size;
}

// Where the central directory is, from the end-of-central-directory record (checked).
struct CentralDirectory {
  size_t offset = 0;
  size_t end = 0;
  uint16_t entries = 0;
};

CentralDirectory find_central_directory(const std::string& path, const std::byte* base,
                                        size_t size) {
  // The end-of-central-directory record: 22 bytes plus a comment of up to 64 KiB, at the end.
  if (size < kEndOfDirectoryBytes) {
    throw IoError(
        fmt::format("{}: expected a zip archive (.npz), found a file of {} bytes", path, size));
  }
  size_t end_record = std::string::npos;
  const size_t lowest =
      size - kEndOfDirectoryBytes > 65535 ? size - kEndOfDirectoryBytes - 65535 : 0;
  for (size_t at = size - kEndOfDirectoryBytes + 1; at-- > lowest;) {
    if (le32(base + at) == kEndOfDirectorySignature) {
      end_record = at;
      break;
    }
  }
  if (end_record == std::string::npos) {
    throw IoError(fmt::format(
        "{}: expected a zip archive (.npz), found no end-of-central-directory record (not a zip "
        "file, or truncated)",
        path));
  }
  if (end_record >= 20 && le32(base + end_record - 20) == kZip64LocatorSignature) {
    zip64_unsupported(path);
  }
  const std::byte* record = base + end_record;
  const uint16_t disk = le16(record + 4);
  const uint16_t directory_disk = le16(record + 6);
  const uint16_t entries = le16(record + 10);
  const uint32_t directory_size = le32(record + 12);
  const uint32_t directory_offset = le32(record + 16);
  if (entries == 0xffff || directory_size == 0xffffffff || directory_offset == 0xffffffff) {
    zip64_unsupported(path);
  }
  if (disk != 0 || directory_disk != 0) {
    throw IoError(fmt::format("{}: multi-disk zip archives are not supported", path));
  }
  if (static_cast<uint64_t>(directory_offset) + directory_size > end_record) {
    throw IoError(fmt::format(
        "{}: central directory: expected {} bytes at offset {}, found the archive ends its "
        "directory at {} (truncated or corrupt)",
        path, directory_size, directory_offset, end_record));
  }

  return {directory_offset, static_cast<size_t>(directory_offset) + directory_size, entries};
}

// Reads central directory entry `index` at `at` (checked, with its local header) into
// `members` (directory entries are skipped); returns where the next entry starts.
size_t read_directory_entry(const std::string& path, const std::byte* base, size_t size, size_t at,
                            size_t directory_end, uint16_t index, std::vector<NpzMember>& members) {
  if (at + kDirectoryEntryBytes > directory_end || le32(base + at) != kDirectoryEntrySignature) {
    throw IoError(fmt::format(
        "{}: central directory entry {}: expected signature 0x02014b50 at offset {}, found "
        "something else (corrupt archive)",
        path, index, at));
  }
  const std::byte* entry = base + at;
  const uint16_t flags = le16(entry + 8);
  const uint16_t method = le16(entry + 10);
  const uint32_t crc = le32(entry + 16);
  const uint32_t compressed_size = le32(entry + 20);
  const uint32_t uncompressed_size = le32(entry + 24);
  const uint16_t name_length = le16(entry + 28);
  const uint16_t extra_length = le16(entry + 30);
  const uint16_t comment_length = le16(entry + 32);
  const uint32_t local_offset = le32(entry + 42);
  const size_t entry_end = at + kDirectoryEntryBytes + name_length + extra_length + comment_length;
  if (entry_end > directory_end) {
    throw IoError(
        fmt::format("{}: central directory entry {}: runs past the directory's end", path, index));
  }
  NpzMember member;
  member.file_name.assign(reinterpret_cast<const char*>(entry + kDirectoryEntryBytes), name_length);
  member.name = strip_npy(member.file_name);
  if (compressed_size == 0xffffffff || uncompressed_size == 0xffffffff ||
      local_offset == 0xffffffff) {
    zip64_unsupported(path);
  }
  if (member.file_name.ends_with("/")) return entry_end;  // a directory entry
  const std::string source = fmt::format("{}:{}", path, printable(member.file_name));
  if ((flags & 0x1) != 0) {
    throw IoError(fmt::format("{}: encrypted zip members are not supported", source));
  }
  if (method != kMethodStored && method != kMethodDeflated) {
    throw IoError(fmt::format(
        "{}: compression method: expected 0 (stored) or 8 (deflated), found {}", source, method));
  }
  if (method == kMethodStored && compressed_size != uncompressed_size) {
    throw IoError(fmt::format(
        "{}: size: expected a stored member's compressed size ({}) to equal its size, found {}",
        source, compressed_size, uncompressed_size));
  }
  if (static_cast<size_t>(local_offset) + kLocalHeaderBytes > size ||
      le32(base + local_offset) != kLocalHeaderSignature) {
    throw IoError(fmt::format(
        "{}: local header: expected signature 0x04034b50 at offset {}, found something else "
        "(corrupt or truncated archive)",
        source, local_offset));
  }
  const std::byte* local = base + local_offset;
  member.deflated = method == kMethodDeflated;
  member.compressed_size = compressed_size;
  member.size = uncompressed_size;
  member.crc32 = crc;
  member.data_offset =
      static_cast<uint64_t>(local_offset) + kLocalHeaderBytes + le16(local + 26) + le16(local + 28);
  if (member.data_offset + member.compressed_size > size) {
    throw IoError(
        fmt::format("{}: data: expected {} bytes at offset {}, found {} (truncated archive)",
                    source, member.compressed_size, member.data_offset,
                    size > member.data_offset ? size - member.data_offset : 0));
  }
  members.push_back(std::move(member));
  return entry_end;
}

}  // namespace

NpzFile NpzFile::open(const std::string& path) {
  NpzFile npz;
  npz.path_ = path;
  require_regular_file(path, ".npz archive");
  npz.file_ = Buffer::map_file(path);
  const std::byte* base = npz.file_.data();
  const size_t size = npz.file_.size();
  const CentralDirectory directory = find_central_directory(path, base, size);
  size_t at = directory.offset;
  for (uint16_t index = 0; index < directory.entries; ++index) {
    at = read_directory_entry(path, base, size, at, directory.end, index, npz.members_);
  }
  return npz;
}

std::vector<std::string> NpzFile::names() const {
  std::vector<std::string> names;
  names.reserve(members_.size());
  for (const auto& member : members_) names.push_back(member.name);
  return names;
}

bool NpzFile::contains(const std::string& name) const {
  return std::any_of(members_.begin(), members_.end(), [&](const NpzMember& member) {
    return member.file_name == name || member.name == name;
  });
}

const NpzMember& NpzFile::member(const std::string& name) const {
  for (const auto& member : members_) {
    if (member.file_name == name) return member;
  }
  for (const auto& member : members_) {
    if (member.name == name) return member;
  }
  throw IoError(
      fmt::format("{}: member '{}': expected one of the archive's members ({}), found "
                  "none by that name",
                  path_, printable(name), printable(fmt::format("{}", fmt::join(names(), ", ")))));
}

Buffer NpzFile::member_bytes(const NpzMember& member, uint64_t limit) const {
  const std::string source = fmt::format("{}:{}", path_, printable(member.file_name));
  // Reading to the end (limit == npos) checks the size and CRC; a prefix is read for a header.
  const bool whole = limit == kWholeMember;
  const uint64_t wanted = whole ? member.size : std::min(limit, member.size);
  Buffer bytes;
  if (!member.deflated) {
    bytes = file_.slice(member.data_offset, wanted);
  } else {
    bytes = Buffer::allocate(wanted);
    const uint64_t inflated = inflate_raw(file_.data() + member.data_offset, member.compressed_size,
                                          bytes.data(), bytes.size(),
                                          /*to_the_end=*/whole, source);
    bytes = bytes.slice(0, inflated);
  }
  if (whole) {
    const uint32_t crc = crc32_of(bytes.data(), bytes.size());
    if (crc != member.crc32) {
      throw IoError(fmt::format("{}: crc32: expected {:08x}, found {:08x} (corrupt archive)",
                                source, member.crc32, crc));
    }
  }
  return bytes;
}

Array NpzFile::read(const std::string& name) const {
  const NpzMember& entry = member(name);
  const std::string source = fmt::format("{}:{}", path_, printable(entry.file_name));
  Buffer bytes = member_bytes(entry, kWholeMember);
  const NpyHeader header = parse_npy_header(bytes.data(), bytes.size(), source);
  const size_t needed = npy_data_bytes(header, source);
  const size_t available = bytes.size() - header.data_offset;
  if (available != needed) {
    throw IoError(fmt::format("{}: data: expected {} bytes for {} [{}], found {}{}", source, needed,
                              dtype_name(header.dtype), fmt::join(header.shape, ", "), available,
                              available < needed ? " (truncated)" : ""));
  }
  Buffer data = bytes.slice(header.data_offset, needed);
  if (reinterpret_cast<uintptr_t>(data.data()) % dtype_size(header.dtype) != 0) {
    Buffer copy = Buffer::allocate(needed);
    std::memcpy(copy.data(), data.data(), needed);
    data = std::move(copy);
  }
  return Array(std::move(data), header.dtype, header.shape);
}

NpyHeaderFields NpzFile::header_fields(const std::string& name, size_t* data_offset) const {
  const NpzMember& entry = member(name);
  // numpy's headers are a few hundred bytes; 64 KiB covers any version 1.0 header.
  const Buffer bytes = member_bytes(entry, 65536 + 12);
  return parse_npy_header_fields(bytes.data(), bytes.size(), data_offset,
                                 fmt::format("{}:{}", path_, printable(entry.file_name)));
}

// --- graphs ---------------------------------------------------------------------------------

namespace {

// Reads `name` and checks that it is a 1-d integer array; returns it as int64.
Array read_ids(const NpzFile& npz, const std::string& name) {
  const Array array = npz.read(name);
  if (!is_integer(array.dtype()) || array.ndim() != 1) {
    throw IoError(fmt::format("{}:{}: expected a 1-d integer array, found {}", npz.path(), name,
                              array.describe()));
  }
  return array.dtype() == DType::kInt64 ? array : array.cast(DType::kInt64);
}

// A scipy.sparse CSR matrix stored as PREFIX{data,indices,indptr,shape}.
struct SparseMatrix {
  int64_t rows = 0;
  int64_t cols = 0;
  Array indptr;   // int64 [rows + 1]
  Array indices;  // int64 [nnz]
  Array values;   // float32 [nnz]
};

SparseMatrix read_sparse(const NpzFile& npz, const std::string& prefix) {
  const std::string& path = npz.path();
  SparseMatrix matrix;
  const Array shape = read_ids(npz, prefix + "shape");
  if (shape.numel() != 2) {
    throw IoError(
        fmt::format("{}:{}shape: expected 2 entries, found {}", path, prefix, shape.numel()));
  }
  matrix.rows = shape.data<int64_t>()[0];
  matrix.cols = shape.data<int64_t>()[1];
  if (matrix.rows < 0 || matrix.cols < 0) {
    throw IoError(fmt::format("{}:{}shape: expected non-negative sizes, found ({}, {})", path,
                              prefix, matrix.rows, matrix.cols));
  }
  matrix.indptr = read_ids(npz, prefix + "indptr");
  matrix.indices = read_ids(npz, prefix + "indices");
  const Array values = npz.read(prefix + "data");
  if (values.ndim() != 1 || values.dtype() == DType::kBool) {
    throw IoError(fmt::format("{}:{}data: expected a 1-d numeric array, found {}", path, prefix,
                              values.describe()));
  }
  matrix.values = values.dtype() == DType::kFloat32 ? values : values.cast(DType::kFloat32);

  const int64_t nnz = matrix.indices.numel();
  if (matrix.indptr.numel() != matrix.rows + 1) {
    throw IoError(fmt::format("{}:{}indptr: expected {} entries (rows + 1), found {}", path, prefix,
                              matrix.rows + 1, matrix.indptr.numel()));
  }
  if (matrix.values.numel() != nnz) {
    throw IoError(fmt::format("{}:{}data: expected {} entries (as {}indices), found {}", path,
                              prefix, nnz, prefix, matrix.values.numel()));
  }
  const int64_t* indptr = matrix.indptr.data<int64_t>();
  if (indptr[0] != 0 || indptr[matrix.rows] != nnz) {
    throw IoError(fmt::format("{}:{}indptr: expected to run from 0 to {}, found {} to {}", path,
                              prefix, nnz, indptr[0], indptr[matrix.rows]));
  }
  for (int64_t row = 0; row < matrix.rows; ++row) {
    if (indptr[row + 1] < indptr[row]) {
      throw IoError(
          fmt::format("{}:{}indptr: expected non-decreasing values, found [{}] = {} > "
                      "[{}] = {}",
                      path, prefix, row, indptr[row], row + 1, indptr[row + 1]));
    }
  }
  const int64_t* indices = matrix.indices.data<int64_t>();
  for (int64_t k = 0; k < nnz; ++k) {
    if (indices[k] < 0 || indices[k] >= matrix.cols) {
      throw IoError(fmt::format("{}:{}indices: [{}] = {} out of range for {} columns", path, prefix,
                                k, indices[k], matrix.cols));
    }
  }
  return matrix;
}

// The prefix of a sparse matrix named `stem` ("adj_" or "adj_matrix."), or "" when absent.
std::string sparse_prefix(const NpzFile& npz, const std::string& stem) {
  for (const std::string& prefix : {stem + "_", stem + "_matrix."}) {
    if (npz.contains(prefix + "indptr")) return prefix;
  }
  return "";
}

Array as_float32_features(const NpzFile& npz, const std::string& name) {
  const Array array = npz.read(name);
  if (array.ndim() != 2 || array.dtype() == DType::kBool) {
    throw IoError(fmt::format("{}:{}: expected a numeric [N, D] feature matrix, found {}",
                              npz.path(), name, array.describe()));
  }
  return array.dtype() == DType::kFloat32 ? array : array.cast(DType::kFloat32);
}

void read_node_data(const NpzFile& npz, NpzGraph& graph) {
  const std::string& path = npz.path();
  if (const std::string attr = sparse_prefix(npz, "attr"); !attr.empty()) {
    const SparseMatrix matrix = read_sparse(npz, attr);
    Array dense = Array::zeros(DType::kFloat32, {matrix.rows, matrix.cols});
    float* out = dense.data<float>();
    const int64_t* indptr = matrix.indptr.data<int64_t>();
    const int64_t* indices = matrix.indices.data<int64_t>();
    const float* values = matrix.values.data<float>();
    for (int64_t row = 0; row < matrix.rows; ++row) {
      for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
        out[row * matrix.cols + indices[k]] += values[k];  // duplicates sum, as in scipy
      }
    }
    graph.features = std::move(dense);
  } else {
    for (const char* name : {"features", "x", "attr_matrix"}) {
      if (npz.contains(name)) {
        graph.features = as_float32_features(npz, name);
        break;
      }
    }
  }
  for (const char* name : {"labels", "y"}) {
    if (npz.contains(name)) {
      graph.labels = read_ids(npz, name);
      break;
    }
  }
  // Every node array must agree on the node count.
  auto agree = [&](const char* what, int64_t rows) {
    if (!graph.num_nodes.has_value()) {
      graph.num_nodes = rows;
    } else if (rows != *graph.num_nodes) {
      throw IoError(fmt::format("{}: {}: expected {} rows (one per node), found {}", path, what,
                                *graph.num_nodes, rows));
    }
  };
  if (graph.features.has_value()) agree("features", graph.features->dim(0));
  if (graph.labels.has_value()) agree("labels", graph.labels->numel());
}

}  // namespace

NpzGraph read_npz_graph(const std::string& path) {
  const NpzFile npz = NpzFile::open(path);
  NpzGraph graph;
  if (const std::string adj = sparse_prefix(npz, "adj"); !adj.empty()) {
    const SparseMatrix matrix = read_sparse(npz, adj);
    if (matrix.rows != matrix.cols) {
      throw IoError(fmt::format("{}:{}shape: expected a square adjacency matrix, found ({}, {})",
                                path, adj, matrix.rows, matrix.cols));
    }
    graph.num_nodes = matrix.rows;
    const int64_t nnz = matrix.indices.numel();
    Array src = Array::empty(DType::kInt64, {nnz});
    int64_t* rows = src.data<int64_t>();
    const int64_t* indptr = matrix.indptr.data<int64_t>();
    for (int64_t row = 0; row < matrix.rows; ++row) {
      std::fill(rows + indptr[row], rows + indptr[row + 1], row);
    }
    graph.edges.src = std::move(src);
    graph.edges.dst = matrix.indices;
    const float* values = matrix.values.data<float>();
    const bool unweighted = std::all_of(values, values + nnz, [](float v) { return v == 1.0f; });
    if (!unweighted) graph.edges.weights = matrix.values;
  } else if (npz.contains("edge_index")) {
    graph.edges = edge_list_from_array(npz.read("edge_index"), path + ":edge_index.npy");
  } else if (npz.contains("src") && npz.contains("dst")) {
    graph.edges.src = read_ids(npz, "src");
    graph.edges.dst = read_ids(npz, "dst");
    if (graph.edges.src.numel() != graph.edges.dst.numel()) {
      throw IoError(fmt::format("{}: dst: expected {} entries (as src), found {}", path,
                                graph.edges.src.numel(), graph.edges.dst.numel()));
    }
  } else {
    throw IoError(fmt::format(
        "{}: expected a graph (adj_indptr/adj_indices/adj_data/adj_shape, edge_index, or src and "
        "dst), found members {}",
        path, printable(fmt::format("{}", fmt::join(npz.names(), ", ")))));
  }
  read_node_data(npz, graph);
  const int64_t n = graph.num_nodes.value_or(std::numeric_limits<int64_t>::max());
  const int64_t* src = graph.edges.src.data<int64_t>();
  const int64_t* dst = graph.edges.dst.data<int64_t>();
  for (int64_t i = 0; i < graph.edges.num_edges(); ++i) {
    if (src[i] < 0 || dst[i] < 0) {
      throw IoError(
          fmt::format("{}: edge {} ({} -> {}) has a negative node id", path, i, src[i], dst[i]));
    }
    if (src[i] >= n || dst[i] >= n) {
      throw IoError(fmt::format("{}: edge {} ({} -> {}) out of range for a graph with {} nodes",
                                path, i, src[i], dst[i], n));
    }
  }
  return graph;
}

}  // namespace volley
