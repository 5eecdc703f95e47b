"""Two builds of mpamp, alternated: runs this checkout's benchmarks/bench_overhead.py against
this checkout's build and against another checkout's build (its own in-place build, e.g. a
`git worktree` of the previous commit), in separate processes, OLD NEW OLD NEW ..., and prints
the per-case medians over the pairs and new/old. Both runs use the same script (this
checkout's), so they time the same cases.

Run: python benchmarks/bench_builds_paired.py /path/to/old/checkout [--pairs 5] [-- ARGS]
(ARGS go to bench_overhead.py, e.g. --repeat 5 --calls 10000).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
LINE = re.compile(r"^(.{44}) +([0-9.]+)us")


def run(checkout, args):
    """bench_overhead.py (this checkout's copy) against checkout's build: {case: us}."""
    with tempfile.TemporaryDirectory() as d:
        bench = os.path.join(d, "benchmarks")
        os.makedirs(bench)
        for name in ("bench_overhead.py", "machine.py"):
            shutil.copy(os.path.join(HERE, name), bench)
        # machine.use_inplace_build() puts the script's parent folder first on sys.path:
        # point it at the checkout being measured
        os.symlink(os.path.join(os.path.abspath(checkout), "mpamp"), os.path.join(d, "mpamp"))
        out = subprocess.run([sys.executable, os.path.join(bench, "bench_overhead.py"), *args],
                             capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        m = LINE.match(line)
        if m:
            res[m.group(1).strip()] = float(m.group(2))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="the other checkout (with its in-place build)")
    ap.add_argument("--pairs", type=int, default=5)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    rest = argv[cut + 1:]
    new = os.path.dirname(HERE)
    samples = {"old": [], "new": []}
    for i in range(a.pairs):
        for tag, checkout in (("old", a.old), ("new", new)):
            samples[tag].append(run(checkout, rest))
            print(f"pair {i + 1}/{a.pairs} {tag} done", file=sys.stderr)
    cases = [c for c in samples["new"][0] if all(c in s for s in samples["old"])]
    print(f"{'case':44s} {'old':>10s} {'new':>10s} {'new/old':>8s}   (medians of {a.pairs})")
    for c in cases:
        o = statistics.median(s[c] for s in samples["old"])
        n = statistics.median(s[c] for s in samples["new"])
        print(f"{c:44s} {o:8.2f}us {n:8.2f}us {n / o:8.3f}")


if __name__ == "__main__":
    main()
