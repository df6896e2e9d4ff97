#!/usr/bin/env bash
# Everything a GPU session measures, in one command (issue 22): installs the abi3 wheel
# built here (`make wheel`; carry target/wheels), then runs tests/gpu (which includes the
# Gluon seed on gpu(0)) and benches/bench_gpu.py against PyTorch on the same GPU.
# Logs go to $OUT (the device tool's folder) or ./gpu-out.
#   usage: tests/gpu/run_on_device.sh [wheel] [pytest args...]
set -uo pipefail
cd "$(dirname "$0")/../.."
WHL=${1:-$(ls target/wheels/oxnet-*.whl 2>/dev/null | head -1)}
shift || true
LOG=${OUT:-gpu-out}
mkdir -p "$LOG"
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
rm -rf /tmp/oxsite && $PY -m pip install -q --no-deps --no-index --no-compile --target /tmp/oxsite "$WHL" || exit 1
export PYTHONPATH=/tmp/oxsite
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
$PY -c "import oxnet as mx, numpy; print('oxnet', mx.__file__, 'numpy', numpy.__version__, 'gpus', mx.context.num_gpus()); print(mx.runtime.cuda_libraries()); print('cudnn (enabled, version, calls):', mx._core.cudnn_info())"
# Optional: ResNet-18 steps under several settings, each in its own process.
if [ -n "${RESNET_CHECK:-}" ]; then
    timeout ${RESNET_CHECK_TIMEOUT:-240} $PY tests/gpu/resnet_check.py 2>&1 | tee "$LOG/resnet-check.log"
fi
# The tests, on several workers (each its own CUDA context); full log in $LOG.
timeout ${GPU_TEST_TIMEOUT:-360} $PY -m pytest tests/gpu -q -p no:cacheprovider -p no:benchmark -n ${GPU_WORKERS:-8} --timeout 300 -rf "$@" \
    >"$LOG/gpu-tests.log" 2>&1
echo "tests/gpu exit: $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$LOG/gpu-tests.log" | cut -c1-300 | tail -60
# A cuDNN failure falls back to im2col with a one-time notice: show it.
grep -h "cuDNN could not run" "$LOG/gpu-tests.log" | sort | uniq -c | head -5
if [ -z "${SKIP_BENCH:-}" ]; then
    timeout ${GPU_BENCH_TIMEOUT:-300} $PY benches/bench_gpu.py 2>&1 | tee "$LOG/bench-gpu.log" | tail -30
    # The tiny op with launches by an engine worker instead of the calling thread.
    if [ -z "${SKIP_TINY_WORKER:-}" ]; then
        OXNET_CUDA_INLINE=0 timeout 60 $PY benches/bench_gpu.py --tiny 2>&1 | sed 's/^/OXNET_CUDA_INLINE=0: /'
    fi
fi
