#!/usr/bin/env python3
"""Fails on a date, an issue number or a run/call number in a source comment.

Dates, run numbers and issue numbers belong in docs/results and commit messages; a comment says
why, without the history. Checked: the comments (// and /* */ in C, C++ and CUDA; # and triple-quoted
strings in Python and CMake) of every source file under the product's folders (SOURCE_DIRS). Not
flagged: a path into docs/results (its file names carry dates) and an ISO-8601 timestamp
(2031-01-15T02:51:00Z: a format example, not history).

usage: check_history_refs.py ROOT   (exit 0: none found; 1: each one printed as path:line: text)
"""
import os
import re
import sys

SOURCE_DIRS = ["runtime", "tuning_db", "tuner", "measure", "bench", "cli", "generator", "common",
               "templates", "python"]
C_LIKE = (".c", ".h", ".cpp", ".hpp", ".cu", ".cuh")
HASH_LIKE = (".py", ".cmake")
FINDINGS = [
    ("a date", re.compile(r"(?<![\w.-])20\d\d-[01]\d(?:-[0-3]\d(?![\w:])|(?!-?\d)(?![\w:]))")),
    ("an issue number", re.compile(r"\bissues? ?#?\d+", re.IGNORECASE)),
    ("a run or call number", re.compile(r"\b(?:run|call) #?\d+\b(?! ?(?:x|times|rounds|calls|us|ms|s)\b)",
                                        re.IGNORECASE)),
]


def c_comments(text):
    """(line, comment text) of every // and /* */ comment, skipping string and character literals."""
    out, i, n, line = [], 0, len(text), 1
    while i < n:
        ch = text[i]
        if ch == "\n":
            line += 1
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append((line, text[i:j]))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            for k, part in enumerate(text[i:j].split("\n")):
                out.append((line + k, part))
            line += text.count("\n", i, j)
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]{0,16})\(', text[i:])
            if not m:
                i += 1
                continue
            end = text.find(")" + m.group(1) + '"', i)
            end = n if end < 0 else end + len(m.group(1)) + 2
            line += text.count("\n", i, end)
            i = end
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = j + 1
        else:
            i += 1
    return out


def hash_comments(text, docstrings):
    """(line, text) of # comments and, for Python, of triple-quoted strings (docstrings)."""
    out, in_triple, quote = [], False, ""
    for number, raw in enumerate(text.split("\n"), 1):
        rest = raw
        while rest:
            if in_triple:
                end = rest.find(quote)
                out.append((number, rest if end < 0 else rest[:end]))
                if end < 0:
                    break
                in_triple, rest = False, rest[end + 3:]
                continue
            m = re.search(r"(\"\"\"|'''|#|\"|')", rest)
            if not m:
                break
            token = m.group(1)
            if token == "#":
                out.append((number, rest[m.start():]))
                break
            if token in ('"""', "'''") and docstrings:
                in_triple, quote, rest = True, token, rest[m.end():]
                continue
            # a one-line string literal: skip it
            close = rest.find(token[0], m.end())
            rest = "" if close < 0 else rest[close + 1:]
    return out


def findings_in(path, shown):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    name = os.path.basename(path)
    if name.endswith(C_LIKE):
        comments = c_comments(text)
    elif name.endswith(HASH_LIKE) or name == "CMakeLists.txt":
        comments = hash_comments(text, docstrings=name.endswith(".py"))
    else:
        return []
    out = []
    for line, comment in comments:
        for what, pattern in FINDINGS:
            for m in pattern.finditer(comment):
                token_start = comment.rfind(" ", 0, m.start()) + 1
                if what == "a date" and "results/" in comment[token_start:m.end()]:
                    continue
                out.append(f"{shown}:{line}: {what} ({m.group(0)!r}) in a comment: {comment.strip()[:160]}")
    return out


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    root = argv[1]
    files, found = 0, []
    for d in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, d)):
            dirnames[:] = sorted(x for x in dirnames if not x.startswith(".") and x != "__pycache__")
            for fn in sorted(filenames):
                path = os.path.join(dirpath, fn)
                found += findings_in(path, os.path.relpath(path, root))
                files += fn.endswith(C_LIKE + HASH_LIKE) or fn == "CMakeLists.txt"
    for f in found:
        print(f)
    print(f"{files} source files checked, {len(found)} dates, issue or run numbers in comments")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
