// libFuzzer target: dataset manifests (volley.json), through the JSON checker and the dataset
// reader (whose .npy files are absent or the bundled tiny ones, so the manifest is what varies).
#include "fuzz_util.h"
#include "volley/graph/dataset.h"
#include "volley/graph/json_checker.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace volley;
  const std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::run_one([&] { JsonChecker("fuzz.json").parse(text); });
  fuzz::write_input("volley.json", data, size);
  fuzz::run_one([&] { load_dataset(fuzz::scratch_dir()); });
  fuzz::run_one([&] { verify_dataset(fuzz::scratch_dir()); });
  return 0;
}
