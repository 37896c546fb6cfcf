// python/src/module.cc — the `_volley` extension module: one bind_<concept>() per concept.
// python/volley/__init__.py re-exports what users need; `_volley` itself is private.
#include "bindings.h"
#include "volley/core/version.h"

NB_MODULE(_volley, m) {
  m.doc() = "Volley's native core (private: use the `volley` package).";
  m.attr("__version__") = volley::kVersion;
  volley::python::bind_core(m);
  volley::python::bind_graph(m);
  volley::python::bind_dataset(m);
  volley::python::bind_feature(m);
  volley::python::bind_sampling(m);
  volley::python::bind_hetero(m);
  volley::python::bind_link(m);
  volley::python::bind_partition(m);
  volley::python::bind_share(m);
  volley::python::bind_cuda(m);
#ifdef VOLLEY_WITH_DIST
  volley::python::bind_dist(m);
  volley::python::bind_dist_hetero(m);
  m.attr("_has_dist") = true;
#else
  m.attr("_has_dist") = false;
#endif
}
