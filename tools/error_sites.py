"""Finds the error sites of mpamp's C sources: every mp_error(...) call, every bare
`return MP_ERR_*;` and every mp_raise(MP_ERR_*) (a status without a fresh message).

A site is named by file, enclosing function, status and message format, plus an ordinal when
the same triple occurs twice in one function, never by line number, so the committed lists
(tools/error_sites_known.txt, tools/error_sites_allowlist.txt) survive unrelated edits. Used by
tests/test_error_sites.py (fast, static) and tools/audit_error_paths.py (gcov reachability).
Relies on the house style: a function's opening and closing braces sit in column 0.
"""
import os
import re
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KNOWN = os.path.join(ROOT, "tools", "error_sites_known.txt")
ALLOWLIST = os.path.join(ROOT, "tools", "error_sites_allowlist.txt")
EXCEPTION = {"MP_ERR_VALUE": "ValueError", "MP_ERR_TYPE": "TypeError",
             "MP_ERR_INDEX": "IndexError", "MP_ERR_NOMEM": "MemoryError",
             "MP_ERR_SHAPE": "RuntimeError", "MP_ERR_RUNTIME": "RuntimeError",
             "MP_ERR_NO_CUDA": "RuntimeError", "MP_ERR_CUDA": "RuntimeError",
             "MP_ERR_NOT_IMPLEMENTED": "NotImplementedError"}

_CALL = re.compile(r"\bmp_error\s*\(")
_BARE = re.compile(r"\breturn\s+(MP_ERR_\w+)\s*;|\bmp_raise\s*\(\s*(MP_ERR_\w+)\s*\)")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')
_SKIP = ("status.c", "status.h")        # the definition of mp_error itself


@dataclass(frozen=True)
class Site:
    file: str          # relative to the project root, '/' separated
    function: str
    status: str        # MP_ERR_* constant, or the expression passed (e.g. 'st')
    message: str       # the format string; '-' for a bare status
    ordinal: int       # 1 for the first identical (file, function, status, message)
    first_line: int    # where it is now (not part of its identity)
    last_line: int

    @property
    def key(self):
        suffix = f" #{self.ordinal}" if self.ordinal > 1 else ""
        return f"{self.file} | {self.function} | {self.status} | {self.message}{suffix}"

    @property
    def exception(self):
        return EXCEPTION.get(self.status, "(depends on the status passed)")


def _strip_comments(text):
    """Comments blanked out (newlines kept, so line numbers stay), strings untouched."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text[i] in "\"'":
            m = re.compile(r'%s(?:[^%s\\\n]|\\.)*%s' % ((text[i],) * 3)).match(text, i)
            j = m.end() if m else i + 1
            out.append(text[i:j])
            i = j
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _mask_strings(text):
    """The same text with the insides of string and char literals blanked (same offsets)."""
    return re.sub(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'',
                  lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], text)


def _functions(lines):
    """Per line (0-based), the name of the function whose body contains it, or ''."""
    owner, current, candidate = [], "", ""
    for line in lines:
        if line.startswith("{") and candidate:
            current = candidate
        elif line.startswith("}"):
            owner.append(current)
            current, candidate = "", ""
            continue
        elif line[:1].isalpha() or line[:1] == "_":
            m = re.search(r"(\w+)\s*\(", line)
            candidate = m.group(1) if m and not line.rstrip().endswith(";") else ""
        owner.append(current)
    return owner


def _call_args(text, start):
    """The text inside the parentheses of the call whose '(' is at start, and its end."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "\"'":
            m = re.compile(r'%s(?:[^%s\\]|\\.)*%s' % ((c,) * 3)).match(text, i)
            i = m.end() if m else i + 1
            continue
        depth += c == "("
        depth -= c == ")"
        if depth == 0:
            return text[start + 1:i], i
        i += 1
    raise ValueError("unbalanced parentheses")


def _split_first(args):
    """(first argument, rest) at the first top-level comma."""
    depth = 0
    for i, c in enumerate(args):
        depth += c in "(["
        depth -= c in ")]"
        if c == "," and depth == 0:
            return args[:i].strip(), args[i + 1:]
    return args.strip(), ""


def _format_of(rest):
    """The concatenated string literals that open the second argument."""
    rest = rest.lstrip()
    parts = []
    while rest.startswith('"'):
        m = _STRING.match(rest)
        parts.append(m.group(1))
        rest = rest[m.end():].lstrip()
    return "".join(parts) if parts else "<" + _split_first(rest)[0] + ">"


def sites_in(path, rel):
    with open(path, encoding="utf-8") as fh:
        text = _strip_comments(fh.read())
    owner = _functions(text.split("\n"))
    code = _mask_strings(text)          # where to look for calls; text: where to read them
    found = []
    for m in _CALL.finditer(code):
        args, end = _call_args(text, m.end() - 1)
        status, rest = _split_first(args)
        found.append((m.start(), end, status, " ".join(_format_of(rest).split())))
    for m in _BARE.finditer(code):
        found.append((m.start(), m.end(), m.group(1) or m.group(2), "-"))
    sites, seen = [], {}
    for start, end, status, message in sorted(found):
        line = text.count("\n", 0, start)
        ident = (rel, owner[line] or "<file scope>", status, message)
        seen[ident] = seen.get(ident, 0) + 1
        sites.append(Site(*ident, seen[ident], line + 1, text.count("\n", 0, end) + 1))
    return sites


def find_sites(root=ROOT):
    """Every error site under csrc/ (C sources and headers), in file order."""
    out = []
    for folder, _, files in sorted(os.walk(os.path.join(root, "csrc"))):
        for name in sorted(files):
            if name.endswith((".c", ".h")) and name not in _SKIP:
                path = os.path.join(folder, name)
                out += sites_in(path, os.path.relpath(path, root).replace(os.sep, "/"))
    return out


def read_list(path):
    """{site key: note} from a list file: 'key' or 'key  ## note' lines; '#' starts a comment."""
    entries = {}
    if not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            key, _, note = line.partition("  ## ")
            entries[key.strip()] = note.strip()
    return entries
