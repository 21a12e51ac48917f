#!/usr/bin/env bash
# GPU check, one script, under 10 minutes on a CUDA machine:
#   1. the engine and rules tests with every tiny model on CUDA (VIASD_TEST_DEVICE=cuda, float32);
#   2. the embedded-model tests (the model loads on CUDA in float32 there; see tests/models/test_embedded.py);
#   3. the benchmark with small settings (bf16, the default CUDA load: real accelerator timings);
#   4. random-weight models with the real pair's shapes (Qwen2.5-Coder 1.5B / 0.5B, vocabulary 151936) in
#      bf16: one- vs k-token passes, plain, classic SD and VIA-SD rounds (core/tools/pair_timing.py; the
#      pair's weights cannot reach the device, its shapes can), again with the drafter in int8, int4 and
#      int4 + a restricted head (torch's own weight-only kernels; a setting with no CUDA kernel is named and
#      skipped, never silently dropped).
# Logs go to $OUT when set (the device runner collects it), else ./gpu-logs. Exit 0 only if every
# step that ran passed. Steps 2 and 3 need the converted embedded model in the model cache
# (VIASD_CACHE_DIR or ~/.cache/via-sd-explorer); without it (an offline GPU box) they are skipped
# with a line saying so, never silently.
#   usage: bash tests/gpu_check.sh
#   (VIASD_GPU_CHECK_DEVICE=cpu runs the same steps on the CPU: only to check this script itself.)
set -uo pipefail
cd "$(dirname "$0")/.."
LOGS="${OUT:-$PWD/gpu-logs}"
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1 GRADIO_ANALYTICS_ENABLED=False HF_HUB_OFFLINE=1 PYTHONDONTWRITEBYTECODE=1
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
status=0

note() { echo "$*" | tee -a "$SUMMARY"; }

step() {  # step NAME SECONDS COMMAND...
  local name=$1 limit=$2 start rc
  shift 2
  start=$(date +%s)
  echo "== $name: $*" | tee -a "$SUMMARY"
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  tail -n 3 "$LOGS/$name.log" | sed 's/^/   /' | tee -a "$SUMMARY"
  note "   -> $name: rc=$rc in $(( $(date +%s) - start )) s$([ "$rc" -eq 124 ] && echo ' (timed out)')"
  [ "$rc" -eq 0 ] || status=1
}

python3 - >"$LOGS/env.txt" 2>&1 <<'EOF'
import sys, torch, transformers
print("python", sys.version.split()[0], "torch", torch.__version__, "transformers", transformers.__version__)
print("cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device", torch.cuda.get_device_name(0), "bf16", torch.cuda.is_bf16_supported())
EOF
cat "$LOGS/env.txt" | tee -a "$SUMMARY"
DEVICE="${VIASD_GPU_CHECK_DEVICE:-cuda}"
if [ "$DEVICE" = cuda ] && ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  note "no CUDA device here: nothing to check (run this on a GPU machine)"
  exit 2
fi

# 1. Tiny models on CUDA: exactness, caches, sampling distribution, routing reasons (about 1-2 min).
step "tiny-on-$DEVICE" 240 env VIASD_TEST_DEVICE="$DEVICE" python3 -m pytest -q -p no:cacheprovider -rfs \
  tests/decoding/test_rules.py tests/decoding/test_engine.py tests/models/test_drafter_quant.py

model_ready=$(python3 -c "
from core.models.loading import cache_dir
print('yes' if (cache_dir() / 'smollm2-135m-instruct' / 'converted.ok').exists() else 'no')")
if [ "$model_ready" = yes ]; then
  # 2. The real model on CUDA in float32 (exactness) and the CLI.
  step "embedded-on-$DEVICE" 150 python3 -m pytest -q -p no:cacheprovider -rf tests/models/test_embedded.py
  # 3. A small benchmark: one prompt per family, 48 tokens, both drafters (bf16, the CUDA default).
  if python3 -m core.tools.benchmark --help | grep -q -- "--quick"; then
    step benchmark 220 python3 -m core.tools.benchmark --quick
  else
    step benchmark 220 python3 -m core.tools.benchmark --per-family 1 --max-new-tokens 48
  fi
else
  note "skipped embedded-on-cuda and benchmark: the converted embedded model is not in $(python3 -c \
'from core.models.loading import cache_dir; print(cache_dir())') and this machine may be offline; copy it there"
fi

# 4. The pair's shapes with random weights (about 1 min on a GPU; on the CPU check: tiny shapes).
if [ "$DEVICE" = cuda ]; then
  step pair-timing 300 python3 -m core.tools.pair_timing --device cuda --dtype bfloat16 --scale pair \
    --drafter-quants int8,int4,int4+vocab
else
  step pair-timing 120 python3 -m core.tools.pair_timing --device cpu --dtype bfloat16 --scale tiny --repeats 2 \
    --drafter-quants int8,int4,int4+vocab
fi

note "overall: $([ "$status" -eq 0 ] && echo PASSED || echo FAILED) (logs in $LOGS)"
exit "$status"
