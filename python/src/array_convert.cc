// python/src/array_convert.cc — zero-copy volley::Array <-> Python array conversion.
#include <memory>
#include <string>
#include <vector>

#include "bindings.h"
#include "volley/core/cuda_device.h"

namespace volley::python {

namespace {

namespace dlpack = nb::dlpack;

dlpack::dtype to_dlpack(DType dtype) {
  const auto bits = static_cast<uint8_t>(dtype_size(dtype) * 8);
  switch (dtype) {
    case DType::kBool:
      return {static_cast<uint8_t>(dlpack::dtype_code::Bool), 8, 1};
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return {static_cast<uint8_t>(dlpack::dtype_code::Int), bits, 1};
    case DType::kUInt8:
      return {static_cast<uint8_t>(dlpack::dtype_code::UInt), 8, 1};
    case DType::kFloat16:
    case DType::kFloat32:
    case DType::kFloat64:
      return {static_cast<uint8_t>(dlpack::dtype_code::Float), bits, 1};
    case DType::kBFloat16:
      return {static_cast<uint8_t>(dlpack::dtype_code::Bfloat), 16, 1};
  }
  VOLLEY_ASSERT(false);
  return {};
}

std::optional<DType> from_dlpack(dlpack::dtype dtype) {
  if (dtype.lanes != 1) return std::nullopt;
  const auto code = static_cast<dlpack::dtype_code>(dtype.code);
  switch (code) {
    case dlpack::dtype_code::Bool:
      if (dtype.bits == 8) return DType::kBool;
      break;
    case dlpack::dtype_code::Int:
      if (dtype.bits == 8) return DType::kInt8;
      if (dtype.bits == 16) return DType::kInt16;
      if (dtype.bits == 32) return DType::kInt32;
      if (dtype.bits == 64) return DType::kInt64;
      break;
    case dlpack::dtype_code::UInt:
      if (dtype.bits == 8) return DType::kUInt8;
      break;
    case dlpack::dtype_code::Float:
      if (dtype.bits == 16) return DType::kFloat16;
      if (dtype.bits == 32) return DType::kFloat32;
      if (dtype.bits == 64) return DType::kFloat64;
      break;
    case dlpack::dtype_code::Bfloat:
      if (dtype.bits == 16) return DType::kBFloat16;
      break;
    default:
      break;
  }
  return std::nullopt;
}

std::string describe_dlpack(dlpack::dtype dtype) {
  static constexpr const char* kCodeNames[] = {"int",    "uint",    "float", "opaque",
                                               "bfloat", "complex", "bool"};
  const char* name = dtype.code < 7 ? kCodeNames[dtype.code] : "unknown";
  std::string text = fmt::format("{}{}", name, dtype.bits);
  if (dtype.lanes != 1) text += fmt::format("x{}", dtype.lanes);
  return text;
}

// Empty arrays may have no storage; numpy and DLPack consumers want a non-null pointer anyway.
alignas(64) std::byte empty_storage[64];

template <typename NdArray, typename Data>
nb::object make_ndarray(Data data, const std::vector<size_t>& shape, nb::handle owner,
                        dlpack::dtype dtype, int device_type, int device_id) {
  NdArray result(data, shape.size(), shape.data(), owner, /*strides=*/nullptr, dtype, device_type,
                 device_id);
  return result.cast(nb::rv_policy::reference);
}

// A mapped file handed to Python is backed by a private copy-on-write view (MAP_NORESERVE: only
// the pages written cost memory): numpy still shows it read-only, but an in-place op on a torch
// tensor over it never faults and never reaches the file. Inside Volley the map stays read-only;
// where the kernel refuses the view, Python gets the read-only map.
Buffer python_view(const Buffer& buffer) {
  if (buffer.location() != Location::kMappedFile || buffer.writable() || buffer.empty()) {
    return buffer;
  }
  try {
    return Buffer::map_file(buffer.file_path(), buffer.file_offset(), buffer.size(),
                            MapMode::kCopyOnWrite);
  } catch (const Error&) {
    return buffer;
  }
}

}  // namespace

nb::object array_to_python(const Array& array) {
  if (!array.defined()) return nb::none();
  const Buffer buffer = python_view(array.buffer());
  const bool writable = array.buffer().writable();
  std::byte* data = buffer.data() != nullptr ? buffer.data() : empty_storage;

  // The owner keeps a handle to the bytes (shared ownership) for as long as Python needs them.
  auto* keep = new Buffer(buffer);
  nb::capsule owner(keep, [](void* pointer) noexcept { delete static_cast<Buffer*>(pointer); });

  std::vector<size_t> shape(array.shape().begin(), array.shape().end());
  const dlpack::dtype dtype = to_dlpack(array.dtype());
  int device_type = nb::device::cpu::value;
  int device_id = 0;
  // The host-executor device's "device" memory is host memory: handed over as CPU arrays.
  const bool emulated = buffer.location() == Location::kCuda && cuda_emulated();
  if (buffer.location() == Location::kCuda && !emulated) {
    device_type = nb::device::cuda::value;
    device_id = buffer.device();
  }
  const bool numpy_can_hold =
      (buffer.host_accessible() || emulated) && array.dtype() != DType::kBFloat16;

  if (numpy_can_hold) {
    return writable
               ? make_ndarray<nb::ndarray<nb::numpy>>(static_cast<void*>(data), shape, owner, dtype,
                                                      device_type, device_id)
               : make_ndarray<nb::ndarray<nb::numpy, nb::ro>>(static_cast<const void*>(data), shape,
                                                              owner, dtype, device_type, device_id);
  }
  return writable
             ? make_ndarray<nb::ndarray<nb::array_api>>(static_cast<void*>(data), shape, owner,
                                                        dtype, device_type, device_id)
             : make_ndarray<nb::ndarray<nb::array_api, nb::ro>>(
                   static_cast<const void*>(data), shape, owner, dtype, device_type, device_id);
}

nb::object array_to_python(const std::optional<Array>& array) {
  return array ? array_to_python(*array) : nb::none();
}

Array array_from_python(const InputArray& input, std::string_view what) {
  const std::optional<DType> dtype = from_dlpack(input.dtype());
  VOLLEY_REQUIRE(dtype.has_value(), ValueError,
                 "{}: unsupported dtype {} (Volley arrays hold bool, int8/16/32/64, uint8, "
                 "float16/32/64 or bfloat16)",
                 what, describe_dlpack(input.dtype()));

  Location location = Location::kExternal;
  int device = -1;
  if (input.device_type() == nb::device::cuda::value) {
    location = Location::kCuda;
    device = input.device_id();
  } else {
    VOLLEY_REQUIRE(input.device_type() == nb::device::cpu::value ||
                       input.device_type() == nb::device::cuda_host::value,
                   ValueError, "{}: arrays on DLPack device type {} are not supported", what,
                   input.device_type());
  }

  std::vector<int64_t> shape(input.ndim());
  for (size_t axis = 0; axis < input.ndim(); ++axis) {
    shape[axis] = static_cast<int64_t>(input.shape(axis));
  }

  // The Buffer holds a reference to the Python array; dropping it needs the GIL, and Buffers may
  // die on any thread (a worker, or inside a gil_scoped_release region).
  std::shared_ptr<void> keep_alive(new InputArray(input), [](void* pointer) {
    if (!Py_IsInitialized()) return;  // interpreter gone: leak rather than crash
    nb::gil_scoped_acquire gil;
    delete static_cast<InputArray*>(pointer);
  });
  void* data = const_cast<void*>(input.data());
  Buffer buffer = Buffer::borrow(data, input.nbytes(), std::move(keep_alive),
                                 /*writable=*/false, location, device);
  return Array(std::move(buffer), *dtype, std::move(shape));
}

std::optional<Array> array_from_python(const std::optional<InputArray>& input,
                                       std::string_view what) {
  if (!input) return std::nullopt;
  return array_from_python(*input, what);
}

}  // namespace volley::python
