#!/usr/bin/env bash
# Runs the whole test suite once more against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of the C extension, with leak detection on. Fails on any ASan or UBSan report, and on
# any leak whose allocation stack passes through mpamp's C sources (leaks of CPython, NumPy
# and other libraries at exit are not ours and are ignored). Usage: bash .ci/sanitize.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$root"/setup.py "$root"/pyproject.toml "$root"/README.md "$root"/csrc "$root"/mpamp \
    "$root"/tests "$root"/.ci "$work"/
for extra in cuda examples benchmarks tools; do      # tests read some of these
    if [ -d "$root/$extra" ]; then cp -r "$root/$extra" "$work"/; fi
done
find "$work" -name "*.so" -delete
cd "$work"
MPAMP_CUDA=0 MPAMP_SANITIZE=address,undefined python setup.py -q build_ext --inplace --force \
    > build.log 2>&1 || { cat build.log; exit 1; }

py=$(python -c 'import sys; print(sys.executable)')      # the real binary, not a shim
logs="$work/sanlogs"
mkdir -p "$logs"
status=0
env MPAMP_CUDA=0 \
    PYTHONPATH="$work/.ci/no_torch:$work" \
    LD_PRELOAD="$(gcc -print-file-name=libasan.so) $(gcc -print-file-name=libubsan.so)" \
    ASAN_OPTIONS="detect_leaks=1:halt_on_error=1:allocator_may_return_null=1:log_path=$logs/asan" \
    LSAN_OPTIONS="exitcode=0" \
    UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan" \
    "$py" -m pytest -q -p no:cacheprovider tests || status=$?

# Judge the reports: memory errors and UB always count; leaks only when our code allocated.
bad=0
for f in "$logs"/*; do
    [ -f "$f" ] || continue
    if grep -qE "ERROR: AddressSanitizer|runtime error" "$f"; then
        echo "== sanitizer error in $f"; cat "$f"; bad=1
    fi
    if grep -q "LeakSanitizer" "$f" && awk '/^(Direct|Indirect) leak/{blk=""} {blk=blk"\n"$0}
            /^$/{ if (blk ~ /csrc\//) {print blk; found=1} blk=""}
            END{exit !found}' "$f"; then
        echo "== leak in mpamp's C code ($f)"; bad=1
    fi
done
if [ "$status" -ne 0 ] || [ "$bad" -ne 0 ]; then
    echo "sanitizer run FAILED (pytest status $status)"
    exit 1
fi
echo "sanitizer run clean"
