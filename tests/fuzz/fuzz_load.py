"""Coverage-guided fuzz target for mpamp.load (atheris + libFuzzer).

Every input is the bytes of a would-be checkpoint; load_check.check() states the property (it
loads, or raises RuntimeError / pickle.UnpicklingError naming the file; no SystemError anywhere
in the chain; nothing imports, executes or opens files). Coverage comes from the Python lines
of mpamp.serialization, zipfile and pickle (the loader runs pickle's pure-Python unpickler);
zip_mutator.py keeps most mutated inputs valid archives, so mutations reach the unpickler.
libFuzzer's flags pass through, e.g. a long run from the project root:

    python tests/fuzz/fuzz_load.py -max_total_time=3600 -rss_limit_mb=2048 /tmp/mpamp-corpus

The first corpus folder gets the seed corpus (load_seeds.py) when it is empty; without one a
temporary folder is used. A failing input is saved as ./crash-<sha1>; replay it with
`python tests/fuzz/fuzz_load.py crash-<sha1>`. tests/test_fuzz_load.py runs a short session.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _corpus_args(argv):
    """argv with a seeded corpus folder: the first folder given, or a new temporary one."""
    import load_seeds
    folders = [a for a in argv[1:] if not a.startswith("-") and not os.path.isfile(a)]
    if not folders:
        if any(not a.startswith("-") for a in argv[1:]):
            return argv              # replaying files: no corpus
        folders = [tempfile.mkdtemp(prefix="mpamp-load-corpus-")]
        argv = argv + folders
    if not os.path.isdir(folders[0]) or not os.listdir(folders[0]):
        n = load_seeds.write_corpus(folders[0])
        print(f"fuzz_load: wrote {n} seeds to {folders[0]}", file=sys.stderr)
    return argv


def main(argv):
    import atheris
    # The project root first, so the in-place build is fuzzed (as pytest from the root does).
    sys.path[:0] = [HERE, ROOT]
    import zip_mutator               # before the re-import below: its zipfile stays plain
    plain = ("zipfile", "pickle")    # imported by atheris already: import instrumented copies
    for name in [m for m in sys.modules if m.split(".")[0] in plain]:
        del sys.modules[name]
    with atheris.instrument_imports(include=["mpamp.serialization", "load_check", *plain]):
        import pickle  # noqa: F401 - the loader's unpickler is pickle's pure-Python one
        import zipfile  # noqa: F401
        import load_check
    load_check.check(b"")            # arm the audit hook outside the timed loop

    def one_input(data):
        load_check.check(data)

    def mutator(data, max_size, seed):
        return zip_mutator.mutate(data, max_size, seed, atheris.Mutate)

    atheris.Setup(_corpus_args(argv), one_input, custom_mutator=mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
