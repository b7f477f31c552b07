#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Fails on references to files of the repository that do not exist (CTest label unit).

  doc_links_test.py [SOURCE_DIR]     default: this checkout

Checked, in the files git tracks (untracked ones too, so a new file is checked before it is
added; every file under SOURCE_DIR outside build directories when it is not a checkout):
  - every relative Markdown link of a .md file, [text](path) or [text](path#anchor): the
    path exists beside the .md file, and an anchor names a heading of the .md it points to
    (GitHub's rule: lower case, punctuation dropped, spaces to hyphens, -1, -2... for
    repeats);
  - every mention of a .md file or of a file under docs/ in any text file (code comments,
    scripts, YAML, unit files): a path with a slash is found from the repository's root
    or beside the mentioning file, a bare name beside the file, at the root or in docs/.
    Absolute paths (/usr/share/doc/...), URLs and template placeholders are not paths of
    the tree and are skipped.
Third-party inputs (tests/testbed/{k8sbin,kwokbin,helmbin}) are not read. Prints each
dangling reference as FILE:LINE: TARGET and exits 1 if there is any.
"""
import os
import re
import subprocess
import sys

SKIP_PREFIXES = ("tests/testbed/k8sbin/", "tests/testbed/kwokbin/", "tests/testbed/helmbin/")
LINK = re.compile(r"\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# A .md file, or anything under docs/, named in running text. The character before it may
# not continue a path, a URL or a placeholder.
MENTION = re.compile(r"(?<![\w./@:$%{-])((?:[\w.-]+/)*[\w.-]+\.md|docs/[\w.-]+)(?![\w/-])")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked_files(root):
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard"],
            capture_output=True, text=True, check=True).stdout
        return sorted(set(f for f in out.splitlines() if f))
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, dirs, names in os.walk(root):
            dirs[:] = [x for x in dirs if not x.startswith("build") and x != ".git"]
            files += [os.path.relpath(os.path.join(d, n), root) for n in names]
        return sorted(files)


def read_text(path):
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (UnicodeDecodeError, OSError):
        return None


def slug(heading):
    text = re.sub(r"`([^`]*)`", r"\1", heading)               # code spans keep their text
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)      # links keep their text
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)                       # punctuation goes
    return text.replace(" ", "-")


def anchors_of(path, cache):
    if path not in cache:
        seen, found, fenced = {}, set(), False
        for line in (read_text(path) or "").splitlines():
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else f"{s}-{n}")
        cache[path] = found
    return cache[path]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    files = [f for f in tracked_files(root)
             if not f.startswith(SKIP_PREFIXES) and os.path.isfile(os.path.join(root, f))]
    exists = lambda rel: os.path.exists(os.path.join(root, rel))
    anchors, bad, checked = {}, [], 0
    for f in files:
        text = read_text(os.path.join(root, f))
        if text is None:
            continue
        here = os.path.dirname(f)
        is_md = f.endswith(".md")
        fenced = False
        for n, line in enumerate(text.splitlines(), 1):
            if is_md and FENCE.match(line):
                fenced = not fenced
            if is_md and not fenced:
                for target in LINK.findall(line):
                    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, mailto:, ...
                        continue
                    checked += 1
                    path, _, anchor = target.partition("#")
                    rel = os.path.normpath(os.path.join(here, path)) if path else f
                    if not exists(rel):
                        bad.append(f"{f}:{n}: link to {target}: no {rel}")
                    elif anchor and rel.endswith(".md") and \
                            anchor not in anchors_of(os.path.join(root, rel), anchors):
                        bad.append(f"{f}:{n}: link to {target}: no heading #{anchor} in {rel}")
            for m in MENTION.finditer(line):
                name = m.group(1)
                checked += 1
                candidates = [os.path.normpath(os.path.join(here, name))]
                if "/" in name:
                    candidates.insert(0, os.path.normpath(name))
                else:
                    candidates += [name, os.path.join("docs", name)]
                if not any(exists(c) for c in candidates):
                    bad.append(f"{f}:{n}: mentions {name}, which does not exist")
    for b in bad:
        print(b)
    print(f"doc_links_test: {checked} references in {len(files)} files, {len(bad)} dangling")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
