#!/usr/bin/env bash
# Every GPU measurement of hrl, in one command on a machine with one NVIDIA GPU:
#
#   experiments/bench/gpu_all.sh [STAGE ...]     # default: every stage, in this order
#
# Stages (each writes under experiments/results/ with a `_gpu` suffix, logs to $LOGS):
#   env       nvidia-smi, jax/jaxlib versions, the devices JAX sees
#   tests     the Pallas kernel tests compiled for the GPU, plus the tree and buffer suites
#   replay    bench_replay: hrl Pallas vs hrl XLA tree vs flashbax, N=2^20 B=256 K=16 (headline)
#   large     bench_replay at the largest cell alone: N=2^24, B=4096, K=16
#   grid      bench_replay over N in 2^20, 2^24; B in 32, 256, 4096; K in 4, 16, 64
#   train     bench_train: fused DQN CartPole, M = 1 .. 4096 actors
#   brax      bench_train --config ddpg_brax_inverted_pendulum: fused DDPG on brax, M = 1 .. 4096
#   profile   hrl profile (jax backend) of the DQN and DDPG configs: cpu and gpu placements
#             (PROFILE_GRID=quick|full, default full; PROFILE_LIMIT seconds per config;
#             PROFILE_CONFIGS, default "dqn_cartpole ddpg_pendulum")
#   mixed     validate_gpu measure: a profile with GPU placements, then the mixed CPU+GPU mappings
#             run end to end (MIXED_OUT, default experiments/results/mapping/gpu; MIXED_BUDGET
#             seconds, default 420); `validate_gpu.py report` predicts them anywhere afterwards
#   minatar   the MinAtar conv DQN side by side with the jitted flashbax peer
#             (experiments/peers/minatar_throughput.py): on the GPU (hrl's fused loop and the peer),
#             then on the CPU cores alone (hrl with train.cpu_threads auto, hrl on 1 thread, the
#             peer), into experiments/results/peers/minatar/{gpu,cpu-<cores>core}
#             (MINATAR_SECONDS per run, default 10; MINATAR_ROUNDS, default 1)
#   crossover the FPGA learner's crossover: hrl's float SGD step for the DQN networks of
#             experiments/results/fpga_learner/cycles.csv timed on the CPU and the GPU
#             (experiments/rtl/learner_crossover.py measure; `report` afterwards, anywhere)
#   scaling   bench_scaling on the machine's CPU cores (no GPU): 1-16 virtual CPU devices in one
#             process and split over 2 processes, into experiments/results/scaling-<cores>core
#   distributed  bench_distributed throughput on the machine's CPU cores (no GPU): 1-16 Ray actor
#             workers with the latency-bound and the CPU-bound env, into
#             experiments/results/distributed-<cores>core; needs Ray and gymnasium, which the
#             GPU machines' image lacks: `experiments/bench/device_wheels.sh` puts them in .whl/
#
# PY picks the interpreter (default python3; a machine set up with `make setup` has .venv/bin/python
# with the CPU jaxlib, so install jax[cuda] there or point PY at a CUDA-enabled Python).
# Wheels in .whl/ (missing packages for that Python) are installed to /tmp/site first, if any.
set -u
cd "$(dirname "$0")/../.."  # the repository root
PY=${PY:-python3}
LOGS=${LOGS:-experiments/results/gpu_logs}
mkdir -p "$LOGS"
export PYTHONUNBUFFERED=1
if compgen -G ".whl/*.whl" >/dev/null; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
STAGES=("$@")
[ ${#STAGES[@]} -eq 0 ] && STAGES=(env tests replay large grid train brax profile mixed minatar crossover
  scaling distributed)
configs=experiments/configs

run() {  # run NAME SECONDS CMD...: a stage's step, time-limited, logged; failures do not stop
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date +%T))"
  timeout "$limit" "$@" >"$LOGS/$name.log" 2>&1
  local rc=$?
  tail -n 25 "$LOGS/$name.log"
  echo "=== $name: exit $rc"
}

for stage in "${STAGES[@]}"; do
  case $stage in
    env)
      run env 120 bash -c "nvidia-smi; $PY -c 'import jax, jaxlib, flax, optax; \
print(jax.__version__, jaxlib.__version__, flax.__version__, optax.__version__); \
print(jax.devices())'" ;;
    tests)
      run tests 300 $PY -m pytest -q -p no:cacheprovider -rfE \
        ${GPU_TESTS:-tests/replay/test_pallas_sumtree.py tests/replay/test_buffer.py} ;;
    replay)
      run replay 200 $PY experiments/bench/bench_replay.py --libraries hrl-pallas,hrl-xla,flashbax \
        --log2-n 20 --b 256 --k 16 --reps 200 ;;
    large)
      run large 200 $PY experiments/bench/bench_replay.py --libraries hrl-pallas,hrl-xla,flashbax \
        --log2-n 24 --b 4096 --k 16 --reps 50 --out experiments/results/replay/large ;;
    grid)
      run grid 560 $PY experiments/bench/bench_replay.py --libraries hrl-pallas,hrl-xla,flashbax \
        --log2-n 20,24 --b 32,256,4096 --k 4,16,64 --reps 50 ;;
    train)
      run train 300 $PY experiments/bench/bench_train.py --envs 1 64 1024 4096 --seconds 3 \
        --min-chunk-iters 256 --max-sgd-per-iter 64 ;;
    brax)
      run brax 420 $PY experiments/bench/bench_train.py --config $configs/ddpg_brax_inverted_pendulum.yaml \
        --envs 1 64 1024 4096 --seconds 3 --min-chunk-iters 64 --max-sgd-per-iter 64 ;;
    profile)
      for c in ${PROFILE_CONFIGS:-dqn_cartpole ddpg_pendulum}; do
        run "profile_$c" ${PROFILE_LIMIT:-900} $PY -m hrl.cli profile $configs/$c.yaml \
          --backends jax --grid "${PROFILE_GRID:-full}" \
          --no-progress --run-dir experiments/results/mapping/profile_gpu_$c
      done ;;
    mixed)
      run mixed $(( ${MIXED_BUDGET:-420} + 120 )) $PY experiments/mapping/validate_gpu.py measure \
        --out "${MIXED_OUT:-experiments/results/mapping/gpu}" --budget ${MIXED_BUDGET:-420} ;;
    minatar)
      cores=$(nproc)
      mt="experiments/peers/minatar_throughput.py --seconds ${MINATAR_SECONDS:-10} --rounds ${MINATAR_ROUNDS:-1}"
      run minatar_gpu ${MINATAR_LIMIT:-150} $PY $mt --sides hrl,peer \
        --out experiments/results/peers/minatar/gpu
      run minatar_cpu ${MINATAR_LIMIT:-150} env JAX_PLATFORMS=cpu $PY $mt --sides hrl,hrl-1thread,peer \
        --out experiments/results/peers/minatar/cpu-${cores}core ;;
    crossover)
      run crossover ${CROSSOVER_LIMIT:-150} $PY experiments/rtl/learner_crossover.py measure \
        --steps ${CROSSOVER_STEPS:-100} --reps 3 ;;
    scaling)
      cores=$(nproc)
      run scaling ${SCALING_LIMIT:-300} env JAX_PLATFORMS=cpu $PY experiments/bench/bench_scaling.py \
        --devices 1 2 4 8 16 --processes 1 2 --rounds ${SCALING_ROUNDS:-1} \
        --results experiments/results/scaling-${cores}core ;;
    distributed)
      cores=$(nproc)
      for env in latency cpu; do
        run "distributed_$env" ${DISTRIBUTED_LIMIT:-300} env JAX_PLATFORMS=cpu $PY \
          experiments/bench/bench_distributed.py --out experiments/results/distributed-${cores}core \
          throughput --envs $env
      done ;;
    *) echo "unknown stage $stage"; exit 2 ;;
  esac
done
