#!/usr/bin/env bash
# The GPU benchmark (issue 31) as one command, on a machine with an NVIDIA GPU, nvcc, cmake and a C compiler:
#   bash bench/gpu.sh
# 1. builds llama.cpp with CUDA from the pinned source (the node-llama-cpp tarball's gitRelease.bundle, as
#    native/llama.ts pins it) into $LLAMA_CUDA_BUILD (cached; llama-server, llama-bench, llama-quantize),
# 2. compiles this server's shim against that build (the same libraries for all three programs),
# 3. writes the Qwen2.5-0.5B and (unless SHAPES says otherwise) Qwen2.5-7B shapes with random weights as F16
#    (tools/models/bench_gguf_shapes.ts) and quantizes them to Q4_K_M and Q8_0 with llama-quantize,
# 4. runs bench/peer_bench.ts per file: llama-bench's pp/tg, then this server and llama-server alternating under
#    1/8/32 concurrent streams, and prints the tables (also in $RESULTS).
# Environment: LLAMA_SRC (a llama.cpp checkout of the pinned release; default: cloned from the bundle),
# LLAMA_CUDA_BUILD, MODELS (where the GGUF files go), SHAPES ("qwen2.5-0.5b qwen2.5-7b"), QUANTS ("Q4_K_M Q8_0"),
# STREAMS ("1,8,32"), GREEDY_STREAMS ("1"), JSON_STREAMS (none), ROUNDS (2), CUDA_ARCH (native),
# CUDA_FA (ON; OFF builds ggml-cuda without its flash attention kernels, minutes faster, for both servers
# alike), RESULTS (.bench/gpu.md), CUDA=0 for a CPU dry run.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${LLAMA_CUDA_BUILD:-/tmp/oai-llama-cuda}
MODELS=${MODELS:-/tmp/oai-gpu-models}
SHAPES=${SHAPES:-"qwen2.5-0.5b qwen2.5-7b"}
QUANTS=${QUANTS:-"Q4_K_M Q8_0"}
STREAMS=${STREAMS:-1,8,32}
ROUNDS=${ROUNDS:-2}
RESULTS=${RESULTS:-$ROOT/.bench/gpu.md}
CUDA=${CUDA:-1}
JOBS=$(nproc)
mkdir -p "$MODELS" "$(dirname "$RESULTS")"
t0=$(date +%s)
stamp() { echo "--- [$(($(date +%s) - t0)) s] $*" >&2; }

if [ -z "${LLAMA_SRC:-}" ]; then
  LLAMA_SRC=/tmp/oai-llama-src
  if [ ! -f "$LLAMA_SRC/CMakeLists.txt" ]; then
    stamp "llama.cpp source from the pinned bundle"
    deno run -A native/llama.ts --if-missing --variant cpu >/dev/null
    tmp=$(mktemp -d)
    tar xzf native/build/node-llama-cpp-*.tgz -C "$tmp" package/llama/gitRelease.bundle
    git clone -q "$tmp/package/llama/gitRelease.bundle" "$LLAMA_SRC"
    rm -rf "$tmp"
  fi
fi

if [ ! -x "$BUILD/bin/llama-server" ]; then
  stamp "building llama.cpp (CUDA=$CUDA) in $BUILD"
  cuda_flags=()
  [ "$CUDA" = 1 ] && cuda_flags=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=${CUDA_ARCH:-native}"
    "-DGGML_CUDA_FA=${CUDA_FA:-ON}")
  cmake -S "$LLAMA_SRC" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DGGML_NATIVE=ON "${cuda_flags[@]}" >"$BUILD.cmake.log"
  cmake --build "$BUILD" -j"$JOBS" --target llama-server llama-bench llama-quantize >"$BUILD.build.log"
fi

stamp "this server's shim against that build"
LIB=$BUILD/oai-lib
mkdir -p "$LIB"
find "$BUILD/bin" -maxdepth 1 -name '*.so*' -exec cp -P {} "$LIB/" \;
cc -O3 -fno-trapping-math -ffp-contract=off -shared -fPIC -std=c11 -Wall -I "$LLAMA_SRC/include" -I "$LLAMA_SRC/ggml/include" \
  native/llama_shim.c -o "$LIB/libllama_shim.so" -L"$LIB" -lllama -lggml -lggml-base -lpthread -lm \
  -Wl,-rpath,'$ORIGIN'

gpu_layers=-1
[ "$CUDA" = 1 ] || gpu_layers=0
# Each file is benchmarked as soon as it exists, so a run cut short still has the first files' tables.
for shape in $SHAPES; do
  f16="$MODELS/$shape-F16.gguf"
  if [ ! -f "$f16" ]; then
    stamp "writing $f16"
    deno run -A tools/models/bench_gguf_shapes.ts --shape "$shape" --out "$f16" >&2
  fi
  for q in $QUANTS; do
    f="$MODELS/$shape-$q.gguf"
    if [ ! -f "$f" ]; then
      stamp "quantizing $f"
      "$BUILD/bin/llama-quantize" "$f16" "$f" "$q" "$JOBS" >/dev/null 2>&1
    fi
    stamp "benchmark $(basename "$f")"
    deno run -A bench/peer_bench.ts --llama-server "$BUILD/bin/llama-server" --llama-bench "$BUILD/bin/llama-bench" \
      --llama-lib "$LIB" --gguf "$f" --streams "$STREAMS" --greedy-streams "${GREEDY_STREAMS:-1}" \
      --json-streams "${JSON_STREAMS:-}" --rounds "$ROUNDS" --gpu-layers="$gpu_layers" \
      --threads "${THREADS:-$JOBS}" --json "$RESULTS.$(basename "$f").json" | tee -a "$RESULTS"
  done
done
stamp "done: $RESULTS"
