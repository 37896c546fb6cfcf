// libFuzzer target: .npz archives: the zip directory, every member's header and data, and the
// graph layouts read_npz_graph knows.
#include "fuzz_util.h"
#include "volley/graph/io/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace volley;
  const std::string path = fuzz::write_input("input.npz", data, size);
  fuzz::run_one([&] {
    const NpzFile npz = NpzFile::open(path);
    for (const NpzMember& member : npz.members()) {
      fuzz::run_one([&] { npz.header_fields(member.file_name); });
      fuzz::run_one([&] { npz.read(member.name); });
    }
  });
  fuzz::run_one([&] { read_npz_graph(path); });
  return 0;
}
