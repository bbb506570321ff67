#!/usr/bin/env bash
# Every pointer to a document section that vbench's C sources and --help texts give a reader leads somewhere
# (issue 36.17: `vbench keys --help` sent users to "README: Multi-host security" after that section had moved to
# docs/deployment.md). A pointer is a document (README, README.md, docs/NAME.md) followed by a section: "§N"
# (a heading "N." in it), a quoted name, or a name after ", " or ": " (a heading, or a "- **Name**" definition as in
# docs/metrics.md, that starts with the name). Each is checked: the file exists and holds the section. Bare
# document names are checked for the file only. The sources are read as they are (strings and comments: a comment
# that points at text that moved misleads a reader as much); the help of every command, as printed.
. "$(dirname "$0")/../lib/lib.sh"
need python3
ROOT=$VB_ROOT

# Every command's --help, as this build prints it (the top-level list names the commands).
helps=$SCRATCH/help.txt
"$VBENCH" --help >"$helps" 2>&1
cmds=$(sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p' "$helps")
[ -n "$cmds" ]; ok $? "vbench --help lists its commands"
for c in $cmds report export; do "$VBENCH" "$c" --help >>"$helps" 2>&1; done
"$VB_BIN/vbench-agent" --help >>"$helps" 2>&1

out=$(python3 - "$ROOT" "$helps" <<'PYEOF'
import os, re, sys
root, helps = sys.argv[1], sys.argv[2]
doc = r'(README(?:\.md)?|docs/[a-z0-9_-]+\.md)'
# a section after the document: §N[.M], "Name", or , Name / : Name (capitalised words, up to a stop)
pat = re.compile(doc + r'(?:\s*§\s*([0-9]+(?:\.[0-9]+)*)|,?\s*"([^"\n]+)"|'
                 r'(?:,|:)\s+([A-Z][A-Za-z0-9-]*(?: [a-zA-Z0-9-]+)*))?')

def sources():
    for d in sorted(os.listdir(root)):
        top = os.path.join(root, d)
        if not os.path.isdir(top) or d in ("build", "build-asan", "build-fuzz", "tests", ".git"):
            continue
        for dp, _, files in os.walk(top):
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cc")):
                    p = os.path.join(dp, f)
                    yield os.path.relpath(p, root), open(p, errors="replace").read()
    yield "--help output", open(helps, errors="replace").read()

def has_section(text, num, name):
    for line in text.split("\n"):
        if num is not None:
            if re.match(r"#+\s+" + re.escape(num) + r"\.?\s", line):
                return True
            continue
        m = re.match(r"#+\s+(?:[0-9.]+\s+)?(.*)", line) or re.match(r"\s*[-*]\s+\*\*([^*]+)\*\*", line)
        if m and m.group(1).strip().lower().startswith(name.lower()):
            return True
    return False

n = 0
for where, text in sources():
    # C strings split over lines: "... (README: " "Multi-host security)" reads as one text
    # (joined, with where each joined piece starts in the original, for the line numbers)
    flat, marks, at = "", [], 0
    for j in re.finditer(r'"\s*\n\s*"', text):
        marks.append((len(flat), at))
        flat += text[at:j.start()]
        at = j.end()
    marks.append((len(flat), at))
    flat += text[at:]
    for m in pat.finditer(flat):
        d, num, quoted, plain = m.groups()
        name = quoted or plain
        fpos, opos = [mk for mk in marks if mk[0] <= m.start()][-1]
        line = text[:opos + m.start() - fpos].count("\n") + 1
        path = os.path.join(root, "README.md" if d.startswith("README") else d)
        n += 1
        if not os.path.exists(path):
            print("MISSING %s:%d: %s (no such file)" % (where, line, m.group(0)))
            continue
        if num is None and name is None:
            continue
        if not has_section(open(path).read(), num, name):
            print("MISSING %s:%d: %s (no such section in %s)" % (where, line, m.group(0).strip(), d))
print("POINTERS %d" % n)
PYEOF
)
printf '%s\n' "$out" | grep '^MISSING' | diag
n=$(printf '%s\n' "$out" | sed -n 's/^POINTERS //p')
[ "${n:-0}" -gt 20 ]; ok $? "the sources and the help point at documents ($n pointers found)"
missing=$(printf '%s\n' "$out" | grep -c '^MISSING')
is "$missing" 0 "every document and section they point at exists"
keys=$("$VBENCH" keys --help 2>&1)
like "$keys" "docs/deployment.md" "vbench keys --help points at docs/deployment.md, where multi-host security is"
done_testing
