"""Every error site of the C core is accounted for: reached by the test suite (listed in
tools/error_sites_known.txt, which tools/audit_error_paths.py checks with a gcov build) or
allowlisted with a reason (tools/error_sites_allowlist.txt). Static and fast: it parses csrc/,
so a new mp_error call (or bare `return MP_ERR_*`) fails here until it has a test or a reason.
Sites are named by file, function, status and message format, never by line number."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tools"))
import error_sites  # noqa: E402

SITES = error_sites.find_sites()
KNOWN = error_sites.read_list(error_sites.KNOWN)
ALLOW = error_sites.read_list(error_sites.ALLOWLIST)
HOW = ("write a test that reaches it through the public API and asserts the exception type and "
       "message, then run `python tools/audit_error_paths.py --write-known` (a gcov build of "
       "the suite, a few minutes); or add it to tools/error_sites_allowlist.txt with the reason "
       "no test can reach it")


def test_every_site_is_known_or_allowlisted():
    new = [f"{s.key}  (line {s.first_line})" for s in SITES
           if s.key not in KNOWN and s.key not in ALLOW]
    assert not new, f"error sites without a test or a reason ({HOW}):\n" + "\n".join(new)


def test_lists_name_only_existing_sites():
    keys = {s.key for s in SITES}
    stale = [k for k in list(KNOWN) + list(ALLOW) if k not in keys]
    assert not stale, ("no such error site any more (remove the line, or rerun "
                       "tools/audit_error_paths.py --write-known):\n" + "\n".join(stale))


def test_allowlist_gives_reasons_and_does_not_overlap():
    assert all(ALLOW.values()), [k for k, why in ALLOW.items() if not why]
    assert not set(KNOWN) & set(ALLOW)


def test_sites_carry_their_exception():
    assert len(SITES) > 100
    assert all(s.function != "<file scope>" for s in SITES)
    view = [s for s in SITES if s.file == "csrc/core/view.c" and s.function == "mp_wrap_dim"]
    assert [(s.status, s.exception) for s in view] == [("MP_ERR_INDEX", "IndexError")]


C_SAMPLE = r'''
/* mp_error(MP_ERR_VALUE, "in a comment") is not a site */
static mp_status helper(int x,
                        int y)
{
    if (x)
        return mp_error(MP_ERR_VALUE, "bad %s "
                        "value", "x");   // mp_error(MP_ERR_TYPE, "nor this")
    if (y)
        return mp_error(MP_ERR_VALUE, "bad %s value", "y");
    return MP_ERR_NOMEM;
}

mp_status other(void)
{
    const char *s = "return MP_ERR_VALUE;";
    return mp_error(st, "%s: %s", op, s);
}
'''


def test_parser(tmp_path):
    path = tmp_path / "sample.c"
    path.write_text(C_SAMPLE)
    got = [(s.key, s.first_line, s.last_line) for s in error_sites.sites_in(str(path), "s.c")]
    assert got == [("s.c | helper | MP_ERR_VALUE | bad %s value", 7, 8),
                   ("s.c | helper | MP_ERR_VALUE | bad %s value #2", 10, 10),
                   ("s.c | helper | MP_ERR_NOMEM | -", 11, 11),
                   ("s.c | other | st | %s: %s", 17, 17)]


@pytest.mark.parametrize("line", ["x  ## why", "x"])
def test_list_format(tmp_path, line):
    path = tmp_path / "list.txt"
    path.write_text(f"# comment\n\n{line}\n")
    assert error_sites.read_list(str(path)) == {"x": "why" if "##" in line else ""}
