#!/usr/bin/env python3
"""Every relative link in README.md and docs/**/*.md resolves.

A link [text](target) or image ![alt](target) whose target is not a URL (scheme:, //) or a
mail address must name an existing file or directory, relative to the Markdown file that holds
it; a #fragment must match a heading of the target Markdown file (GitHub's anchor rule: lower
case, punctuation but '-' and '_' dropped, spaces to '-'; a repeated heading gets -1, -2, ...).
Links inside fenced code blocks and inline code spans are not links and are ignored.
Files under docs/pending/ are work in progress of other changes and are not checked.

usage: check_links.py SOURCE_DIR      exit 0 when every link resolves, else 1 naming each bad one
"""
import os
import re
import sys

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def markdown_lines(path):
    """(line number, line, line with inline code spans blanked) outside fenced code blocks."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, line, CODE_SPAN.sub("", line)


def anchors(path, cache={}):
    """The #fragments the headings of a Markdown file define."""
    if path not in cache:
        seen, found = {}, set()
        for _, line, _ in markdown_lines(path):
            m = re.match(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            slug = slugify(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            found.add(slug if n == 0 else "%s-%d" % (slug, n))
        cache[path] = found
    return cache[path]


def slugify(heading):
    heading = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    heading = heading.strip().lower()
    heading = re.sub(r"[^\w\- ]", "", heading)
    return heading.replace(" ", "-")


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = [os.path.join(root, "README.md")]
    for d, subdirs, names in os.walk(os.path.join(root, "docs")):
        subdirs[:] = sorted(s for s in subdirs if not (d == os.path.join(root, "docs") and s == "pending"))
        files += [os.path.join(d, n) for n in sorted(names) if n.endswith(".md")]
    bad, checked = [], 0
    for md in files:
        if not os.path.isfile(md):
            bad.append("%s: missing" % os.path.relpath(md, root))
            continue
        for number, _, line in markdown_lines(md):
            for m in LINK.finditer(line):
                target = m.group(1)
                if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
                    continue  # a URL or mailto:
                checked += 1
                where = "%s:%d: %s" % (os.path.relpath(md, root), number, target)
                path, _, fragment = target.partition("#")
                dest = md if not path else os.path.normpath(os.path.join(os.path.dirname(md), path))
                if not os.path.exists(dest):
                    bad.append("%s: no such file %s" % (where, os.path.relpath(dest, root)))
                elif fragment and dest.endswith(".md") and fragment not in anchors(dest):
                    bad.append("%s: no heading #%s in %s" % (where, fragment, os.path.relpath(dest, root)))
    for b in bad:
        print(b)
    print("%d relative links in %d files, %d broken" % (checked, len(files), len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
