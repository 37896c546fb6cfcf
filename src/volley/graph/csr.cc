#include "volley/graph/csr.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>

#include "volley/core/parallel.h"

namespace volley {

std::string_view orientation_name(Orientation orientation) {
  return orientation == Orientation::kIn ? "in" : "out";
}

namespace {

constexpr int64_t kGrain = 1 << 16;

// Smallest position in [0, n) where `bad(i)` holds, or -1. Parallel and deterministic.
template <typename Predicate>
int64_t first_position_where(int64_t n, Predicate bad) {
  std::atomic<int64_t> first{std::numeric_limits<int64_t>::max()};
  parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    if (begin >= first.load(std::memory_order_relaxed)) return;
    for (int64_t i = begin; i < end; ++i) {
      if (bad(i)) {
        int64_t current = first.load();
        while (i < current && !first.compare_exchange_weak(current, i)) {
        }
        return;
      }
    }
  });
  const int64_t result = first.load();
  return result == std::numeric_limits<int64_t>::max() ? -1 : result;
}

// Reads element i of an int32 / int64 array as int64.
class IdReader {
 public:
  explicit IdReader(const Array& array)
      : narrow_(array.dtype() == DType::kInt32), data_(array.raw_data()) {}
  int64_t operator[](int64_t i) const {
    return narrow_ ? reinterpret_cast<const int32_t*>(data_)[i]
                   : reinterpret_cast<const int64_t*>(data_)[i];
  }

 private:
  bool narrow_;
  const std::byte* data_;
};

void check_weights(const Array& weights, int64_t expected, const char* what) {
  VOLLEY_REQUIRE(weights.dtype() == DType::kFloat32 && weights.ndim() == 1, ValueError,
                 "{} must be a 1-d float32 array, got {}", what, weights.describe());
  VOLLEY_REQUIRE(weights.numel() == expected, ValueError, "{} has {} entries, expected {}", what,
                 weights.numel(), expected);
  const float* w = weights.data<float>();
  const int64_t bad = first_position_where(
      expected, [&](int64_t i) { return !(std::isfinite(w[i]) && w[i] >= 0.0f); });
  VOLLEY_REQUIRE(bad < 0, ValueError, "{}[{}] = {} must be finite and >= 0", what, bad,
                 bad < 0 ? 0.0f : w[bad]);
}

// The edges to place: entry i (of `count`) goes into row rows[i] with neighbor cols[i], edge id
// eids[i] (or i) and weight weights[i].
struct Entries {
  int64_t count;
  IdReader rows;
  IdReader cols;
  const int64_t* eids;   // nullable: edge id = input position
  const float* weights;  // nullable
  bool also_reversed;    // symmetrize: each entry also placed as (cols[i] -> rows[i])
  bool drop_self_loops;
};

// A graph's rows while they are built: indptr [N + 1], indices, edge ids, weights (optional).
struct Rows {
  std::vector<int64_t> indptr_vec;
  Array indices;
  Array eids;
  std::optional<Array> weights;
};

// 1. Degrees, as the running sums of indptr.
std::vector<int64_t> row_offsets(const Entries& in, int64_t num_nodes) {
  std::vector<int64_t> indptr_vec(static_cast<size_t>(num_nodes) + 1, 0);
  int64_t* degree = indptr_vec.data() + 1;
  parallel_for(0, in.count, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = in.rows[i];
      const int64_t col = in.cols[i];
      if (in.drop_self_loops && row == col) continue;
      std::atomic_ref<int64_t>(degree[row]).fetch_add(1, std::memory_order_relaxed);
      if (in.also_reversed && row != col) {
        std::atomic_ref<int64_t>(degree[col]).fetch_add(1, std::memory_order_relaxed);
      }
    }
  });
  std::partial_sum(indptr_vec.begin(), indptr_vec.end(), indptr_vec.begin());
  return indptr_vec;
}

// 2. Scatter in input order (so ties keep input order).
template <typename Index>
Rows scatter_rows(const Entries& in, std::vector<int64_t> indptr_vec) {
  const int64_t num_entries = indptr_vec.back();
  Array indices = Array::empty(dtype_of<Index>(), {num_entries});
  Array eids = Array::empty(DType::kInt64, {num_entries});
  std::optional<Array> weights;
  if (in.weights) weights = Array::empty(DType::kFloat32, {num_entries});
  Index* out_col = indices.data<Index>();
  int64_t* out_eid = eids.data<int64_t>();
  float* out_w = weights ? weights->data<float>() : nullptr;
  {
    std::vector<int64_t> cursor(indptr_vec.begin(), indptr_vec.end() - 1);
    auto place = [&](int64_t row, int64_t col, int64_t eid, float w) {
      const int64_t k = cursor[row]++;
      out_col[k] = static_cast<Index>(col);
      out_eid[k] = eid;
      if (out_w) out_w[k] = w;
    };
    for (int64_t i = 0; i < in.count; ++i) {
      const int64_t row = in.rows[i];
      const int64_t col = in.cols[i];
      if (in.drop_self_loops && row == col) continue;
      const int64_t eid = in.eids ? in.eids[i] : i;
      const float w = in.weights ? in.weights[i] : 0.0f;
      place(row, col, eid, w);
      if (in.also_reversed && row != col) place(col, row, eid, w);
    }
  }
  return {std::move(indptr_vec), std::move(indices), std::move(eids), std::move(weights)};
}

// Sorts each row by (neighbor, edge id).
template <typename Index>
void sort_rows(Rows& rows, int64_t num_nodes) {
  const int64_t* indptr = rows.indptr_vec.data();
  Index* out_col = rows.indices.data<Index>();
  int64_t* out_eid = rows.eids.data<int64_t>();
  float* out_w = rows.weights ? rows.weights->data<float>() : nullptr;
  parallel_for(0, num_nodes, 4096, [&](int64_t begin, int64_t end) {
    struct Item {
      Index col;
      int64_t eid;
      float w;
    };
    std::vector<Item> items;
    for (int64_t row = begin; row < end; ++row) {
      const int64_t lo = indptr[row], hi = indptr[row + 1];
      bool sorted = true;
      for (int64_t k = lo + 1; k < hi && sorted; ++k) {
        sorted = out_col[k - 1] < out_col[k] ||
                 (out_col[k - 1] == out_col[k] && out_eid[k - 1] <= out_eid[k]);
      }
      if (sorted) continue;
      items.clear();
      for (int64_t k = lo; k < hi; ++k)
        items.push_back({out_col[k], out_eid[k], out_w ? out_w[k] : 0.0f});
      std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
        return a.col < b.col || (a.col == b.col && a.eid < b.eid);
      });
      for (int64_t k = lo; k < hi; ++k) {
        const Item& item = items[static_cast<size_t>(k - lo)];
        out_col[k] = item.col;
        out_eid[k] = item.eid;
        if (out_w) out_w[k] = item.w;
      }
    }
  });
}

// 3. Drop duplicates: keep the first (smallest edge id) of each (row, neighbor).
template <typename Index>
void drop_duplicate_edges(Rows& rows, int64_t num_nodes) {
  const int64_t* indptr = rows.indptr_vec.data();
  const int64_t num_entries = rows.indptr_vec.back();
  const Index* out_col = rows.indices.data<Index>();
  const int64_t* out_eid = rows.eids.data<int64_t>();
  const float* out_w = rows.weights ? rows.weights->data<float>() : nullptr;
  std::vector<int64_t> kept(static_cast<size_t>(num_nodes) + 1, 0);
  parallel_for(0, num_nodes, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      int64_t count = 0;
      for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
        count += (k == indptr[row] || out_col[k] != out_col[k - 1]);
      }
      kept[static_cast<size_t>(row) + 1] = count;
    }
  });
  std::partial_sum(kept.begin(), kept.end(), kept.begin());
  if (kept.back() != num_entries) {
    Array new_indices = Array::empty(dtype_of<Index>(), {kept.back()});
    Array new_eids = Array::empty(DType::kInt64, {kept.back()});
    std::optional<Array> new_weights;
    if (rows.weights) new_weights = Array::empty(DType::kFloat32, {kept.back()});
    Index* col2 = new_indices.data<Index>();
    int64_t* eid2 = new_eids.data<int64_t>();
    float* w2 = new_weights ? new_weights->data<float>() : nullptr;
    parallel_for(0, num_nodes, 4096, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        int64_t out = kept[static_cast<size_t>(row)];
        for (int64_t k = indptr[row]; k < indptr[row + 1]; ++k) {
          if (k != indptr[row] && out_col[k] == out_col[k - 1]) continue;
          col2[out] = out_col[k];
          eid2[out] = out_eid[k];
          if (w2) w2[out] = out_w[k];
          ++out;
        }
      }
    });
    rows.indices = std::move(new_indices);
    rows.eids = std::move(new_eids);
    rows.weights = std::move(new_weights);
    rows.indptr_vec = std::move(kept);
  }
}

template <typename Index>
Csr build_rows(const Entries& in, int64_t num_nodes, const CsrBuildOptions& options) {
  Rows rows = scatter_rows<Index>(in, row_offsets(in, num_nodes));
  sort_rows<Index>(rows, num_nodes);
  if (options.drop_duplicates) drop_duplicate_edges<Index>(rows, num_nodes);
  std::optional<Array> edge_ids;
  if (options.keep_edge_ids) edge_ids = std::move(rows.eids);
  return Csr::from_arrays(Array::from_vector(rows.indptr_vec), std::move(rows.indices),
                          std::move(edge_ids), std::move(rows.weights), options.orientation,
                          /*validate=*/false);
}

Csr build(const Entries& entries, int64_t num_nodes, const CsrBuildOptions& options) {
  const bool narrow = !options.force_int64_indices && num_nodes < (int64_t{1} << 31);
  return narrow ? build_rows<int32_t>(entries, num_nodes, options)
                : build_rows<int64_t>(entries, num_nodes, options);
}

}  // namespace

Csr Csr::from_arrays(Array indptr, Array indices, std::optional<Array> edge_ids,
                     std::optional<Array> weights, Orientation orientation, bool validate) {
  VOLLEY_REQUIRE(indptr.defined() && indptr.dtype() == DType::kInt64 && indptr.ndim() == 1,
                 ValueError, "indptr must be a 1-d int64 array, got {}", indptr.describe());
  VOLLEY_REQUIRE(indptr.numel() >= 1, ValueError,
                 "indptr must have num_nodes + 1 >= 1 entries, got an empty array");
  VOLLEY_REQUIRE(indices.defined() && indices.ndim() == 1 &&
                     (indices.dtype() == DType::kInt32 || indices.dtype() == DType::kInt64),
                 ValueError, "indices must be a 1-d int32 or int64 array, got {}",
                 indices.describe());
  VOLLEY_REQUIRE(indptr.buffer().host_accessible() && indices.buffer().host_accessible(),
                 ValueError, "Csr arrays must be host-accessible (got {} memory)",
                 location_name(indices.buffer().location()));
  Csr csr;
  csr.num_nodes_ = indptr.numel() - 1;
  csr.num_edges_ = indices.numel();
  const int64_t* ptr = indptr.data<int64_t>();
  VOLLEY_REQUIRE(ptr[0] == 0, ValueError, "indptr[0] must be 0, got {}", ptr[0]);
  VOLLEY_REQUIRE(ptr[csr.num_nodes_] == csr.num_edges_, ValueError,
                 "indptr[{}] = {} must equal the number of indices ({})", csr.num_nodes_,
                 ptr[csr.num_nodes_], csr.num_edges_);
  VOLLEY_REQUIRE(indices.dtype() == DType::kInt64 || csr.num_nodes_ <= (int64_t{1} << 31),
                 ValueError, "int32 indices cannot address {} nodes; use int64", csr.num_nodes_);
  if (edge_ids) {
    VOLLEY_REQUIRE(edge_ids->dtype() == DType::kInt64 && edge_ids->ndim() == 1 &&
                       edge_ids->numel() == csr.num_edges_,
                   ValueError, "edge_ids must be int64[{}], got {}", csr.num_edges_,
                   edge_ids->describe());
  }
  if (weights) {
    VOLLEY_REQUIRE(weights->dtype() == DType::kFloat32 && weights->ndim() == 1 &&
                       weights->numel() == csr.num_edges_,
                   ValueError, "weights must be float32[{}], got {}", csr.num_edges_,
                   weights->describe());
  }
  if (validate) {
    const int64_t n = csr.num_nodes_;
    const int64_t bad_ptr = first_position_where(n, [&](int64_t i) { return ptr[i + 1] < ptr[i]; });
    VOLLEY_REQUIRE(bad_ptr < 0, ValueError,
                   "indptr must be non-decreasing: indptr[{}] = {} > indptr[{}] = {}", bad_ptr,
                   bad_ptr < 0 ? 0 : ptr[bad_ptr], bad_ptr + 1, bad_ptr < 0 ? 0 : ptr[bad_ptr + 1]);
    IdReader ids(indices);
    const int64_t bad = first_position_where(csr.num_edges_, [&](int64_t k) {
      const int64_t id = ids[k];
      return id < 0 || id >= n;
    });
    VOLLEY_REQUIRE(bad < 0, IndexError, "indices[{}] = {} out of range for a graph with {} nodes",
                   bad, bad < 0 ? 0 : ids[bad], n);
    if (weights) check_weights(*weights, csr.num_edges_, "weights");
  }
  csr.orientation_ = orientation;
  csr.narrow_ = indices.dtype() == DType::kInt32;
  csr.indptr_data_ = ptr;
  csr.indices_data_ = indices.raw_data();
  csr.edge_ids_data_ = edge_ids ? edge_ids->data<int64_t>() : nullptr;
  csr.indptr_ = std::move(indptr);
  csr.indices_ = std::move(indices);
  csr.edge_ids_ = std::move(edge_ids);
  csr.weights_ = std::move(weights);
  return csr;
}

Csr Csr::transposed() const {
  // New row = old neighbor, new neighbor = old row; edge ids and weights travel along.
  Array rows = Array::empty(DType::kInt64, {num_edges_});
  Array cols = Array::empty(DType::kInt64, {num_edges_});
  Array eids = Array::empty(DType::kInt64, {num_edges_});
  int64_t* r = rows.data<int64_t>();
  int64_t* c = cols.data<int64_t>();
  int64_t* e = eids.data<int64_t>();
  // With edge times the edge ids carry CSR positions through the build, and are mapped to the
  // edges' ids and times after it.
  const bool timed = edge_time_.has_value();
  parallel_for(0, num_nodes_, 4096, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      for (int64_t k = this->begin(row); k < this->end(row); ++k) {
        r[k] = neighbor(k);
        c[k] = row;
        e[k] = timed ? k : edge_id(k);
      }
    }
  });
  Entries entries{
      num_edges_, IdReader(rows), IdReader(cols), e, weights_ ? weights_->data<float>() : nullptr,
      false,      false};
  CsrBuildOptions options;
  options.orientation = orientation_ == Orientation::kIn ? Orientation::kOut : Orientation::kIn;
  options.keep_edge_ids = has_edge_ids() || timed;
  options.force_int64_indices = index_dtype() == DType::kInt64;
  // A bipartite Csr (one edge type of a HeteroGraph) may name neighbors past its rows.
  int64_t largest = -1;
  for (int64_t k = 0; k < num_edges_; ++k) largest = std::max(largest, r[k]);
  Csr out = build(entries, std::max(num_nodes_, largest + 1), options);
  // Node times index this graph's nodes: kept when the transpose has the same node set.
  const std::optional<Array> node_time =
      out.num_nodes() == num_nodes_ ? node_time_ : std::optional<Array>();
  if (!timed) return node_time ? out.with_times(node_time, std::nullopt) : out;
  Array ids = Array::empty(DType::kInt64, {num_edges_});
  Array times = Array::empty(DType::kInt64, {num_edges_});
  const int64_t* position = out.edge_ids()->data<int64_t>();
  const int64_t* old_time = edge_time_->data<int64_t>();
  int64_t* id = ids.data<int64_t>();
  int64_t* time = times.data<int64_t>();
  parallel_for(0, num_edges_, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t j = begin; j < end; ++j) {
      id[j] = edge_id(position[j]);
      time[j] = old_time[position[j]];
    }
  });
  return Csr::from_arrays(out.indptr(), out.indices(), std::move(ids), out.weights(),
                          out.orientation(), /*validate=*/false)
      .with_times(node_time, std::move(times));
}

Csr build_csr(const Array& src, const Array& dst, const std::optional<Array>& weights,
              const CsrBuildOptions& options) {
  for (const Array* ids : {&src, &dst}) {
    VOLLEY_REQUIRE(ids->defined() && ids->ndim() == 1 &&
                       (ids->dtype() == DType::kInt32 || ids->dtype() == DType::kInt64),
                   ValueError, "{} must be a 1-d int32 or int64 array, got {}",
                   ids == &src ? "src" : "dst", ids->describe());
    VOLLEY_REQUIRE(ids->buffer().host_accessible(), ValueError,
                   "build_csr reads host memory; {} lives in {} memory",
                   ids == &src ? "src" : "dst", location_name(ids->buffer().location()));
  }
  VOLLEY_REQUIRE(src.numel() == dst.numel(), ValueError,
                 "src and dst must have the same length, got {} and {}", src.numel(), dst.numel());
  const int64_t num_edges = src.numel();
  if (weights) check_weights(*weights, num_edges, "weights");
  if (options.num_nodes) {
    VOLLEY_REQUIRE(*options.num_nodes >= 0, ValueError, "num_nodes must be >= 0, got {}",
                   *options.num_nodes);
  }
  const IdReader s(src), d(dst);
  for (const auto& entry : {std::pair{&s, "src"}, std::pair{&d, "dst"}}) {
    // (Not a structured binding: clang before 16 cannot capture one in the lambda below.)
    const IdReader* reader = entry.first;
    const char* name = entry.second;
    const int64_t limit = options.num_nodes.value_or(std::numeric_limits<int64_t>::max());
    const int64_t bad = first_position_where(num_edges, [&](int64_t i) {
      const int64_t id = (*reader)[i];
      return id < 0 || id >= limit;
    });
    if (bad >= 0) {
      const int64_t id = (*reader)[bad];
      if (id < 0)
        throw IndexError(
            fmt::format("{}[{}] = {} is negative; node ids must be >= 0", name, bad, id));
      throw IndexError(
          fmt::format("{}[{}] = {} out of range for num_nodes = {}", name, bad, id, limit));
    }
  }
  int64_t num_nodes = 0;
  if (options.num_nodes) {
    num_nodes = *options.num_nodes;
  } else if (num_edges > 0) {
    std::atomic<int64_t> max_id{0};
    parallel_for(0, num_edges, kGrain, [&](int64_t begin, int64_t end) {
      int64_t local = 0;
      for (int64_t i = begin; i < end; ++i) local = std::max({local, s[i], d[i]});
      int64_t current = max_id.load();
      while (local > current && !max_id.compare_exchange_weak(current, local)) {
      }
    });
    num_nodes = max_id.load() + 1;
  }
  const bool in = options.orientation == Orientation::kIn;
  Entries entries{num_edges,
                  in ? d : s,
                  in ? s : d,
                  nullptr,
                  weights ? weights->data<float>() : nullptr,
                  options.symmetrize,
                  options.drop_self_loops};
  return build(entries, num_nodes, options);
}

}  // namespace volley
