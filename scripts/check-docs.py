#!/usr/bin/env python3
"""Checks that the documentation names only things that exist (run by ctest
as the "docs" test, and so by CI).

Read: README.md, docs/*.md and every README.md below the root (the whole
text), and the comments of the sources in the folders of COMMENT_DIRS
(C, C++, CUDA, Python, CMake and shell comments; Python docstrings count as
comments). A finding is printed as FILE:LINE: names X, which does not exist,
and makes the exit status 1. What is checked:

  paths        a repo path: a slash and an extension (cpu/hash_cpu.c,
               tandem/view.h), or a top folder of the tree in front
               (tests/hooks); resolved against the root and the doc's own
               folder; one whose first folder is not a top folder may also
               be the tail of a path in the tree (detail/keybits.h, the
               include path tandem/view.h). Braces and globs are expanded
               (hash_cpu_k{32,64}v32.c, src/*_api.c). A file named in a
               doc's code or backticks without a folder (gpu_common.cuh)
               must exist somewhere in the tree (so must one in a comment).
               Markdown link targets are resolved against the doc's folder.
               FOO.in counts for FOO (configured files), dir/prog for
               dir/prog.c (a program built from it). Build outputs, paths
               under a $VARIABLE, system headers (<cuda.h>) and absolute
               paths are not checked: see BUILD_PREFIXES.
  identifiers  tdm_*, tdm__*, TDM_*, TANDEM_* anywhere in a doc or comment
               must occur in the code of the tree (comments and *.md files
               left out, string literals kept); a name made by token pasting
               (tdm__hs_lookup_k64v64 from tdm__hs_lookup_##SFX) counts when
               a pasted prefix of it occurs and the rest (k64v64) is passed
               somewhere; NAME* and NAME_{..} need some name with that
               prefix.
  CMake        -DTANDEM_X and cmake.define.TANDEM_X need option(TANDEM_X)
               or set(TANDEM_X ... CACHE ...).
  environment  TANDEM_X next to the words "environment variable" needs a
               reader: getenv("TANDEM_X"), os.environ, $ENV{TANDEM_X}, a
               shell script's $TANDEM_X or pyproject's env = "TANDEM_X".
  make         `make X VAR=...` in a doc's code: X a target of the
               top-level Makefile, VAR one of its variables.
  generated    a block between "<!-- generated: results_table.py KIND
               MACHINE -->" and "<!-- end generated -->" in README.md or
               docs/*.md must be what scripts/results_table.py makes of
               docs/data/MACHINE/ (the benchmark CSVs and meta.json): a
               stale block is a finding; results_table.py --write fixes it.
  programs     --flag after the name of a program built by an
               add_executable(NAME ...) of the tree, or after
               python -m MODULE, in the same command of a doc's code: the
               string "--flag" must occur in that program's sources (the
               folder of its CMakeLists.txt, or the module's file).

Names of things outside the tree that docs name on purpose go into
scripts/check-docs.allow, one a line, with a comment saying why.

Usage: scripts/check-docs.py [--self-test] [ROOT]
  ROOT defaults to the folder above this script. --self-test first checks a
  small planted tree and fails unless every planted error, and nothing else,
  is reported; then it checks ROOT.
"""
import fnmatch
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import results_table  # noqa: E402  (the generator of the docs' benchmark tables)

# Comments of sources in these top folders are checked, besides the docs.
COMMENT_DIRS = ("include", "src", "cpu", "gpu", "mpi", "judge", "python", "scripts",
                "bench", "examples", "tests", "cmake", ".ci")
SOURCE_EXT = {".c": "c", ".h": "c", ".cu": "c", ".cuh": "c", ".cc": "c", ".cpp": "c", ".hpp": "c",
              ".py": "py", ".sh": "sh", ".cmake": "sh", ".in": None, ".toml": "sh"}
# Files a doc may name without a folder (FILE.ext in code or backticks).
BARE_EXT = ("c", "h", "cu", "cuh", "cc", "cpp", "hpp", "py", "sh", "md", "cmake", "supp", "toml")
# Paths that name build outputs, the caller's files or the system: not checked.
BUILD_PREFIXES = re.compile(r"^(build[\w.-]*/|\$\(BUILD\)|\$\{?BUILD\b|BUILD(_DIR)?/|\$\{?OUT\b|\$\{?\w+\}?/|"
                            r"/|~|\.\./\.\.|venv/|out/|[\w.-]+\.(so|a|o)$|"
                            r"CMakeFiles/|dist/|wheelhouse/|third_party/)")
SKIP_DIRS = {".git", "__pycache__", "venv", ".venv", "node_modules", "_skbuild", ".pytest_cache",
             ".hypothesis"}
SELF = {"scripts/check-docs.py", "scripts/check-docs.allow"}

IDENT = re.compile(r"(?:(?<=-D)|(?<![\w$]))(tdm_\w*|TDM_\w*|TANDEM_\w*)(\*|\{)?")
WORD = re.compile(r"[A-Za-z_]\w*")
# A path-like token: runs of name characters, braces with commas, $(VAR), and slashes.
PATHTOK = re.compile(r"(?<![\w.$/\\-])((?:\.{1,2}/)?(?:[\w.*~+-]|\{[\w.,]*\}|\$\(\w+\)|\$\{\w+\}|\$\w+)+"
                     r"(?:/(?:[\w.*+-]|\{[\w.,]*\}|<[\w-]+>)*)*)")
EXT = re.compile(r"\.[A-Za-z][A-Za-z0-9]*$")


def read(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:4096]:
        return None
    return data.decode("utf-8", "replace")


def split(text, kind):
    """(code, comments) of a source of kind "c" (C, C++, CUDA), "py" or "sh"
    (shell, CMake, TOML, make: '#' comments): the code with its comments
    blanked, and [(line, text)] of the comments. Python's triple-quoted
    strings (docstrings) count as comments."""
    code, comments = [], []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if kind == "c" and text.startswith("//", i) or kind != "c" and c == "#" and (
                kind == "py" or i == 0 or text[i - 1] in " \t\n") and not text.startswith("#!", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, text[i + (2 if kind == "c" else 1):j]))
            i = j
            continue
        end = "*/" if kind == "c" and text.startswith("/*", i) else \
            text[i:i + 3] if kind == "py" and text.startswith(('"""', "'''"), i) else None
        if end:
            j = text.find(end, i + len(end))
            j = n if j < 0 else j
            body = text[i + len(end):j]
            comments.append((line, body))
            line += body.count("\n")
            code.append("\n" * body.count("\n"))
            i = j + len(end)
        elif kind != "sh" and c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            code.append(text[i:j + 1])
            i = j + 1
        else:
            line += c == "\n"
            code.append(c)
            i += 1
    return "".join(code), comments


def kind_of(rel):
    base = os.path.basename(rel)
    if base in ("CMakeLists.txt", "Makefile") or rel == ".ci/run":
        return "sh"
    root, ext = os.path.splitext(base)
    if ext == ".in":
        return kind_of(rel[:-3]) if os.path.splitext(root)[1] else "sh"
    return SOURCE_EXT.get(ext)


def brace_expand(s):
    m = re.search(r"\{([^{}]*)\}", s)
    if not m:
        return [s]
    out = []
    for alt in m.group(1).split(","):
        out += brace_expand(s[:m.start()] + alt + s[m.end():])
    return out


class Tree:
    def __init__(self, root):
        self.root = root
        self.files, self.dirs = set(), set()
        for d, subdirs, files in os.walk(root):
            rel = os.path.relpath(d, root)
            rel = "" if rel == "." else rel
            keep = []
            for s in subdirs:
                # third_party: fetched dependencies (scripts/fetch-cuco.sh), not the tree's text
                if s in SKIP_DIRS or s.endswith(".egg-info") or (
                        rel == "" and (s.startswith("build") or s in ("out", "third_party"))):
                    continue
                keep.append(s)
            subdirs[:] = keep
            for s in keep:
                self.dirs.add(os.path.join(rel, s))
            for f in files:
                self.files.add(os.path.join(rel, f))
        self.top = {p for p in self.dirs if "/" not in p} | {"include", "src", "cpu", "gpu", "mpi", "judge",
                                                            "python", "tests", "bench", "docs", "examples",
                                                            "scripts", "cmake", ".ci"}
        self.basenames = {os.path.basename(p) for p in self.files}
        self.all_paths = self.files | self.dirs
        self.tokens, self.paste, self.env, self.cache = set(), set(), set(), set()
        self.make_targets, self.make_vars = set(), set()
        self.comments = {}  # rel -> [(line, text)]
        self.programs = {}  # name -> list of source texts
        sources = {}
        for rel in sorted(self.files):
            if rel in SELF or rel.endswith(".md"):
                continue
            k = kind_of(rel)
            if k is None:
                continue
            text = read(os.path.join(root, rel))
            if text is None:
                continue
            code, com = split(text, k)
            sources[rel] = code
            if rel.split("/")[0] in COMMENT_DIRS or rel in ("Makefile", "CMakeLists.txt"):
                self.comments[rel] = com
            self.tokens.update(WORD.findall(code))
            self.paste.update(re.findall(r"\b(\w+)\s*##", code))
            self.env.update(re.findall(r"getenv\s*\(\s*\"(\w+)\"", code))
            self.env.update(re.findall(r"os\.(?:environ(?:\.get)?|getenv)\s*[\[(]\s*['\"](\w+)['\"]", code))
            self.env.update(re.findall(r"\$ENV\{(\w+)\}", code))
            self.env.update(re.findall(r"\benv\s*=\s*\"(\w+)\"", code))
            if k == "sh" and not rel.endswith(("CMakeLists.txt", ".cmake", "Makefile")):
                self.env.update(re.findall(r"\$\{?(TANDEM_\w+)", code))
            if os.path.basename(rel) == "CMakeLists.txt" or rel.endswith(".cmake"):
                self.cache.update(re.findall(r"\boption\s*\(\s*(\w+)", code))
                self.cache.update(re.findall(r"\bset\s*\(\s*(\w+)[^)]*?\bCACHE\b", code))
                for name in re.findall(r"\badd_executable\s*\(\s*([\w.-]+)", code):
                    self.programs.setdefault(name, os.path.dirname(rel))
        # A program's sources: every source below the folder of its CMakeLists.txt.
        for name, folder in list(self.programs.items()):
            pre = folder + "/" if folder else ""
            self.programs[name] = "\n".join(t for r, t in sources.items() if r.startswith(pre))
        mk = read(os.path.join(root, "Makefile")) or ""
        mk_code, _ = split(mk, "sh")
        for m in re.finditer(r"^([\w. -]+?)\s*:(?!=)", mk_code, re.M):
            self.make_targets.update(m.group(1).split())
        for m in re.finditer(r"^\.PHONY\s*:(.*)$", mk_code, re.M):
            self.make_targets.update(m.group(1).split())
        self.make_vars.update(re.findall(r"^(\w+)\s*[?:+]?=", mk_code, re.M))
        self.make_vars.update(re.findall(r"\$\((\w+)\)", mk_code))
        self.sources = sources
        allow = read(os.path.join(root, "scripts/check-docs.allow")) or ""
        self.allow = {ln.split("#")[0].strip() for ln in allow.splitlines()} - {""}

    # ---- existence -------------------------------------------------------------
    def ident_exists(self, name, prefix):
        if name in self.allow:
            return True
        if prefix:
            return any(t.startswith(name) for t in self.tokens)
        if name in self.tokens:
            return True
        # A pasted name: a prefix that is pasted (P##x) and a rest that the code
        # passes as an argument somewhere (k64v64 in HS_TRAITS(..., k64v64)).
        return any(name.startswith(p) and len(p) >= 5 and name[len(p):] in self.tokens for p in self.paste)

    def path_exists(self, path, docdir, suffix_ok):
        path = path.rstrip("/")
        if path.startswith("./"):
            path = path[2:]
        for p in brace_expand(path):
            if not self._one_path(p, docdir, suffix_ok):
                return False
        return True

    def _one_path(self, p, docdir, suffix_ok):
        cands = [os.path.normpath(p)]
        if docdir:
            cands.append(os.path.normpath(os.path.join(docdir, p)))
        for c in cands:
            if c.startswith(".."):
                continue
            if any(ch in c for ch in "*?["):
                pat = c
                if any(fnmatch.fnmatchcase(f, pat) for f in self.all_paths):
                    return True
            elif c in self.all_paths or c + ".in" in self.files or c in self.allow:
                return True
            elif not EXT.search(c) and any(f.startswith(c + ".") and "/" not in f[len(c):] for f in self.files):
                return True  # examples/fused_lookup: the program built from examples/fused_lookup.cu
        if suffix_ok:
            tail = "/" + os.path.normpath(p)
            if any(f.endswith(tail) or (f + "/").endswith(tail + "/") for f in self.all_paths):
                return True
            if any(f.endswith(tail + ".in") for f in self.files):
                return True
        return False


class Checker:
    def __init__(self, tree):
        self.t = tree
        self.findings = []

    def flag(self, rel, line, what):
        self.findings.append((rel, line, what))

    # ---- what one stretch of text names ------------------------------------------
    def idents(self, rel, line, text):
        for m in IDENT.finditer(text):
            name, after = m.group(1), m.group(2)
            prefix = after is not None or name.endswith("_")
            if name.rstrip("_") in ("tdm", "TDM", "TANDEM"):
                continue
            ln = line + text.count("\n", 0, m.start())
            if re.search(r"(-D|cmake\.define\.)$", text[max(0, m.start() - 16):m.start()]):
                if name not in self.t.cache and name not in self.t.allow:
                    self.flag(rel, ln, "the CMake option " + name)
                continue
            if not self.t.ident_exists(name, prefix):
                self.flag(rel, ln, name + ("*" if prefix and not name.endswith("_") else ""))
                continue
            if name.startswith("TANDEM_") and name not in self.t.env and name not in self.t.allow:
                near = re.search(r"environment\s+variables?\W{0,3}$", text[max(0, m.start() - 40):m.start()]) or \
                    re.match(r"\W{0,3}\s+environment\s+variable", text[m.end():m.end() + 40])
                if near:
                    self.flag(rel, ln, "the environment variable " + name)

    def paths(self, rel, line, text, bare):
        docdir = os.path.dirname(rel)
        text = re.sub(r"[a-z][\w+.-]*://\S+", lambda m: " " * len(m.group(0)), text)
        for m in PATHTOK.finditer(text):
            tok = m.group(1)
            # <stdio.h>, <cuda.h>: a system header unless it is tandem's.
            if text[m.start() - 1:m.start()] == "<" and not tok.startswith("tandem/"):
                continue
            tok = re.sub(r":\d+(:\d+)?$", "", tok).rstrip(",:;)")
            orig = tok.rstrip(".")
            # Placeholders: gpu/..._gpu.cu, gpu/<structure>_gpu.cu.
            tok = re.sub(r"<[\w-]+>", "*", tok.replace("...", "*")).rstrip(".")
            if not tok or BUILD_PREFIXES.match(tok) or tok.startswith("$"):
                continue
            stripped = tok[2:] if tok.startswith("./") else tok
            first = stripped.split("/")[0]
            if "/" in stripped.rstrip("/"):
                has_ext = EXT.search(stripped.rstrip("/")) is not None
                if not has_ext and first not in self.t.top:
                    continue
                if any(not re.match(r"^[\w.*{},+-]*$", part) for part in stripped.split("/")):
                    continue
                ok = self.t.path_exists(stripped, docdir, suffix_ok=first not in self.t.top)
            elif "/" in stripped:  # a folder: "gpu/"
                if first not in self.t.top:
                    continue
                ok = self.t.path_exists(stripped, docdir, False)
            else:
                if not bare or not re.match(r"^[\w{},+-]+(\.[\w{},+-]+)*\.(%s)$" % "|".join(BARE_EXT), stripped):
                    continue
                ok = all(p in self.t.basenames or p + ".in" in self.t.basenames or p in self.t.allow
                         for p in brace_expand(stripped))
            if not ok:
                self.flag(rel, line + text.count("\n", 0, m.start()), orig)

    def commands(self, rel, line, text):
        """Shell commands in a doc's code: make targets and program flags."""
        for cmd_m in re.finditer(r"[^;&|\n]+", text):
            cmd = cmd_m.group(0)
            ln = line + text.count("\n", 0, cmd_m.start())
            cmd = re.sub(r"(^|\s)#.*", "", cmd)
            words = cmd.split()
            if not words:
                continue
            while words and (words[0] in ("$", "sudo", "env", "nice") or re.match(r"^\w+=", words[0])
                             or re.match(r"^-n$|^\d+$", words[0])):
                words = words[1:]
            if words and words[0] == "make" and not any(w in ("-C", "-f") for w in words):
                for w in words[1:]:
                    if w.startswith("-"):
                        continue
                    v = re.match(r"^(\w+)=", w)
                    if v:
                        if v.group(1) not in self.t.make_vars:
                            self.flag(rel, ln, "the make variable " + v.group(1))
                    elif re.match(r"^[\w.-]+$", w) and w not in self.t.make_targets:
                        self.flag(rel, ln, "the make target " + w)
            for i, w in enumerate(words):
                src = None
                prog = os.path.basename(w)
                if prog in self.t.programs:
                    src = self.t.programs[prog]
                elif w == "-m" and i + 1 < len(words) and i > 0 and re.match(r"python", words[i - 1]):
                    mod = words[i + 1].replace(".", "/") + ".py"
                    f = [p for p in self.t.files if p == mod or p.endswith("/" + mod)]
                    if f:
                        prog, src = words[i + 1], "\n".join(self.t.sources.get(p, "") for p in f)
                if src is None:
                    continue
                for flag_ in words[i + 1:]:
                    fm = re.match(r"^(--[A-Za-z][\w-]*)", flag_)
                    if fm and not re.search(r"[\"']%s[\"']" % re.escape(fm.group(1)), src):
                        self.flag(rel, ln, "the option %s of %s" % (fm.group(1), prog))
                break

    # ---- files ------------------------------------------------------------------
    def doc(self, rel):
        text = read(os.path.join(self.t.root, rel)) or ""
        # Fenced code blocks.
        lines = text.split("\n")
        prose, i = [], 0
        while i < len(lines):
            if lines[i].lstrip().startswith("```"):
                j = i + 1
                while j < len(lines) and not lines[j].lstrip().startswith("```"):
                    j += 1
                block = "\n".join(lines[i + 1:j])
                self.idents(rel, i + 2, block)
                self.paths(rel, i + 2, block, True)
                self.commands(rel, i + 2, block)
                prose += [""] * (j - i + 1)
                i = j + 1
            else:
                prose.append(lines[i])
                i += 1
        body = "\n".join(prose)
        self.idents(rel, 1, body)
        # Inline code spans (a span may continue on the next line of its paragraph).
        spans = []
        for m in re.finditer(r"(`+)(.+?)\1", body, re.S):
            spans.append((m.start(), m.end()))
            ln = 1 + body.count("\n", 0, m.start())
            self.paths(rel, ln, m.group(2), True)
            self.commands(rel, ln, m.group(2).replace("\n", " "))
        # Prose outside spans: paths with a folder only.
        rest = list(body)
        for a, b in spans:
            for k in range(a, b):
                if rest[k] != "\n":
                    rest[k] = " "
        self.paths(rel, 1, "".join(rest), False)
        # Link targets: [text](target), relative to the doc's folder.
        for m in re.finditer(r"\]\(([^()\s#]+)(?:#[^)]*)?\)", body):
            target = m.group(1)
            if re.match(r"^[a-z][\w+.-]*:", target) or target.startswith("/"):
                continue
            p = os.path.normpath(os.path.join(os.path.dirname(rel), target))
            if p.startswith("..") or (p not in self.t.all_paths and p not in self.t.allow):
                self.flag(rel, 1 + body.count("\n", 0, m.start()), target)

    def source(self, rel):
        for line, text in self.t.comments.get(rel, []):
            self.idents(rel, line, text)
            self.paths(rel, line, text, True)

    def run(self):
        docs = sorted(p for p in self.t.files if p == "README.md" or os.path.basename(p) == "README.md"
                      or (p.startswith("docs/") and p.count("/") == 1 and p.endswith(".md")))
        for rel in docs:
            self.doc(rel)
        for rel in sorted(self.t.comments):
            self.source(rel)
        for rel, line, name in results_table.stale_blocks(self.t.root):
            self.flag(rel, line, STALE + name)
        seen, out = set(), []
        for f in self.findings:
            if f not in seen:
                seen.add(f)
                out.append(f)
        return out


STALE = "stale generated block "


def check(root):
    found = Checker(Tree(root)).run()
    for rel, line, what in found:
        if what.startswith(STALE):
            print("%s:%d: the generated block '%s' differs from its data in docs/data "
                  "(scripts/results_table.py --write regenerates it)" % (rel, line, what[len(STALE):]))
        else:
            print("%s:%d: names %s, which does not exist" % (rel, line, what))
    return found


PLANTED = {
    "Makefile": "test:\n\techo $(BUILD)\n",
    "CMakeLists.txt": "option(TANDEM_REAL \"a real option\" ON)\nadd_subdirectory(bench)\n",
    "bench/CMakeLists.txt": "add_executable(tandem-bench main.c)\n",
    "bench/main.c": "/* Reads src/real.c's output. */\nint main(int c, char **v) { return !strcmp(v[1], \"--reps\"); }\n",
    "src/real.c": ("#include <stdlib.h>\n"
                   "/* tdm_real_fn, TDM_REAL and tdm__made_k32 exist; see src/real.h and tdm_gone. */\n"
                   "/* src/re<kind>.c, src/..._api.c and src/{real,gone}.c. */\n"
                   "#define CAT(s) tdm__made_##s\n"
                   "int CAT(k32);\n"
                   "int tdm_real_fn(void) { return getenv(\"TANDEM_REAL_ENV\") != 0; }\n"
                   "enum { TDM_REAL = 1 };\n"),
    "docs/notes.md": "See [the readme](../README.md) and [gone](gone.md).\n",
    # Generated blocks: one as its data gives it, one stale (a rate edited by hand).
    "docs/data/m1/meta.json": ('{"machine": "M", "cpu_model": "C", "cores": 2, "system": "S", "date": "D", '
                               '"conditions": "quiet", "source": "planted", "commands": ["tandem-bench sort"]}\n'),
    "docs/data/m1/sort.csv": ("structure,operation,impl,backend,key_type,value_type,n,queries,threads,reps,"
                              "median_mops,min_mops,max_mops\n"
                              "sort,sort,tandem,cpu,u32,,10000000,0,1,5,121.4,119.5,121.7\n"
                              "sort,sort,vqsort,cpu,u32,,10000000,0,1,5,193.9,189.7,199.7\n"),
    "docs/fresh.md": "<!-- generated: results_table.py tables m1 -->\n<!-- end generated -->\n",
    "docs/stale.md": "# stale\n<!-- generated: results_table.py tables m1 -->\n<!-- end generated -->\n",
    "README.md": ("# planted\n"
                  "Calls `tdm_real_fn` and `tdm_missing_fn`; TDM_REAL, TDM_GONE_MACRO, tdm_real_*, tdm__made_k64.\n"
                  "Files: src/real.c, `src/missing.c`, tests/gone, `real.c`, `missing.cuh`, build/x/y.so.\n"
                  "```sh\n"
                  "cmake -S . -B build -DTANDEM_REAL=ON -DTANDEM_MISSING_OPT=ON\n"
                  "make test BUILD=b && make nosuch CUDA=ON\n"
                  "build/bench/tandem-bench --reps 3 --nosuchflag\n"
                  "```\n"
                  "The environment variable TANDEM_REAL_ENV is read; the environment variable\n"
                  "TANDEM_REAL is not one.\n"),
}
EXPECTED = {
    ("README.md", 2, "tdm_missing_fn"), ("README.md", 2, "TDM_GONE_MACRO"), ("README.md", 2, "tdm__made_k64"),
    ("README.md", 3, "src/missing.c"), ("README.md", 3, "tests/gone"), ("README.md", 3, "missing.cuh"),
    ("README.md", 5, "the CMake option TANDEM_MISSING_OPT"),
    ("README.md", 6, "the make target nosuch"), ("README.md", 6, "the make variable CUDA"),
    ("README.md", 7, "the option --nosuchflag of tandem-bench"),
    ("README.md", 10, "the environment variable TANDEM_REAL"),
    ("docs/notes.md", 1, "gone.md"), ("docs/stale.md", 2, STALE + "tables m1"),
    ("src/real.c", 2, "src/real.h"), ("src/real.c", 2, "tdm_gone"), ("src/real.c", 3, "src/..._api.c"),
    ("src/real.c", 3, "src/{real,gone}.c"),
}


def self_test():
    with tempfile.TemporaryDirectory() as d:
        for rel, text in PLANTED.items():
            os.makedirs(os.path.join(d, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(d, rel), "w") as f:
                f.write(text)
        # docs/fresh.md gets what its data gives, docs/stale.md the same with one rate changed.
        results_table.write(d)
        with open(os.path.join(d, "docs/stale.md")) as f:
            text = f.read()
        with open(os.path.join(d, "docs/stale.md"), "w") as f:
            f.write(text.replace("| 121.4 |", "| 125.0 |"))
        got = set(Checker(Tree(d)).run())
    missed, extra = EXPECTED - got, got - EXPECTED
    for rel, line, what in sorted(missed):
        print("self-test: %s:%d: %s was not reported" % (rel, line, what))
    for rel, line, what in sorted(extra):
        print("self-test: %s:%d: %s was reported but exists" % (rel, line, what))
    if missed or extra:
        return False
    print("self-test: all %d planted names reported, nothing else" % len(EXPECTED))
    return True


def main(argv):
    args = argv[1:]
    st = "--self-test" in args
    args = [a for a in args if a != "--self-test"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    ok = self_test() if st else True
    found = check(os.path.abspath(root))
    if found:
        print("check-docs: %d findings (fix the text, regenerate a stale block with scripts/results_table.py "
              "--write, or list a name of something outside the tree in scripts/check-docs.allow)" % len(found))
    return 0 if ok and not found else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
