// python/src/bind_node_state.cc — NodeTable and NodeState, writable per-node rows, and the
// whole-graph aggregation that fills them
// (python/volley/node_store.py wraps one per node type and name as volley.NodeStore).
//
// Ids and values are borrowed zero-copy (int64 ids, float32 values / gradients [n, D]); pulled
// rows come back as new arrays. Every pull, push and step runs without the GIL.
#include <string>
#include <tuple>

#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include "bindings.h"
#include "volley/core/buffer.h"
#include "volley/feature/aggregate.h"
#include "volley/feature/node_state.h"

namespace volley::python {
namespace {

// float32 rows [ids, dim] (or [ids] when dim is 1) over `values`, zero-copy.
Array float_rows(const InputArray& values, const Array& ids, int64_t dim, std::string_view what) {
  Array array = array_from_python(values, what);
  VOLLEY_REQUIRE(array.dtype() == DType::kFloat32, ValueError, "{} must be float32, got {}", what,
                 array.describe());
  VOLLEY_REQUIRE(array.buffer().host_accessible(), ValueError, "{} must be in host memory", what);
  const bool shaped = (array.ndim() == 2 && array.dim(0) == ids.numel() && array.dim(1) == dim) ||
                      (array.ndim() == 1 && dim == 1 && array.dim(0) == ids.numel());
  VOLLEY_REQUIRE(shaped, ValueError, "{} {} do not fit {} ids of dim {} (need [{}, {}])", what,
                 array.describe(), ids.numel(), dim, ids.numel(), dim);
  return array;
}

WriteOp write_op(const std::string& name) {
  if (name == "assign") return WriteOp::kAssign;
  if (name == "add") return WriteOp::kAdd;
  throw ValueError(fmt::format("op must be 'assign' or 'add', got '{}'", name));
}

OptimizerKind optimizer_kind(const std::string& name) {
  if (name == "adagrad") return OptimizerKind::kAdagrad;
  if (name == "adam") return OptimizerKind::kAdam;
  throw ValueError(fmt::format("optimizer must be 'adagrad' or 'adam', got '{}'", name));
}

std::span<const int64_t> id_span(const Array& ids) { return ids.span<int64_t>(); }
std::span<const float> float_span(const Array& values) { return values.span<float>(); }

// NodeTable: what every table has (NodeState here, RemoteNodeState in bind_dist_node_state.cc).
void bind_table(nb::module_& m) {
  nb::class_<NodeTable>(m, "NodeTable")
      .def_prop_ro("rows", &NodeTable::rows)
      .def_prop_ro("dim", &NodeTable::dim)
      .def_prop_ro("dtype", [](const NodeTable& s) { return std::string(dtype_name(s.dtype())); })
      .def_prop_ro("state_slots", &NodeTable::state_slots)
      .def_prop_ro("steps",
                   [](const NodeTable& s) {
                     nb::gil_scoped_release release;
                     return s.steps();
                   })
      .def(
          "pull",
          [](const NodeTable& s, const InputArray& ids, const std::string& dtype) {
            const Array id_array = host_ids_array(ids, "ids");
            const DType out_dtype = dtype_from_name(dtype);
            Array out = Array::empty(out_dtype, {id_array.numel(), s.dim()});
            {
              nb::gil_scoped_release release;
              s.pull(id_span(id_array), out_dtype, out.raw_data());
            }
            return array_to_python(out);
          },
          nb::arg("ids"), nb::arg("dtype") = "float32")
      .def(
          "push",
          [](NodeTable& s, const InputArray& ids, const InputArray& values, const std::string& op) {
            const Array id_array = host_ids_array(ids, "ids");
            const Array rows = float_rows(values, id_array, s.dim(), "values");
            const WriteOp kind = write_op(op);
            nb::gil_scoped_release release;
            s.push(id_span(id_array), float_span(rows), kind);
          },
          nb::arg("ids"), nb::arg("values"), nb::arg("op") = "assign")
      .def(
          "step",
          [](NodeTable& s, const InputArray& ids, const InputArray& grads,
             const std::string& optimizer, float lr, float eps, float beta1, float beta2) {
            const Array id_array = host_ids_array(ids, "ids");
            const Array rows = float_rows(grads, id_array, s.dim(), "gradients");
            const OptimizerStep options{.kind = optimizer_kind(optimizer),
                                        .lr = lr,
                                        .eps = eps,
                                        .beta1 = beta1,
                                        .beta2 = beta2};
            nb::gil_scoped_release release;
            return s.step(id_span(id_array), float_span(rows), options);
          },
          nb::arg("ids"), nb::arg("grads"), nb::arg("optimizer"), nb::arg("lr"), nb::arg("eps"),
          nb::arg("beta1") = 0.9f, nb::arg("beta2") = 0.999f)
      .def(
          "snapshot",
          [](const NodeTable& s, int64_t begin, int64_t end) {
            NodeStateSnapshot snapshot;
            {
              nb::gil_scoped_release release;
              snapshot = s.snapshot(begin, end);
            }
            return nb::make_tuple(array_to_python(snapshot.values), array_to_python(snapshot.state),
                                  snapshot.steps);
          },
          nb::arg("begin") = 0, nb::arg("end") = -1)
      .def(
          "restore",
          [](NodeTable& s, const InputArray& values, const InputArray& state, int64_t steps,
             int64_t first_row) {
            NodeStateSnapshot snapshot{array_from_python(values, "values").clone(),
                                       array_from_python(state, "state").clone(), steps};
            nb::gil_scoped_release release;
            s.restore(snapshot, first_row);
          },
          nb::arg("values"), nb::arg("state"), nb::arg("steps"), nb::arg("first_row") = 0);
}

}  // namespace

Init node_init_kind(const std::string& name) {
  if (name == "zeros") return Init::kZeros;
  if (name == "normal") return Init::kNormal;
  if (name == "uniform") return Init::kUniform;
  throw ValueError(fmt::format("init must be 'zeros', 'normal' or 'uniform', got '{}'", name));
}

void bind_node_state(nb::module_& m) {
  bind_table(m);
  m.def(
      "aggregate",
      [](const Csr& graph, const InputArray& x, const std::string& op, bool weighted,
         bool self_loops) {
        const Array rows = array_from_python(x, "x");
        const AggregateOptions options{
            .op = aggregation_from_name(op), .weighted = weighted, .self_loops = self_loops};
        Array out;
        {
          nb::gil_scoped_release release;
          out = aggregate(graph, rows, options);
        }
        return array_to_python(out);
      },
      nb::arg("graph"), nb::arg("x"), nb::arg("op") = "mean", nb::arg("weighted") = false,
      nb::arg("self_loops") = true,
      "Every node's row from its neighbors' rows of x (volley/feature/aggregate.h).");
  nb::class_<NodeState, NodeTable>(m, "NodeState")
      .def_static(
          "create",
          [](int64_t rows, int64_t dim, const std::string& dtype, int state_slots, bool shared) {
            return NodeState::create({.rows = rows,
                                      .dim = dim,
                                      .dtype = dtype_from_name(dtype),
                                      .state_slots = state_slots,
                                      .shared = shared});
          },
          nb::arg("rows"), nb::arg("dim"), nb::arg("dtype") = "float32", nb::arg("state_slots") = 0,
          nb::arg("shared") = false)
      .def_static(
          "attach",
          [](const std::string& handle) {
            return NodeState::attach(Buffer::attach_shared(handle));
          },
          nb::arg("handle"))
      .def_prop_ro("nbytes", [](const NodeState& s) { return s.buffer().size(); })
      .def_prop_ro("handle", [](const NodeState& s) { return s.buffer().shared_name(); })
      .def(
          "initialize",
          [](NodeState& s, const std::string& init, double scale, uint64_t seed) {
            const Init kind = node_init_kind(init);
            nb::gil_scoped_release release;
            s.initialize(kind, scale, seed);
          },
          nb::arg("init"), nb::arg("scale"), nb::arg("seed"));
}

}  // namespace volley::python
