#!/usr/bin/env python3
"""Builds the held-out sets in this directory from public sources signoff was
not written against. Run from this directory with the sources checked out:

  extract.py GTFOBINS_DIR CCSN_DIR DCG_DIR TLDR_DIR

Each source is split by a hash of the program (GTFOBins, tldr) or of the
command (peers): about a quarter goes to *-unseen.tsv, which is measured only
at the end of a piece of work, never looked at while changing the rules.
Rows already in testdata/corpus/ are left out of the peer sets.
"""
import hashlib, os, re, sys, glob, subprocess
import yaml

here = os.path.dirname(os.path.abspath(__file__))
gtfo, ccsn, dcg, tldr = sys.argv[1:5]

def unseen(key):
    return hashlib.sha1(key.encode()).hexdigest()[0] in "0123"

def cell(cmd):
    return cmd.strip().replace("\t", " ").replace("\n", "␤")

known = set()
for f in glob.glob(os.path.join(here, "..", "corpus", "*.tsv")) + [os.path.join(here, "..", "corpus.tsv")]:
    for line in open(f, encoding="utf-8"):
        if "\t" in line and not line.startswith("#"):
            known.add(line.rstrip("\n").split("\t", 1)[1])

def write(name, header, rows):
    seen = set()
    with open(os.path.join(here, name), "w", encoding="utf-8") as out:
        out.write(header)
        for comment, level, cmd in rows:
            c = cell(cmd)
            if not c or c in seen:
                continue
            seen.add(c)
            if comment:
                out.write("# " + comment + "\n")
            out.write(level + "\t" + c + "\n")

# --- GTFOBins: every function that runs code or moves data off the host is dangerous.
FUNCS = {"shell", "command", "reverse-shell", "bind-shell", "library-load", "upload", "file-write"}
dev, hid = [], []
for f in sorted(os.listdir(os.path.join(gtfo, "_gtfobins"))):
    d = yaml.safe_load(open(os.path.join(gtfo, "_gtfobins", f)).read().split("---")[1])
    if not d or "functions" not in d:
        continue
    for fn, items in sorted(d["functions"].items()):
        if fn not in FUNCS:
            continue
        for it in items or []:
            row = (f + " " + fn, "dangerous", it.get("code", ""))
            (hid if unseen(f) else dev).append(row)
hdr = ("# GTFOBins (github.com/GTFOBins/GTFOBins.github.io, _gtfobins/*, commit %s): the functions\n"
       "# shell, command, reverse-shell, bind-shell, library-load, upload and file-write, all dangerous.\n"
       "# Snippets are taken whole (later lines of some are typed into the program).\n")
rev = open(os.path.join(gtfo, "REV")).read().strip() if os.path.exists(os.path.join(gtfo, "REV")) else "?"
write("gtfobins-dev.tsv", hdr % rev, dev)
write("gtfobins-unseen.tsv", hdr % rev + "# UNSEEN: measured at the end only.\n", hid)

# --- cc-safety-net: assertBlocked/assertStrictBlocked = dangerous, assertAllowed = not dangerous (caution).
lit = r"""(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)"|`((?:[^`\\$]|\\.)*)`)"""
call = re.compile(r"\b(assertBlocked|assertStrictBlocked|assertAllowed)\(\s*" + lit + r"\s*[,)]", re.S)
def unjs(s):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)
dev, hid = [], []
for f in sorted(glob.glob(os.path.join(ccsn, "tests", "**", "*.ts"), recursive=True)):
    src = open(f, encoding="utf-8").read()
    for m in call.finditer(src):
        cmd = unjs(next(g for g in m.groups()[1:] if g is not None))
        if cell(cmd) in known or "${" in cmd:
            continue
        level = "caution" if m.group(1) == "assertAllowed" else "dangerous"
        (hid if unseen(cmd) else dev).append((None, level, cmd))
    # newer tests: analyzeTestCommand(...) expectations, behavioural-contract cases, test.each lists
    for m in re.finditer(r"expect\(analyzeTestCommand\(" + lit + r"\)\)\.(toBeNull|not\.toBeNull|toMatchObject)", src):
        cmd = unjs(next(g for g in m.groups()[:3] if g is not None))
        if cell(cmd) in known or "${" in cmd:
            continue
        (hid if unseen(cmd) else dev).append((None, "caution" if m.group(4) == "toBeNull" else "dangerous", cmd))
    for m in re.finditer(r"command:\s*" + lit + r",\s*options:[^\n]*\n\s*expected:\s*\{\s*kind:\s*'(allow|block)'", src):
        cmd = unjs(next(g for g in m.groups()[:3] if g is not None))
        if cell(cmd) in known or "${" in cmd:
            continue
        (hid if unseen(cmd) else dev).append((None, "caution" if m.group(4) == "allow" else "dangerous", cmd))
    for m in re.finditer(r"test\.each\(\s*\[(.*?)\]\s*,?\s*\)\(\s*'([^']*)'", src, re.S):
        title = m.group(2)
        if re.search(r"strict|paranoid|outside standard|mode|config|custom", title):
            continue
        if title.startswith("allows"):
            level = "caution"
        elif re.match(r"(blocks|denies|fails closed)", title):
            level = "dangerous"
        else:
            continue
        for lm in re.finditer(lit, m.group(1)):
            cmd = unjs(next(g for g in lm.groups() if g is not None))
            if cell(cmd) in known or "${" in cmd:
                continue
            (hid if unseen(cmd) else dev).append((None, level, cmd))
hdr = ("# cc-safety-net (github.com/kenryu42/cc-safety-net, tests/**/*.ts, commit %s): assertBlocked and\n"
       "# assertStrictBlocked = dangerous, assertAllowed = not dangerous (written caution: safe or caution both\n"
       "# count as allowed). Rows already in testdata/corpus are left out. Test options (cwd, env) not carried.\n")
rev = open(os.path.join(ccsn, "REV")).read().strip() if os.path.exists(os.path.join(ccsn, "REV")) else "?"
write("peer-ccsn-dev.tsv", hdr % rev, dev)
write("peer-ccsn-unseen.tsv", hdr % rev + "# UNSEEN: measured at the end only.\n", hid)

# --- destructive_command_guard: tests/corpus/**/*.toml (deny/allow) and src/packs unit tests.
dev, hid = [], []
rs_str = r'"((?:[^"\\]|\\.)*)"|r#"(.*?)"#'
blk = re.compile(r"\b(assert_blocks\w*|assert_allows\w*|assert_safe_pattern_matches)\(\s*&?\w+\s*,\s*(?:" + rs_str + ")", re.S)
def unrs(s):
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)), s)
for f in sorted(glob.glob(os.path.join(dcg, "src", "packs", "**", "*.rs"), recursive=True)):
    src = open(f, encoding="utf-8").read()
    for m in blk.finditer(src):
        cmd = unrs(m.group(2)) if m.group(2) is not None else m.group(3)
        if cell(cmd) in known:
            continue
        level = "dangerous" if m.group(1).startswith("assert_blocks") else "caution"
        (hid if unseen(cmd) else dev).append((None, level, cmd))
import tomllib
for f in sorted(glob.glob(os.path.join(dcg, "tests", "corpus", "**", "*.toml"), recursive=True)):
    d = tomllib.load(open(f, "rb"))
    for c in d.get("case", []) + d.get("cases", []):
        cmd = c.get("command")
        dec = c.get("expected_decision") or c.get("expected") or c.get("decision")
        if not cmd or dec not in ("allow", "deny") or cell(cmd) in known:
            continue
        (hid if unseen(cmd) else dev).append((None, "dangerous" if dec == "deny" else "caution", cmd))
hdr = ("# destructive_command_guard (github.com/Dicklesworthstone/destructive_command_guard, commit %s):\n"
       "# src/packs/**/*.rs assert_blocks* = dangerous, assert_allows*/assert_safe_pattern_matches = not dangerous\n"
       "# (written caution); tests/corpus/**/*.toml deny/allow. Rows already in testdata/corpus are left out.\n")
rev = open(os.path.join(dcg, "REV")).read().strip() if os.path.exists(os.path.join(dcg, "REV")) else "?"
write("peer-dcg-dev.tsv", hdr % rev, dev)
write("peer-dcg-unseen.tsv", hdr % rev + "# UNSEEN: measured at the end only.\n", hid)

# --- tldr-pages: examples of everyday reading, listing, searching and building programs (not dangerous).
EVERYDAY = """ls cat head tail grep rg wc sort uniq diff find du df ps which file stat tree jq echo date uname pwd
whoami id env printenv basename dirname realpath readlink cut tr column less more git-status git-log git-diff
git-show git-branch git-blame git-grep git-remote go-version go-env go-list go-doc cargo-tree npm-ls npm-view
pip-list pip-show node python docker-ps docker-images kubectl-get kubectl-describe free uptime top lsblk lscpu
ip ss hostname md5sum sha256sum xxd hexdump od strings nproc locale type man seq yes true printf tac nl fold
fmt comm join paste expand cmp zcat zgrep zless bat fd exa eza ag ack tokei cloc hyperfine mount sysctl""".split()
bad = re.compile(r"(>|\s-o\b|--output|-delete|-exec|-ok\b|\bsudo\b|-i\b|--in-place|kill|rm\b|-w\b|--write|sysctl -w|mount\s+\S|tee\b|\|)")
dev, hid = [], []
for name in EVERYDAY:
    for plat in ("common", "linux"):
        p = os.path.join(tldr, "pages", plat, name + ".md")
        if not os.path.exists(p):
            continue
        for m in re.finditer(r"^`(.+)`$", open(p, encoding="utf-8").read(), re.M):
            cmd = m.group(1)
            cmd = re.sub(r"\{\{\[([^|\]]*)\|[^\]]*\]\}\}", r"\1", cmd)   # {{[-a|--all]}} -> -a
            cmd = re.sub(r"\{\{(?:path/to/)?([^}]*)\}\}", lambda m: re.sub(r"[^A-Za-z0-9_./-]", "_", m.group(1)) or "x", cmd)
            if bad.search(cmd) or name in ("python", "node") and not re.search(r"--version|-V\b|--help", cmd):
                continue
            (hid if unseen(name) else dev).append((None, "caution", cmd))
        break
hdr = ("# tldr-pages (github.com/tldr-pages/tldr, pages/{common,linux}, commit %s): examples of everyday\n"
       "# reading, listing, searching and version programs, with those that write, delete, kill, pipe or use\n"
       "# sudo left out; placeholders filled with their own words. All not dangerous (written caution).\n")
rev = open(os.path.join(tldr, "REV")).read().strip() if os.path.exists(os.path.join(tldr, "REV")) else "?"
write("everyday-dev.tsv", hdr % rev, dev)
write("everyday-unseen.tsv", hdr % rev + "# UNSEEN: measured at the end only.\n", hid)
