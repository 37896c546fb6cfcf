// python/src/module.cc — the `_volley` extension module: one bind_<concept>() per concept.
// python/volley/__init__.py re-exports what users need; `_volley` itself is private.
#include <cstdlib>
#include <string_view>

#include "bindings.h"
#include "volley/core/version.h"

NB_MODULE(_volley, m) {
  m.doc() = "Volley's native core (private: use the `volley` package).";
  m.attr("__version__") = volley::kVersion;
  // nanobind reports the objects still alive when the interpreter exits ("leaked instances").
  // Python does not promise to free everything at exit (a framework may keep a loader until then:
  // Lightning's ddp_spawn children do), so users see no report unless VOLLEY_LEAK_WARNINGS=1
  // asks for it, as a reference-count check while developing the bindings.
  const char* leak_warnings = std::getenv("VOLLEY_LEAK_WARNINGS");
  nanobind::set_leak_warnings(leak_warnings != nullptr && std::string_view(leak_warnings) == "1");
  volley::python::bind_core(m);
  volley::python::bind_graph(m);
  volley::python::bind_dataset(m);
  volley::python::bind_feature(m);
  volley::python::bind_node_state(m);
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
