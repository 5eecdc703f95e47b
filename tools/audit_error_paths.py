"""Audit: is every error site of the C core reached by the test suite?

Copies the project to a temporary folder, builds the extension there with gcov instrumentation
(MPAMP_COVERAGE=1, MPAMP_CUDA=0; the in-place build is not touched), runs the test suite against
that build, and prints every error site (tools/error_sites.py: mp_error calls, bare
`return MP_ERR_*`, mp_raise(MP_ERR_*)) with its hit count and the Python exception its status
maps to. Sites never hit must be in tools/error_sites_allowlist.txt with a reason; the exit
status is 1 when one is not. Takes a few minutes. Usage, from the project root:

    python tools/audit_error_paths.py                  # whole suite
    python tools/audit_error_paths.py --write-known    # and rewrite error_sites_known.txt
    python tools/audit_error_paths.py -- -x tests/test_errors.py    # pytest arguments
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import error_sites  # noqa: E402

COPY = ["setup.py", "pyproject.toml", "README.md", "csrc", "mpamp", "tests", ".ci", "cuda",
        "examples", "benchmarks", "tools"]


def build_and_test(work, pytest_args):
    """Instrumented build + test run in work; returns pytest's exit status."""
    for name in COPY:
        src = os.path.join(error_sites.ROOT, name)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(work, name),
                            ignore=shutil.ignore_patterns("*.so", "__pycache__", "build"))
        elif os.path.exists(src):
            shutil.copy(src, work)
    env = {**os.environ, "MPAMP_COVERAGE": "1", "MPAMP_CUDA": "0"}
    build = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace",
                            "--force"], cwd=work, env=env, capture_output=True, text=True)
    if build.returncode != 0:
        sys.exit(f"instrumented build failed:\n{build.stdout[-3000:]}{build.stderr[-3000:]}")
    env["PYTHONPATH"] = work + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args]
    print("running:", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, cwd=work, env=env).returncode


def line_counts(work):
    """{(relative source path, line): count} summed over every .gcda file of the build."""
    counts = {}
    for folder, _, files in os.walk(os.path.join(work, "build")):
        for name in files:
            if not name.endswith(".gcda"):
                continue
            out = subprocess.run(["gcov", "-j", "-t", os.path.join(folder, name)], cwd=work,
                                 capture_output=True, text=True, check=True).stdout
            for doc in _json_docs(out):
                for f in doc["files"]:
                    rel = os.path.relpath(os.path.join(work, f["file"]), work)
                    for ln in f["lines"]:
                        key = (rel.replace(os.sep, "/"), ln["line_number"])
                        counts[key] = counts.get(key, 0) + ln["count"]
    return counts


def _json_docs(text):
    """gcov -t prints one JSON document per data file, one after another."""
    dec, i = json.JSONDecoder(), 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i < len(text):
            doc, i = dec.raw_decode(text, i)
            yield doc


def hits(site, counts):
    """The largest count over the lines of the site's statement (None: no code there)."""
    found = [counts[(site.file, n)] for n in range(site.first_line, site.last_line + 1)
             if (site.file, n) in counts]
    return max(found) if found else None


def report(sites, counts, allow):
    """Prints the table and the totals; returns the keys of the reached sites and the count
    of sites neither reached nor allowlisted."""
    reached, missing = [], 0
    print(f"{'hits':>9}  {'exception':<13} site")
    for s in sites:
        n = hits(s, counts)
        mark = "" if n else ("  [allowlisted]" if s.key in allow else "  [NOT REACHED]")
        print(f"{'-' if n is None else n:>9}  {s.exception:<13} {s.key}{mark}")
        if n:
            reached.append(s.key)
        elif s.key not in allow:
            missing += 1
    also = [k for k in reached if k in allow]
    print(f"\n{len(sites)} error sites: {len(reached)} reached by the tests, "
          f"{sum(1 for s in sites if s.key in allow and s.key not in reached)} allowlisted, "
          f"{missing} neither")
    for k in also:
        print(f"reached although allowlisted (could leave the allowlist): {k}")
    return reached, missing


def write_known(reached, allow):
    keys = sorted(k for k in reached if k not in allow)
    with open(error_sites.KNOWN, "w", encoding="utf-8") as fh:
        fh.write("# Error sites of csrc/ that the test suite reaches (tools/audit_error_paths.py "
                 "--write-known).\n# One per line: file | function | status | message "
                 "format [#ordinal]. tests/test_error_sites.py\n# fails on a site that is "
                 "neither here nor in error_sites_allowlist.txt.\n")
        fh.writelines(k + "\n" for k in keys)
    print(f"wrote {len(keys)} sites to {error_sites.KNOWN}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-known", action="store_true",
                    help="rewrite tools/error_sites_known.txt with the reached sites")
    ap.add_argument("--keep", action="store_true", help="keep the temporary build folder")
    ap.add_argument("pytest_args", nargs="*", help="after --: arguments for pytest")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mpamp-error-audit-")
    try:
        status = build_and_test(work, args.pytest_args or ["tests"])
        counts = line_counts(work)
    finally:
        if args.keep:
            print(f"build kept in {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    sites = error_sites.find_sites()
    allow = error_sites.read_list(error_sites.ALLOWLIST)
    reached, missing = report(sites, counts, allow)
    if status != 0:
        print(f"note: pytest exited with status {status}")
    if args.write_known:
        write_known(reached, allow)
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
