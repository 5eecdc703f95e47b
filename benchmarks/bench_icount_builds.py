"""Instructions per call of the small-op cases, this checkout's build against another's, counted
by valgrind's callgrind (exact, so it holds on a noisy shared machine where timings do not).

Each case runs twice per build in a fresh interpreter, with 0 and with N calls after a warm-up;
the per-call count is the difference over N, main thread only (--separate-threads), with
MPAMP_NUM_THREADS=1 and MPAMP_CPU_ISA=avx2 (valgrind has no AVX-512; the per-call overhead is
the same code at every level). Run-to-run variation of the interpreter's start-up leaves about
+-150 instructions per call at N=20000 (+-1500 per training step, which runs N/10 times).

Run: python benchmarks/bench_icount_builds.py /path/to/old/checkout [--calls 20000]
     [--cases add,sum,softmax,ce,linear,step]   (needs valgrind)
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

CASE_SCRIPT = r"""
import sys
sys.path.insert(0, sys.argv[1])
import mpamp as m
import mpamp.nn.functional as F
case, n = sys.argv[2], int(sys.argv[3])
m.manual_seed(0)
a, b = m.ones(16), m.ones(16)
x, t = m.randn(32, 10), m.randint(0, 10, (32,))
w, bias = m.randn(10, 10, requires_grad=True), m.zeros(10, requires_grad=True)
model = m.nn.Sequential(m.nn.Linear(10, 10), m.nn.ReLU(), m.nn.Linear(10, 1))
xx, yy = m.randn(32, 10), m.randn(32, 1)
opt = m.optim.Adam(model.parameters(), lr=1e-3)
def step():
    opt.zero_grad()
    F.mse_loss(model(xx), yy).backward()
    opt.step()
fn = {"add": lambda: a + b, "sum": lambda: a.sum(), "softmax": lambda: F.softmax(x, -1),
      "ce": lambda: F.cross_entropy(x, t), "linear": lambda: F.linear(x, w, bias),
      "step": step}[case]
for _ in range(20):
    fn()
for _ in range(n):
    fn()
"""


def count(script, checkout, case, n):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg")
        env = dict(os.environ, PYTHONHASHSEED="0", MPAMP_NUM_THREADS="1", MPAMP_CPU_ISA="avx2")
        subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                        f"--callgrind-out-file={out}", sys.executable, script,
                        os.path.abspath(checkout), case, str(n)],
                       env=env, check=True, capture_output=True)
        main = sorted(glob.glob(out + "-01"))[0]
        for line in open(main):
            if line.startswith("summary:"):
                return int(line.split()[1])
    raise RuntimeError("no summary line in the callgrind output")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", help="the other checkout (with its in-place build)")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--cases", default="add,sum,softmax,ce,linear,step")
    a = ap.parse_args()
    new = os.path.dirname(HERE)
    with tempfile.TemporaryDirectory() as d:
        script = os.path.join(d, "case.py")
        with open(script, "w") as f:
            f.write(CASE_SCRIPT)
        print(f"{'case':10s} {'old':>10s} {'new':>10s} {'new/old':>8s}   (instructions per call)")
        for case in a.cases.split(","):
            n = a.calls // 10 if case == "step" else a.calls
            per = {}
            for name, root in (("old", a.old), ("new", new)):
                per[name] = (count(script, root, case, n) - count(script, root, case, 0)) / n
            print(f"{case:10s} {per['old']:10.0f} {per['new']:10.0f} "
                  f"{per['new'] / per['old']:8.3f}", flush=True)


if __name__ == "__main__":
    main()
