// Layering probe (must not compile): dist reaches into sampling's private cpu/ folder (what
// dist/client.cc once did; it now uses volley/sampling/subgraph_builder.h).
#include "volley/sampling/cpu/neighbor_kernel.h"
