#!/usr/bin/env bash
# The GPU path checked in one command on a GPU machine, within 10 minutes of an H200 (each phase has its limit):
#   1. the carried wheels installed (experiments/gpu/fetch-wheels.sh fetches them beforehand);
#   2. the GPU suite, `pytest -m gpu` (tests/gpu): CUDA against CPU, bf16 against float32, the memory savers,
#      the sampler (eager and static) against transformers' generate, resumes and FSDP2 in one process;
#   3. the bench at 64 and 512 responses: the harness's GRPO (its eager and its static, CUDA-graph decoding)
#      beside TRL's GRPOTrainer at equal work in bf16 on a random Qwen2 of Qwen2.5-0.5B's shapes, with step
#      times, tokens/s, peak GPU memory and the update's FLOP/s against the GPU's measured bf16 rate, one timed
#      step a side after one warm-up (two timed steps did not leave the suite its time);
#   4. where the harness's step spends its time outside sampling (experiments/gpu/profile_update.py);
#   5. a summary (python -m reports.gpu_check).
# Everything goes to DIR: check.log, gpu-tests.xml, bench-small.json, bench-large.json, update_profile.txt,
# summary.json, summary.md.
# The exit status is non-zero when a test, the bench or the profile failed.
#
# Usage: bash experiments/gpu/check.sh [--dry-run] [--out DIR] [--wheels DIR]
#   --dry-run    check the wiring on this machine's CPU: the suite (skipped without CUDA) and a tiny bench
#   --out DIR    where results go (default: $OUT when set, else results/gpu-check)
#   --wheels DIR wheels to install first (default: .gpu-wheels when present and not a dry run, since they are
#                built for the GPU machine's Python)
set -uo pipefail
cd "$(dirname "$0")/../.."

usage="usage: bash experiments/gpu/check.sh [--dry-run] [--out DIR] [--wheels DIR]"
dry_run=0
out=${OUT:-results/gpu-check}
wheels=
while [ $# -gt 0 ]; do
  case $1 in
    --dry-run) dry_run=1 ;;
    --out) out=${2:?$usage}; shift ;;
    --wheels) wheels=${2:?$usage}; shift ;;
    *) echo "error: unknown argument '$1'; $usage" >&2; exit 2 ;;
  esac
  shift
done
python=${PYTHON:-python3}
[ -z "$wheels" ] && [ "$dry_run" = 0 ] && wheels=.gpu-wheels

cuda=$("$python" -c "import torch; print(int(torch.cuda.is_available()))" 2>/dev/null || echo 0)
if [ "$dry_run" = 0 ] && [ "$cuda" = 0 ]; then
  echo "error: no CUDA device is visible: run this on a GPU machine, or pass --dry-run to check the wiring on the CPU" >&2
  exit 2
fi


if [ -n "$wheels" ] && [ -d "$wheels" ] && compgen -G "$wheels/*.whl" >/dev/null; then
  site=$(mktemp -d)/site
  "$python" -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$wheels"/*.whl \
    || { echo "error: the wheels in $wheels do not install" >&2; exit 2; }
  export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

mkdir -p "$out"
log="$out/check.log"
: >"$log"
say() { echo "$@" | tee -a "$log"; }
started=$(date +%s)
say "== gpu check $(date -u +%FT%TZ) dry_run=$dry_run cuda=$cuda"
{ command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$python" -c "import platform, torch, transformers, accelerate, peft; print('python', platform.python_version(), \
'torch', torch.__version__, 'transformers', transformers.__version__, 'accelerate', accelerate.__version__, \
'peft', peft.__version__)"; } 2>&1 | tee -a "$log"

say "== the GPU suite"
suite_started=$(date +%s)
require=$([ "$dry_run" = 0 ] && echo 1 || echo 0)
# First, on a fresh GPU: what is right comes before what is fast. Quickest files first; stopped at its limit by an
# interrupt, pytest still writes the report of what ran (the summary counts the test it stopped as interrupted).
suite=(tests/gpu/test_sampling.py tests/gpu/test_updates.py tests/gpu/test_resume.py tests/gpu/test_fsdp2.py)
PYTHONUNBUFFERED=1 REQUIRE_GPU=$require timeout -s INT -k 15 200 "$python" -m pytest -m gpu "${suite[@]}" \
  -p no:cacheprovider -q -rA \
  -W ignore::FutureWarning --junitxml "$out/gpu-tests.xml" 2>&1 | tee -a "$log"
suite_status=${PIPESTATUS[0]}
say "== the GPU suite: exit $suite_status in $(($(date +%s) - suite_started)) s"

# The bench at two batch sizes: 64 responses (P = 8) and 512 (P = 64), G = 8, 256 new tokens, passes of 64 rows.
# Each times TRL, then the harness's three decoding loops (eager; static with a CUDA graph; compiled, the static
# step compiled by torch.compile first); TRL's static-cache generation failed under autocast and is left out.
bench_status=0
for size in small large; do
  say "== the bench ($size)"
  bench_started=$(date +%s)
  if [ "$dry_run" = 1 ]; then
    prompts=$([ $size = small ] && echo 2 || echo 4)
    bench=(--model tiny-qwen2 --device cpu --precision bf16 --prompts "$prompts" --group 2 --max-new-tokens 8
      --warmup 1 --repeats 1 --matmul-size 256 --length-tolerance 10 --threads 2 --micro-batch 2 --no-trl)
  else
    prompts=$([ $size = small ] && echo 8 || echo 64)
    bench=(--model qwen2-0.5b --device cuda --precision bf16 --prompts "$prompts" --group 8 --max-new-tokens 256
      --warmup 1 --repeats 1 --micro-batch 64)
  fi
  limit=$([ $size = small ] && echo 180 || echo 190)
  PYTHONUNBUFFERED=1 timeout "$limit" "$python" -m algos.campaign.bench "${bench[@]}" --engines eager static compiled \
    --json "$out/bench-$size.json" 2>&1 | tee -a "$log"
  status=${PIPESTATUS[0]}
  [ "$status" = 0 ] || bench_status=$status
  say "== the bench ($size): exit $status in $(($(date +%s) - bench_started)) s"
done

say "== where the harness's step spends its time outside sampling"
if [ "$dry_run" = 1 ]; then
  profile=(--model tiny-qwen2 --device cpu --prompts 2 --group 2 --max-new-tokens 8 --repeats 1)
else
  profile=(--model qwen2-0.5b --device cuda --prompts 8 --group 8 --max-new-tokens 256 --repeats 3)
fi
PYTHONUNBUFFERED=1 timeout 55 "$python" experiments/gpu/profile_update.py "${profile[@]}" --precision bf16 --out "$out" \
  2>&1 | tee -a "$log"
profile_status=${PIPESTATUS[0]}

"$python" -m reports.gpu_check --out "$out" --wall-seconds $(($(date +%s) - started)) 2>&1 | tee -a "$log"
say "== gpu check done in $(($(date +%s) - started)) s: suite exit $suite_status, bench exit $bench_status, \
profile exit $profile_status"
[ "$suite_status" = 0 ] && [ "$bench_status" = 0 ] && [ "$profile_status" = 0 ]
