#!/usr/bin/env bash
# Runs every GPU check of murmur on a machine with a CUDA GPU, from a bundle made by
# bench/gpu_bundle.sh: the GPU test binaries, the library's GPU buffers (C++ and PyTorch CUDA
# tensors through a Python module compiled here against this machine's Python), the codec and
# training-step bench against PyTorch, and murmur train / local / local --exec on the GPU.
# Each stage has a time limit; the full output goes to LOGDIR/check.log, a table of the stages
# to stdout. Usage: bench/gpu_check.sh BUNDLE LOGDIR [STAGE...]   (default: every stage)
set -uo pipefail
bundle=$(cd "$1" && pwd) logs=$2
shift 2
mkdir -p "$logs"
src=$(cd "$(dirname "$0")/.." && pwd)
log=$logs/check.log
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(env cuda_test api_test python example gpu_bench train local
                                   kernels_test seeds)

# cuBLAS: the toolkit's, else the one PyTorch's wheels carry.
cublas=$(ls /usr/local/cuda/lib64/libcublas.so.13 2>/dev/null ||
         find /usr/local /opt /usr/lib -name 'libcublas.so.13' 2>/dev/null | head -1)
export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp "$bundle"/data/*.gz /usr/share/datasets/fashion-mnist/
fi
m=$bundle/murmur
[ -d /usr/share/games/fortunes ] || export MURMUR_FORTUNES_DIR=$bundle/data/fortunes
py=/tmp/murmur-gpu-py
PYTHON=${PYTHON:-python3}  # the one with PyTorch (and pybind11)

env_stage() {
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  uname -r; ldd --version | head -1; g++ --version | head -1; $PYTHON -V
  lscpu | grep -m1 'Model name'
  echo "cuBLAS: ${cublas:-none found}"
  $PYTHON -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
  ! ldd "$m" "$bundle"/murmur_cuda_test | grep 'not found'
}
build_module() {
  # The module against this Python (pybind11 from its site-packages), linked to the bundle's
  # library object.
  mkdir -p "$py/murmur" "$py/generated/base" && cp "$src"/python/murmur/*.py "$py/murmur/"
  # base/config.h as CMake generates it (the module reads the version from it).
  version=$(sed -n 's/^project(murmur VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
  sed -e 's/#cmakedefine01 MURMUR_WITH_CUDA/#define MURMUR_WITH_CUDA 1/' \
      -e "s|@PROJECT_VERSION@|$version|" -e "s|@PROJECT_SOURCE_DIR@|$src|" \
      "$src/base/config.h.in" > "$py/generated/base/config.h"
  ext=$($PYTHON -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  [ -f "$py/murmur/_murmur$ext" ] ||
    g++ -O2 -std=c++20 -shared -fPIC -I"$src" -I"$py/generated" $($PYTHON -m pybind11 --includes) \
      "$src/python/murmur_module.cc" -o "$py/murmur/_murmur$ext" \
      -L"$bundle/lib" -lmurmur_pyapi -Wl,-rpath,"$bundle/lib"
}
python_stage() {
  # The module's tests, GPU ones included.
  build_module || return 1
  PYTHONPATH=$py MURMUR_BINARY=$m $PYTHON -m pytest -q -p no:cacheprovider "$src/tests/python" \
    -k 'cuda or gpu or optimizer or dimension or survives'
}
example_stage() {
  # The examples: 4 processes on the one GPU, gossip over loopback (the CNN; the ResNet and the
  # language model with bfloat16 autocast), and the ResNet's DDP twin (nccl) for comparison.
  build_module || return 1
  PYTHONPATH=$py "$m" local --nodes 4 --epochs 3 --device cuda \
    --exec "$PYTHON $src/examples/fashion_cnn.py" 2>&1 | tail -n 40
  PYTHONPATH=$py "$m" local --nodes 4 --epochs 1 --device cuda \
    --exec "$PYTHON $src/examples/resnet_fashion.py --amp" 2>&1 | tail -n 12
  $PYTHON "$src/examples/resnet_fashion.py" --backend ddp --procs 4 --device cuda --amp \
    --epochs 1 2>&1 | tail -n 4
  PYTHONPATH=$py "$m" local --nodes 4 --epochs 1 --device cuda \
    --exec "$PYTHON $src/examples/fortune_lm.py --amp" 2>&1 | tail -n 12
}
seeds_stage() {
  # The MLP of murmur_cuda_test's 3-epoch test (lr 0.05, momentum 0.9) on the GPU and the CPU,
  # seeds 1-6: how far two fp32 trajectories of one seed end apart, against two seeds.
  local rc=0
  for seed in 1 2 3 4 5 6; do
    local pids=()
    for d in cuda cpu; do
      "$m" train --device $d --seed $seed --lr 0.05 --momentum 0.9 --progress none --json |
        $PYTHON -c "import json,sys; r=json.load(sys.stdin); print('seed $seed $d', r['test_accuracy'])" &
      pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
  done
  return $rc
}
cuda_test_stage() {
  # Four shards at once (the host references of the 10^8-element cases take minutes on one core).
  local rc=0
  for i in 0 1 2 3; do
    GTEST_TOTAL_SHARDS=4 GTEST_SHARD_INDEX=$i "$bundle/murmur_cuda_test" --gtest_color=no \
      > "/tmp/murmur-cuda-test-$i.log" 2>&1 &
  done
  for i in 0 1 2 3; do wait -n || rc=1; done
  cat /tmp/murmur-cuda-test-{0,1,2,3}.log
  grep -h '^\[  \(PASSED\|FAILED\|SKIPPED\) ' /tmp/murmur-cuda-test-{0,1,2,3}.log
  return $rc
}
run_stage() {
  case $1 in
    env) env_stage ;;
    cuda_test) cuda_test_stage ;;
    api_test) "$bundle/murmur_api_test" --gtest_color=no --gtest_filter='PeerTest.*Gpu*:PeerTest.TheBuffers*' ;;
    kernels_test) "$bundle/murmur_kernels_test" --gtest_color=no --gtest_brief=1 ;;
    gpu_bench) bash "$src/bench/gpu_bench.sh" "$bundle" ;;
    train) for d in cuda cpu; do echo "-- murmur train --device $d"
             /usr/bin/time -f "wall %e s" "$m" train --device $d --epochs 3 2>&1 | tail -n 6; done ;;
    local) "$m" local --nodes 4 --epochs 3 --device cuda 2>&1 | tail -n 40 ;;
    seeds) seeds_stage ;;
    python) python_stage ;;
    example) example_stage ;;
    *) echo "unknown stage $1"; return 2 ;;
  esac
}
declare -A limit=([env]=30 [cuda_test]=240 [api_test]=90 [python]=150 [example]=400 [gpu_bench]=120
                  [train]=90 [local]=90 [kernels_test]=60 [seeds]=120)
# Lines of a passing stage worth reading in the table's output (its figures).
declare -A show=([env]=12 [cuda_test]=8 [seeds]=12 [gpu_bench]=14 [train]=14 [local]=14 [example]=14)
export -f env_stage build_module python_stage example_stage cuda_test_stage seeds_stage run_stage
export bundle src m py cublas PYTHON
table=""
for s in "${stages[@]}"; do
  start=$(date +%s)
  echo "===== $s" >> "$log"
  timeout "${limit[$s]:-120}" bash -c "set -o pipefail; run_stage $s" >> "$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  table+=$(printf '%-13s rc=%-3s %4ss' "$s" "$rc" "$secs")$'\n'
  # The failing stage's end, where the caller reads it (the log has everything).
  if [ $rc -ne 0 ]; then lines=40; else lines=${show[$s]:-3}; fi
  echo "----- $s rc=$rc"; sed -n '/^===== '"$s"'$/,$p' "$log" | tail -n "$lines"
done
echo "===== stages"; printf '%s' "$table"
