#!/usr/bin/env python3
"""Sizes of runner/'s files and functions (docs/README.md, "The source tree").

Lists every hand-written file over --max-file lines (default 600) and every function whose body
spans more than --max-function lines (default 80), counted from the line of its opening brace
to the line of its closing one. Functions are found by a small lexer: comments, strings and
raw strings are skipped; a brace opens a function body when the text before it ends a parameter
list (`)`, optionally followed by qualifiers, a trailing return type or a constructor's member
initialisers) and it is neither a control statement nor a lambda (lambdas count toward the
function around them). Exit 1 when anything is over, else 0.
"""
import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CONTROL = {"if", "for", "while", "switch", "catch", "do", "else", "try", "return", "sizeof",
           "decltype", "alignof", "noexcept", "requires"}


def strip(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "R" and text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # a digit separator: 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """(name, first line, last line) of each function body in `text`."""
    s = strip(text)
    found = []
    stack = []  # per open brace: "fn", "other", or "inner" (inside a function)
    starts = []
    last_stop = 0  # index after the last ; { or } at any depth
    for i, c in enumerate(s):
        if c == "{":
            head = s[last_stop:i]
            inside = any(k in ("fn", "inner") for k in stack)
            kind = "other"
            if inside:
                kind = "inner"
            elif is_function_head(head):
                kind = "fn"
            stack.append(kind)
            starts.append((i, head))
            last_stop = i + 1
        elif c == "}":
            if stack:
                kind = stack.pop()
                start, head = starts.pop()
                if kind == "fn":
                    first = s.count("\n", 0, start) + 1
                    last = s.count("\n", 0, i) + 1
                    found.append((name_of(head), first, last))
            last_stop = i + 1
        elif c == ";":
            last_stop = i + 1
    return found


def is_function_head(head):
    h = " ".join(head.split())
    if not h:
        return False
    # a constructor's member initialisers: `X(...) : a(b), c{d}` -> cut at the ` : `
    m = re.search(r"\)\s*:\s*[A-Za-z_]", h)
    if m and "?" not in h[m.start():]:
        h = h[: m.start() + 1]
    h = re.sub(r"\s*->\s*[\w:<>,\s*&]+$", "", h)  # trailing return type
    h = re.sub(r"(\s*(const|noexcept|override|final|mutable|volatile|&&|&))+$", "", h)
    if not h.endswith(")"):
        return False
    if re.search(r"\]\s*(\([^()]*\))?\s*$", h[: h.rfind("(")] + "") and "[" in h:
        pass
    depth = 0
    for j in range(len(h) - 1, -1, -1):  # the matching '('
        if h[j] == ")":
            depth += 1
        elif h[j] == "(":
            depth -= 1
            if depth == 0:
                before = h[:j].rstrip()
                break
    else:
        return False
    if before.endswith("]"):
        return False  # a lambda
    word = re.search(r"([A-Za-z_~][\w:~<>]*|operator\s*\S+)$", before)
    if not word:
        return False
    name = word.group(1).split("::")[-1]
    return name not in CONTROL and not before.endswith(("=", ","))


def name_of(head):
    h = " ".join(head.split())
    m = re.search(r"([\w:~]+|operator\s*\S+)\s*\(", h)
    return m.group(1) if m else h[-40:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-file", type=int, default=600)
    ap.add_argument("--max-function", type=int, default=80)
    ap.add_argument("--list", action="store_true", help="print every function's length")
    ap.add_argument("--root", help="the repository to check (default: this script's)")
    ap.add_argument("paths", nargs="*", default=["runner"])
    a = ap.parse_args()
    root = pathlib.Path(a.root).resolve() if a.root else ROOT
    over = 0
    files = []
    for p in a.paths:
        p = root / p
        files += sorted(p.rglob("*")) if p.is_dir() else [p]
    for f in files:
        if f.suffix not in {".cpp", ".hpp", ".h", ".cu", ".cuh"}:
            continue
        text = f.read_text()
        rel = f.relative_to(root)
        lines = text.count("\n")
        if lines > a.max_file:
            print(f"{rel}: {lines} lines (over {a.max_file})")
            over += 1
        for name, first, last in functions(text):
            length = last - first + 1
            if a.list:
                print(f"{length:5d} {rel}:{first} {name}")
            elif length > a.max_function:
                print(f"{rel}:{first}: {name} is {length} lines (over {a.max_function})")
                over += 1
    print(f"check_tree: {len(files)} files, {over} over")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
