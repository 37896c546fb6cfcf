// libFuzzer target: text edge lists (CSV / whitespace separated, headers, comments, weights).
#include "fuzz_util.h"
#include "volley/graph/io/edge_list.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace volley;
  const std::string path = fuzz::write_input("input.csv", data, size);
  fuzz::run_one([&] { read_edge_list(path); });
  fuzz::run_one([&] { read_edge_list(path, {.has_header = false, .num_nodes = 1000}); });
  return 0;
}
