#!/usr/bin/env bash
# Build pyg-lib from source (CPU only) and install it into a Python venv, so
# torch_geometric.loader.NeighborLoader can sample (pyg-lib has no PyPI wheel).
#
# Sources used (obtain with git clone; submodule commits are those pinned by
# pyg-lib at that commit, see `git ls-tree HEAD third_party/`):
#   PYG_LIB_SRC : https://github.com/pyg-team/pyg-lib      @ 764e3a492eb0d1ed9616808ec9fec2416f8d6b7d
#                 (master, version 0.9.0 dev, after tag 0.8.0)
#   PHMAP_SRC   : https://github.com/greg7mdp/parallel-hashmap @ 2ec799017610ef831f4dc29c21fb3cce7e4a19b9 (v2.0.0)
#   METIS_SRC   : https://github.com/KarypisLab/METIS       @ 22008804e8c9b78893ae10a94c0d8b4b592438b4
#   GKLIB_SRC   : https://github.com/KarypisLab/GKlib       @ 3eabb216ac97e11ce7e7a9b90f4c90778d9e7c18
#                 (METIS's own submodule; pyg-lib's CMake needs third_party/METIS/GKlib)
# cutlass / cuCollections / cccl are only used for CUDA builds and are not needed.
#
# Tested with: torch 2.15.0 (PyPI, +cu132 build, used on CPU), torch_geometric 2.8.1,
# Python 3.11, gcc 12.2, cmake 3.25.1, ninja 1.11 (Debian bookworm).
#
# Usage: PYTHON=/path/to/venv/bin/python scripts/build_pyg_lib.sh PYG_LIB_SRC PHMAP_SRC METIS_SRC GKLIB_SRC
# What it runs (in a copy under $WORK, default /tmp/pyglib-build):
#   PATH=<venv>/bin:$PATH TORCH_CUDA_ARCH_LIST=9.0 FORCE_CUDA=0 CUDA_VISIBLE_DEVICES= \
#   MAX_JOBS=2 CMAKE_BUILD_PARALLEL_LEVEL=2 FORCE_NINJA=1 \
#     nice -n 5 $PYTHON -m pip install --no-build-isolation --no-deps -v .
# setup.py then runs: cmake <src> -DBUILD_TEST=OFF -DBUILD_BENCHMARK=OFF -DWITH_CUDA=OFF
#   -DCMAKE_BUILD_TYPE=RELEASE -DCMAKE_PREFIX_PATH=<torch cmake prefix> -GNinja ; cmake --build .
# (~12.5 min on 2 cores; only the METIS/GKlib sources are needed, not METIS's graphs/ dir.)
set -euo pipefail

PYTHON=${PYTHON:-/root/.cache/volley/venv-latest/bin/python}
PYG_LIB_SRC=${1:-${PYG_LIB_SRC:?pyg-lib source dir}}
PHMAP_SRC=${2:-${PHMAP_SRC:?parallel-hashmap source dir}}
METIS_SRC=${3:-${METIS_SRC:?METIS source dir}}
GKLIB_SRC=${4:-${GKLIB_SRC:?GKlib source dir}}
WORK=${WORK:-/tmp/pyglib-build}

# Assemble a clean source tree with the third-party sources where CMakeLists.txt expects them.
rm -rf "$WORK"
mkdir -p "$WORK"
cp -a "$PYG_LIB_SRC"/. "$WORK"/
rm -rf "$WORK"/third_party/{parallel-hashmap,METIS}
cp -a "$PHMAP_SRC" "$WORK"/third_party/parallel-hashmap
cp -a "$METIS_SRC" "$WORK"/third_party/METIS
rm -rf "$WORK"/third_party/METIS/GKlib
cp -a "$GKLIB_SRC" "$WORK"/third_party/METIS/GKlib

cd "$WORK"
# - venv bin first on PATH: pyg-lib's CMake asks `python3` for torch's C++11 ABI flag.
# - TORCH_CUDA_ARCH_LIST: the PyPI torch is a CUDA build, so its CMake config insists
#   on finding CUDA (/usr/local/cuda) and would otherwise try_run a GPU-detection CUDA
#   program (fails with cmake 3.25: "CUDA20 dialect" unsupported). Setting the list skips
#   that; nothing is compiled for CUDA since WITH_CUDA=OFF (FORCE_CUDA=0).
PATH="$(dirname "$PYTHON"):$PATH" TORCH_CUDA_ARCH_LIST=9.0 \
FORCE_CUDA=0 CUDA_VISIBLE_DEVICES= MAX_JOBS=2 CMAKE_BUILD_PARALLEL_LEVEL=2 FORCE_NINJA=1 \
  nice -n 5 "$PYTHON" -m pip install --no-build-isolation --no-deps -v .

cd /
"$PYTHON" -c "import pyg_lib, torch; print('pyg_lib', pyg_lib.__version__, 'torch', torch.__version__)"
rm -rf "$WORK"   # the installed package lives in the venv's site-packages
