#!/usr/bin/env bash
# tools/gpu_check.sh - the whole check a session runs on a machine with one H100/H200: versions,
# the CUDA build of the extension, the tests that use the real GPU, benchmarks/bench_cuda.py
# against torch; each stage timed with its rc, everything in ONE log ($OUT/gpu_check.log when
# $OUT is set, else gpu_check.log in the repository root; GPU_CHECK_LOG overrides), within 6
# minutes. No network, installs nothing. GPU_CHECK_DRY=1 checks this script on a GPU-less
# machine: no nvidia-smi/build, tests and a --smoke bench under the simulated GPU.
set -u

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT" || exit 2
DRY="${GPU_CHECK_DRY:-0}"
if [ -n "${GPU_CHECK_LOG:-}" ]; then LOG="$GPU_CHECK_LOG"
elif [ -n "${OUT:-}" ]; then LOG="$OUT/gpu_check.log"
else LOG="$ROOT/gpu_check.log"; fi
# the whole run stays under 6 minutes: each stage gets what is left after reserving time for
# the later ones (a slow build shortens the tests, never the total)
BUDGET="${GPU_CHECK_BUDGET:-345}"
PY="${PYTHON:-python}"
TAIL_LINES=200                # per command kept in the log (pytest's -rfE summary is at the end)
TMP="$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

mkdir -p "$(dirname "$LOG")"
exec 3>&1
exec > >(tee "$LOG" >&3) 2>&1     # the log is overwritten: running twice leaves one log
TEE_PID=$!
T0=$SECONDS

say() { printf '%s\n' "$*"; }
section() { printf '\n==== %s  (t=%ds)\n' "$*" "$((SECONDS - T0))"; }
left() { echo $((BUDGET - (SECONDS - T0))); }

# run_capped LIMIT NAME CMD...: runs CMD under `timeout LIMIT`, keeps the last TAIL_LINES lines
# of its output in the log (OK_LINES when it succeeds, where set), says how long it took;
# sets RC (124: it ran out of time)
run_capped() {
    local limit=$1 name=$2; shift 2
    local out="$TMP/$name.out" t=$SECONDS keep
    if [ "$limit" -lt 5 ]; then
        say "$name: not run (no time left in the ${BUDGET}s budget)"
        RC=124
        return
    fi
    say "\$ $* (timeout ${limit}s)"
    timeout -k 5 "$limit" "$@" >"$out" 2>&1
    RC=$?
    keep=$TAIL_LINES
    [ "$RC" -eq 0 ] && [ -n "${OK_LINES:-}" ] && keep=$OK_LINES
    local n; n=$(wc -l <"$out")
    if [ "$n" -gt "$keep" ]; then
        say "... ($((n - keep)) earlier lines cut)"
    fi
    tail -n "$keep" "$out"
    [ "$RC" -eq 124 ] && say "$name: TIMED OUT after ${limit}s"
    say "$name: rc=$RC in $((SECONDS - t))s"
}

finish() {
    section "summary"
    say "gpu_check: build rc=$BUILD_RC tests rc=$TESTS_RC bench rc=$BENCH_RC total $((SECONDS - T0))s"
    local code=0
    for rc in "$BUILD_RC" "$TESTS_RC" "$BENCH_RC"; do
        case "$rc" in 0|skip) ;; *) code=1 ;; esac
    done
    exec 1>&- 2>&-
    wait "$TEE_PID" 2>/dev/null
    exit $code
}

BUILD_RC=- TESTS_RC=- BENCH_RC=-
say "gpu_check: $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(hostname 2>/dev/null), log $LOG$( \
    [ "$DRY" = 1 ] && echo ', DRY RUN (simulated GPU, --smoke)')"
say "checkout: $ROOT at $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '(no git)')"

section "versions"
if [ "$DRY" = 1 ]; then
    say "nvidia-smi: skipped (dry run)"
else
    if command -v nvidia-smi >/dev/null; then
        timeout 30 nvidia-smi 2>&1 | head -n 30
        timeout 30 nvidia-smi --format=csv \
            --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm 2>&1
    else say "nvidia-smi: not found"; fi
fi
NVCC="$(command -v nvcc || { [ -x /usr/local/cuda/bin/nvcc ] && echo /usr/local/cuda/bin/nvcc; })"
if [ -n "$NVCC" ]; then
    say "nvcc: $NVCC: $("$NVCC" --version 2>&1 | tail -n 2 | tr '\n' ' ')"
else
    say "nvcc: not found (PATH, /usr/local/cuda/bin)"
fi
say "python: $("$PY" -c 'import sys; print(sys.version.split()[0], sys.executable)' 2>&1)"
timeout 90 "$PY" - <<'EOF' 2>&1
try:
    import torch
except ImportError as e:
    print("torch: not importable:", e)
else:
    ok = torch.cuda.is_available()
    print(f"torch: {torch.__version__}, CUDA {torch.version.cuda}, available {ok}"
          + (f", {torch.cuda.get_device_name()}" if ok else ""))
EOF
TEST_DEPS=1
if "$PY" -c 'import numpy, pytest; print("numpy", numpy.__version__, "pytest", pytest.__version__)'
then :; else TEST_DEPS=0; say "numpy/pytest missing: the tests are not run (nothing is installed)"; fi
# a per-test limit where pytest-timeout happens to be installed: one hung kernel then fails
# its test instead of eating the stage
PER_TEST=()
if "$PY" -c 'import pytest_timeout' 2>/dev/null; then PER_TEST=(--timeout=60)
    say "pytest-timeout: present (--timeout=60 per test)"
else say "pytest-timeout: absent (only the stage's timeout)"; fi

section "build"
if [ "$DRY" = 1 ]; then
    BUILD_RC=skip
    if ls mpamp/_C*.so >/dev/null 2>&1; then say "build: skipped (dry run; the in-place build is used)"
    else say "build: skipped (dry run) but there is no in-place build: run setup.py build_ext first"
        BUILD_RC=1; finish; fi
else
    export MPAMP_CUDA=1 MPAMP_CUDA_ARCH=90
    # an in-place .so built without CUDA would look up to date to setup.py: force a rebuild
    FORCE=()
    if ls mpamp/_C*.so >/dev/null 2>&1 && ! "$PY" -c 'import mpamp, sys; sys.exit(0 if mpamp.cuda.is_built() else 1)' \
            >/dev/null 2>&1; then FORCE=(--force); say "build: the in-place .so lacks CUDA: --force"; fi
    BUILD_LIMIT=$(( $(left) - 120 )); [ "$BUILD_LIMIT" -gt 200 ] && BUILD_LIMIT=200
    # a build that works needs no more than its last lines in the log; a failed one its tail
    OK_LINES=3 run_capped "$BUILD_LIMIT" build "$PY" setup.py -q build_ext --inplace -j 16 \
        "${FORCE[@]}"
    BUILD_RC=$RC
    if [ "$BUILD_RC" -eq 0 ] && ! "$PY" -c 'import mpamp, sys; print("mpamp", mpamp.__file__, "cuda built", mpamp.cuda.is_built(), "devices", mpamp.cuda.device_count()); sys.exit(0 if mpamp.cuda.is_built() else 1)'; then
        say "build: the extension imports without CUDA"; BUILD_RC=1
    fi
    [ "$BUILD_RC" -ne 0 ] && { say "build failed: stopping (the output's tail is above)"; finish; }
fi

section "tests"
# Which tests use the GPU, and how:
#  - test_cuda.py: the CUDA build and the real cast kernels bit for bit; it finds the device
#    itself, and with MPAMP_TEST_DEVICE set its CPU-tensor cases would get device tensors
#  - test_grad_scaler.py, test_optim.py: the device suite's modules (conftest honours
#    MPAMP_TEST_DEVICE=cuda: every factory on the device); today most fail where an op has no
#    CUDA kernel yet, and -rfE lists them
#  - test_device_sim.py: the simulator beside a CUDA build and a real device (each check in a
#    subprocess with MPAMP_CUDA_SIM=1)
# Not test_device_suite.py: it forces the simulator and reruns 32 modules (CI's job, minutes).
DEVICE_TESTS="${GPU_CHECK_DEVICE_TESTS:-tests/test_grad_scaler.py tests/test_optim.py}"
PYTEST=("$PY" -m pytest -q -p no:cacheprovider -rfE --tb=short "${PER_TEST[@]}")
BENCH_RESERVE=90               # seconds kept for the benchmark whatever the tests do
if [ "$DRY" = 1 ]; then SIM=(MPAMP_CUDA_SIM=1 MPAMP_CUDA_SIM_MB=2048); else SIM=(); fi
if [ "$TEST_DEPS" = 1 ]; then
    TESTS_START=$SECONDS
    TESTS_LIMIT=$(( $(left) - BENCH_RESERVE )); [ "$TESTS_LIMIT" -gt 200 ] && TESTS_LIMIT=200
    stage_left() { echo $((TESTS_LIMIT - (SECONDS - TESTS_START))); }
    RCS=()
    # the real device with CPU defaults (in the dry run: no device, its GPU cases skip)
    run_capped "$(stage_left)" test_cuda env -u MPAMP_CUDA_SIM -u MPAMP_TEST_DEVICE \
        "${PYTEST[@]}" tests/test_cuda.py
    RCS+=("test_cuda=$RC")
    # shellcheck disable=SC2086  # DEVICE_TESTS is a word list
    run_capped "$(stage_left)" device_suite env -u MPAMP_CUDA_SIM "${SIM[@]}" \
        MPAMP_TEST_DEVICE=cuda "${PYTEST[@]}" $DEVICE_TESTS
    RCS+=("device_suite=$RC")
    run_capped "$(stage_left)" device_sim env -u MPAMP_TEST_DEVICE "${PYTEST[@]}" \
        tests/test_device_sim.py
    RCS+=("device_sim=$RC")
    TESTS_RC=0
    for r in "${RCS[@]}"; do [ "${r#*=}" != 0 ] && [ "$TESTS_RC" = 0 ] && TESTS_RC=${r#*=}; done
    say "tests: ${RCS[*]} in $((SECONDS - TESTS_START))s"
else
    TESTS_RC=skip
fi

section "bench"
BENCH_LIMIT=$(( $(left) - 5 )); [ "$BENCH_LIMIT" -gt 150 ] && BENCH_LIMIT=150
if [ "$DRY" = 1 ]; then
    run_capped "$BENCH_LIMIT" bench env "${SIM[@]}" "$PY" benchmarks/bench_cuda.py --smoke
else
    run_capped "$BENCH_LIMIT" bench env -u MPAMP_CUDA_SIM "$PY" benchmarks/bench_cuda.py
fi
BENCH_RC=$RC
finish
