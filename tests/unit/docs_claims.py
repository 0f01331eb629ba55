#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later OR MIT
"""Check that what README.md and docs/*.md name exists in the tree.

Run by tests/unit/03-docs-claims.sh. Only code (inline `spans` and fenced
blocks) is read for paths, commands and options, so prose never trips it:
  - every relative link resolves (file, and #anchor for a .md page);
  - every tree path (scripts/, tests/, src/, userspace/, ...) exists;
  - every `make [-C DIR] TARGET` is a target of that Makefile;
  - every `cnuas-vswitchd --OPTION` is in the switch's option tables, every
    `cnuas-vsctl COMMAND` (and `scripts/lab switch -- COMMAND`) in its
    command table, every `scripts/lab up --OPTION` in scripts/lab.d/up.sh;
  - every counter in docs/debugging.md's switch section is in the switch's
    sources, and every counter `cnuas-vsctl counters` prints is there.
The switch is read by directory (userspace/vswitchd/*.[ch]), not by file.
Usage: docs_claims.py [TREE [DOCS]]: DOCS (default TREE) holds the
README.md and docs/ to check against TREE. Prints one line per problem;
exit 1 if any.
"""
import glob
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
DOCS = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else ROOT)
TREE_DIRS = ("scripts", "tests", "src", "userspace", "docs", "qemu-patches",
             "debian", "rpm", "LICENSES")
problems = []


def read(path, base=None):
    with open(os.path.join(base or ROOT, path), encoding="utf-8") as f:
        return f.read()


def doc_file(path):
    """A page being checked is read from DOCS, everything else from ROOT."""
    if path == "README.md" or path.startswith("docs/"):
        return os.path.join(DOCS, path)
    return os.path.join(ROOT, path)


def problem(doc, line, what):
    problems.append(f"{doc}:{line}: {what}")


def code_of(text):
    """(line number, code) for each inline span and each fenced line."""
    out, fenced = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append((n, line.split(" #")[0]))
            continue
        for m in re.finditer(r"(`+)(.+?)\1", line):
            out.append((n, m.group(2)))
    return out


def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def anchors(path):
    text = re.sub(r"```.*?```", "", read(doc_file(path)), flags=re.S)
    return {slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def check_links(doc, text):
    here = os.path.dirname(doc)
    for n, line in enumerate(text.splitlines(), 1):
        for m in re.finditer(r"\]\(([^)\s]+)\)", line):
            target = m.group(1)
            if re.match(r"[a-z]+:", target):
                problem(doc, n, f"link leaves the repo: {target}")
                continue
            path, _, frag = target.partition("#")
            path = os.path.normpath(os.path.join(here, path)) if path else doc
            if not os.path.exists(doc_file(path)):
                problem(doc, n, f"link to a missing file: {target}")
            elif frag and path.endswith(".md") and frag not in anchors(path):
                problem(doc, n, f"link to a missing heading: {target}")


PATH_RE = re.compile(r"(?<![\w/.~$-])((?:%s)/[\w.+/*-]*)" % "|".join(TREE_DIRS))


def path_exists(p, bases):
    """p from the root or from a base; NAME, <key>, N are placeholders."""
    p = p.rstrip(".,;:")
    if re.search(r"\d\.\.\d", p):         # a range: tests/pkg/20..22
        return True
    pat = re.sub(r"<[^>]*>|(?<=[/.-])[A-Z][A-Z_]*(?=[/.-]|$)", "*", p)
    if re.search(r"/\d+$", pat):            # tests/pkg/25: the file 25-*
        pat += "-*"
    return any(glob.glob(os.path.join(ROOT, b, pat)) for b in bases)


def contexts(text):
    """For each line, the directories its paths may be relative to: the
    root, the directory a `## `dir/`` heading names, and the directory
    in the first cell of a table row under it (as docs/layout.md has)."""
    out, sec = [], None
    for line in text.splitlines():
        h = re.match(r"^#+\s+`([\w./-]+)/`", line)
        if line.startswith("#"):
            sec = h.group(1) if h else None
        bases = ["."]
        if sec:
            bases.append(sec)
            row = re.match(r"^\|\s*`([\w.-]+)/`", line)
            if row:
                bases.append(os.path.join(sec, row.group(1)))
        out.append(bases)
    return out


def check_paths(doc, code, ctx):
    for n, c in code:
        if re.search(r"(^|&&|;)\s*cd\s", c):   # a command line in another tree
            continue
        for m in PATH_RE.finditer(c):
            if not path_exists(m.group(1), ctx[n - 1]):
                problem(doc, n, f"no such path in the tree: {m.group(1)}")


def make_targets(makefile):
    targets = set()
    for line in read(makefile).splitlines():
        m = re.match(r"^([\w.%/ -]+?)\s*:(?!=)", line)
        if m and not line.startswith("\t"):
            targets.update(m.group(1).split())
    return targets


def check_make(doc, code, ctx):
    for n, c in code:
        for m in re.finditer(r"(?<![\w-])make((?:\s+[^\s|;&)]+)*)", c):
            args, mdir, i = m.group(1).split(), None, 0
            while i < len(args):
                a = args[i]
                if a == "-C" and i + 1 < len(args):
                    mdir, i = args[i + 1], i + 2
                    continue
                i += 1
                if a.startswith("-") or "=" in a or not re.match(r"^[a-z][\w-]*$", a):
                    continue
                mks = [os.path.join(d, "Makefile") for d in ([mdir] if mdir else ctx[n - 1])]
                mks = [mk for mk in mks if os.path.exists(os.path.join(ROOT, mk))]
                if not mks:
                    problem(doc, n, f"`make -C {mdir}`: no Makefile there")
                elif not any(a in make_targets(mk) for mk in mks):
                    problem(doc, n, f"`make {a}`: no such target in {' or '.join(mks)}")
                break   # one target per command is named in the docs


def switch_sources():
    files = sorted(glob.glob(os.path.join(ROOT, "userspace/vswitchd/*.[ch]")))
    return "\n".join(open(f, encoding="utf-8").read() for f in files)


SRC = switch_sources()
LONG_OPTS = set(re.findall(r'\{\s*"([a-z][\w-]*)",\s*(?:no|required|optional)_argument', SRC))
VSCTL_CMDS = set(re.findall(r'\{\s*"([a-z][\w-]*)",\s*\d+,\s*[\w ()-]+\}', SRC))
LAB_UP_OPTS = set(re.findall(r"^\s*(--[\w-]+)\)", read("scripts/lab.d/up.sh"), re.M))


def check_commands(doc, code):
    for n, c in code:
        for m in re.finditer(r"(?<![\w/-])cnuas-vswitchd((?:\s+\S+)*)", c):
            for a in m.group(1).split():
                if a.startswith("--") and a[2:].split("=")[0] not in LONG_OPTS:
                    problem(doc, n, f"cnuas-vswitchd has no option {a.split('=')[0]}")
        for m in re.finditer(r"(?:(?<![\w/-])cnuas-vsctl|scripts/lab (?:switch|site \S+) --)"
                             r"((?:\s+[^\s|;&]+)*)", c):
            args = m.group(1).split()
            while args and args[0].startswith("-"):
                o = args.pop(0)
                if o[2:].split("=")[0] not in LONG_OPTS:
                    problem(doc, n, f"cnuas-vsctl has no option {o}")
                if o == "--ctl" and args:
                    args.pop(0)
            if args and re.match(r"^[a-z][\w-]*$", args[0]) and args[0] not in VSCTL_CMDS:
                problem(doc, n, f"cnuas-vsctl has no command {args[0]}")
        for m in re.finditer(r"scripts/lab up((?:\s+[^\s|;&]+)*)", c):
            for a in m.group(1).split():
                if a.startswith("--") and a.split("=")[0] not in LAB_UP_OPTS:
                    problem(doc, n, f"scripts/lab up has no option {a}")


def counter_macro(name):
    body = re.search(r"#define %s\(X\)((?:.*\\\n)*.*)" % name, SRC)
    return set(re.findall(r"X\((\w+)\)", body.group(1))) if body else set()


def check_counters():
    doc = "docs/debugging.md"
    text = read(doc, DOCS)
    sec = re.search(r"^## \d*\.? ?The switch\b.*?(?=^## )", text, re.S | re.M)
    if not sec:
        problem(doc, 0, "no section '## 5. The switch'")
        return
    start = text[:sec.start()].count("\n") + 1
    documented = {}
    for i, line in enumerate(sec.group(0).splitlines()):
        cell = re.match(r"^\|\s*(`.*?)\s*\|", line)
        for name in re.findall(r"`([a-z][a-z0-9_]+)`", cell.group(1) if cell else ""):
            documented[name] = start + i
    words = set(re.findall(r"\w+", SRC))
    for name, n in documented.items():
        if name not in words:
            problem(doc, n, f"counter {name} is not in userspace/vswitchd/")
    printed = counter_macro("VS_COUNTERS")
    if not printed:
        problem(doc, 0, "no VS_COUNTERS(X) in userspace/vswitchd/: cannot check counters")
    for name in sorted(printed - set(documented)):
        problem(doc, start, f"the switch prints {name}, the table does not say what it means")


def main():
    docs = ["README.md"] + sorted(os.path.relpath(p, DOCS) for p in
                                  glob.glob(os.path.join(DOCS, "docs/*.md")))
    for doc in docs:
        text = read(doc, DOCS)
        code, ctx = code_of(text), contexts(text)
        check_links(doc, text)
        check_paths(doc, code, ctx)
        check_make(doc, code, ctx)
        check_commands(doc, code)
    check_counters()
    for p in problems:
        print("FAIL:", p)
    print(f"{len(docs)} pages checked, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
