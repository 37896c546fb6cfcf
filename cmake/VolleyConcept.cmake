# VolleyConcept.cmake — one CMake target per concept folder under src/volley, with the include
# scheme that keeps each concept's private headers its own (docs/architecture.md, "Headers").
#
# `src/` is never an include directory. Instead each concept's headers are staged, as symlinks to
# the source files, into two include trees of the build:
#
#   <build>/include/public/<concept>/volley/<concept>/<header>    PUBLIC_HEADERS
#   <build>/include/private/<concept>/volley/<concept>/<header>   PRIVATE_HEADERS (internal/, cpu/, cuda/)
#
# The public root is a PUBLIC include directory of volley_<concept> (so the targets that link it
# see it), the private root a PRIVATE one (only the concept's own sources, and its tests, see it).
# `#include "volley/sampling/cpu/neighbor_kernel.h"` therefore resolves inside volley_sampling and
# fails to compile ("No such file or directory") everywhere else. Core's kernel plumbing is the
# one exception, in two parts:
#   SHARED_HEADERS       the executor seam (internal/executor.h, host_executor.h, atomics.h),
#                        staged into <build>/include/shared: reaches the sources of every concept
#                        (their private headers name the host executor) and the tests, never a
#                        public header or a user;
#   SHARED_CUDA_HEADERS  checked CUDA calls and the CUDA executor, staged into
#                        <build>/include/cuda_shared: reaches the sources of every concept's cuda/
#                        folder, nothing else.
#
# Every file of the concept folder must appear in exactly one list: a file in no list stops the
# configure with its name (a forgotten file never silently drops out of the build). Paths are
# relative to the concept folder, so nothing depends on where the checkout lives.
#
#   volley_add_concept(sampling
#     PUBLIC_HEADERS  neighbor_sampler.h ...
#     PRIVATE_HEADERS cpu/neighbor_kernel.h internal/pick.h ...
#     SOURCES         neighbor_sampler.cc cpu/neighbor_kernel.cc ...   (every build)
#     CUDA_SOURCES    cuda/neighbor_sampler.cu                           (builds with CUDA)
#     STUB_SOURCES    cuda_sampler_stub.cc                               (builds without CUDA)
#     GPU_HOST_SOURCES cuda/neighbor_sampler_host.cc   (the GPU drivers on the host executor:
#                                                      builds that found the CCCL headers)
#     OTHER_FILES     ...                                                (e.g. a .proto)
#     PUBLIC_DEPS     volley_graph                 (used by the public headers)
#     PRIVATE_DEPS    ...)                         (used by the sources only)

set(VOLLEY_INCLUDE_STAGE ${PROJECT_BINARY_DIR}/include)
set(VOLLEY_CUDA_SHARED_INCLUDE ${VOLLEY_INCLUDE_STAGE}/cuda_shared)
set(VOLLEY_SHARED_INCLUDE ${VOLLEY_INCLUDE_STAGE}/shared)

# Symlinks `<stage_root>/volley/<concept>/<file>` → `<concept dir>/<file>` for every file given.
function(_volley_stage_headers concept stage_root)
  foreach(header IN LISTS ARGN)
    set(link ${stage_root}/volley/${concept}/${header})
    get_filename_component(link_dir ${link} DIRECTORY)
    file(MAKE_DIRECTORY ${link_dir})
    file(CREATE_LINK ${CMAKE_CURRENT_SOURCE_DIR}/${header} ${link} SYMBOLIC)
  endforeach()
endfunction()

# Fails the configure for a file of the concept folder that is in no list, or a listed file that
# does not exist.
function(_volley_check_lists concept)
  file(GLOB_RECURSE on_disk RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(FILTER on_disk INCLUDE REGEX "\\.(h|hpp|cuh|cc|cpp|cu|proto|in)$")
  foreach(file IN LISTS on_disk)
    if(NOT file IN_LIST ARGN)
      message(FATAL_ERROR "src/volley/${concept}/${file} is in no list of "
                          "src/volley/${concept}/CMakeLists.txt: add it to the list of its kind "
                          "(docs/architecture.md, \"Adding a file\")")
    endif()
  endforeach()
  foreach(file IN LISTS ARGN)
    if(NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${file})
      message(FATAL_ERROR "src/volley/${concept}/CMakeLists.txt lists ${file}, which does not exist")
    endif()
  endforeach()
endfunction()

function(volley_add_concept concept)
  cmake_parse_arguments(PARSE_ARGV 1 ARG ""  ""
    "PUBLIC_HEADERS;PRIVATE_HEADERS;SHARED_HEADERS;SHARED_CUDA_HEADERS;SOURCES;CUDA_SOURCES;STUB_SOURCES;GPU_HOST_SOURCES;OTHER_FILES;PUBLIC_DEPS;PRIVATE_DEPS")
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "volley_add_concept(${concept}): unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()
  _volley_check_lists(${concept} ${ARG_PUBLIC_HEADERS} ${ARG_PRIVATE_HEADERS} ${ARG_SHARED_HEADERS}
                      ${ARG_SHARED_CUDA_HEADERS} ${ARG_SOURCES} ${ARG_CUDA_SOURCES}
                      ${ARG_STUB_SOURCES} ${ARG_GPU_HOST_SOURCES} ${ARG_OTHER_FILES})
  foreach(header IN LISTS ARG_PRIVATE_HEADERS ARG_SHARED_HEADERS ARG_SHARED_CUDA_HEADERS)
    if(NOT header MATCHES "^(internal|cpu|cuda)/")
      message(FATAL_ERROR "src/volley/${concept}/${header}: a private header lives in internal/, "
                          "cpu/ or cuda/")
    endif()
  endforeach()
  foreach(header IN LISTS ARG_PUBLIC_HEADERS)
    if(header MATCHES "^(internal|cpu|cuda)/")
      message(FATAL_ERROR "src/volley/${concept}/${header}: a header in internal/, cpu/ or cuda/ "
                          "is private (list it under PRIVATE_HEADERS)")
    endif()
  endforeach()

  set(public_root ${VOLLEY_INCLUDE_STAGE}/public/${concept})
  set(private_root ${VOLLEY_INCLUDE_STAGE}/private/${concept})
  # Restaged from scratch: a header taken off a list is no longer reachable.
  file(REMOVE_RECURSE ${public_root} ${private_root} ${VOLLEY_CUDA_SHARED_INCLUDE}/volley/${concept}
       ${VOLLEY_SHARED_INCLUDE}/volley/${concept})
  file(MAKE_DIRECTORY ${VOLLEY_SHARED_INCLUDE})
  _volley_stage_headers(${concept} ${public_root} ${ARG_PUBLIC_HEADERS})
  _volley_stage_headers(${concept} ${private_root} ${ARG_PRIVATE_HEADERS} ${ARG_SHARED_HEADERS}
                        ${ARG_SHARED_CUDA_HEADERS})
  _volley_stage_headers(${concept} ${VOLLEY_SHARED_INCLUDE} ${ARG_SHARED_HEADERS})
  _volley_stage_headers(${concept} ${VOLLEY_CUDA_SHARED_INCLUDE} ${ARG_SHARED_CUDA_HEADERS})

  set(target volley_${concept})
  add_library(${target} STATIC ${ARG_SOURCES})
  if(VOLLEY_WITH_CUDA)
    target_sources(${target} PRIVATE ${ARG_CUDA_SOURCES})
    set_target_properties(${target} PROPERTIES CUDA_SEPARABLE_COMPILATION OFF)
    if(ARG_CUDA_SOURCES)
      set_source_files_properties(${ARG_CUDA_SOURCES} PROPERTIES
                                  INCLUDE_DIRECTORIES ${VOLLEY_CUDA_SHARED_INCLUDE})
    endif()
  else()
    target_sources(${target} PRIVATE ${ARG_STUB_SOURCES})
  endif()
  if(VOLLEY_WITH_GPU_HOST AND ARG_GPU_HOST_SOURCES)
    # g++ with the toolkit's CCCL headers (not nvcc): every build that found them.
    target_sources(${target} PRIVATE ${ARG_GPU_HOST_SOURCES})
    set_source_files_properties(${ARG_GPU_HOST_SOURCES} PROPERTIES
                                INCLUDE_DIRECTORIES "${VOLLEY_CCCL_INCLUDE_DIRS}")
  endif()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${public_root}>
                                       PRIVATE ${private_root} ${VOLLEY_SHARED_INCLUDE})
  target_link_libraries(${target} PUBLIC ${ARG_PUBLIC_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra>)
  if(concept IN_LIST VOLLEY_UNSANITIZED_CONCEPTS)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=all>)
  endif()
  # The private root, for the concept's own tests (tests/cpp/<concept>/).
  set_target_properties(${target} PROPERTIES VOLLEY_PRIVATE_INCLUDE_DIR ${private_root})
endfunction()
