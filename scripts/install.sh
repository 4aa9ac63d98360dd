#!/usr/bin/env bash
# Install hydra-vr into ./.venv on a fresh machine (Linux, Python 3.11).
#
#   bash scripts/install.sh          # runtime: package, vision models, embedded LLM (0.5B + 1.5B)
#   bash scripts/install.sh --dev    # + test tools, the ray extra and the sample photos the tests use
#
# Order matters: llama-cpp-python is built first with CPU flags that work (its default build
# crashes on some Xeons), so pip never builds it with default flags as a dependency.
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
MODELS="${HYDRA_VR_LLM_MODELS:-all}"
for arg in "$@"; do
  case "$arg" in
    --dev) DEV=1 ;;
    *) echo "usage: $0 [--dev]" >&2; exit 2 ;;
  esac
done

PYTHON_BIN="${PYTHON_BIN:-python3.11}"
command -v "$PYTHON_BIN" >/dev/null || PYTHON_BIN=python3
if [[ ! -x .venv/bin/python ]]; then
  "$PYTHON_BIN" -m venv .venv
fi
export PYTHON=.venv/bin/python
$PYTHON -m pip install --quiet --upgrade pip setuptools wheel

bash scripts/install_llm.sh "$MODELS"

if [[ "$DEV" == 1 ]]; then
  $PYTHON -m pip install -e ".[dev,serve,ray]"
  # tests/test_ray_cluster.py runs a two-node Ray cluster in a loopback-only network namespace:
  # it needs unshare (util-linux) and ip (iproute2), and skips with the reason without them.
  if ! command -v ip >/dev/null && command -v apt-get >/dev/null; then
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y iproute2; } \
      || echo "warning: iproute2 not installed (needs root): tests/test_ray_cluster.py will skip" >&2
  fi
  command -v unshare >/dev/null || echo "warning: unshare (util-linux) missing: tests/test_ray_cluster.py will skip" >&2
  # The serve page's browser test: playwright drives Debian's chromium (playwright cannot download
  # its own browser build here, so the test launches /usr/bin/chromium through executable_path).
  $PYTHON -m pip install "playwright==1.65.2"
  if [[ ! -x /usr/bin/chromium ]] && command -v apt-get >/dev/null; then
    { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y chromium; } \
      || echo "warning: chromium not installed (needs root): tests/test_serve_browser.py will skip" >&2
  fi
  # The tests use real photos: fetch the ultralytics assets (bus.jpg, zidane.jpg) once.
  $PYTHON -c "from hydra_vr.assets import sample_image; [sample_image(n) for n in ('bus', 'zidane')]"
else
  $PYTHON -m pip install -e .
fi
echo "hydra-vr installed in .venv (activate with: . .venv/bin/activate)"
