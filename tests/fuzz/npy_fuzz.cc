// libFuzzer target: .npy images, parsed in memory and read from a file (mapped and copied).
#include "fuzz_util.h"
#include "volley/graph/io/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace volley;
  fuzz::run_one([&] { parse_npy(reinterpret_cast<const std::byte*>(data), size, "fuzz.npy"); });
  const std::string path = fuzz::write_input("input.npy", data, size);
  fuzz::run_one([&] { read_npy(path, /*memory_map=*/true); });
  fuzz::run_one([&] { read_npy(path, /*memory_map=*/false); });
  return 0;
}
