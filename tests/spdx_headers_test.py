#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Every source file of the tree names its licence in an SPDX-License-Identifier line near
its top (the README's "License" says so; a file added without one fails this test).

    python3 tests/spdx_headers_test.py SOURCE_DIR

Source files: what git tracks with the suffixes below (C++, Go, Python, shell, CMake,
YAML, protobuf, templates), the data of bench/results and the examples of docs/ aside.
"""
import pathlib
import subprocess
import sys

SUFFIXES = {".cc", ".h", ".go", ".py", ".sh", ".cmake", ".yaml", ".yml", ".proto", ".tpl", ".in"}
NAMES = {"CMakeLists.txt", "Dockerfile"}
# Not source: recorded figures, and files whose format has no comments.
SKIP_PREFIXES = ("bench/results/", "docs/examples/")
SKIP = {"bridge/dist/conffiles.in"}
HEAD_LINES = 5


def main() -> int:
    root = pathlib.Path(sys.argv[1])
    files = subprocess.run(["git", "-C", str(root), "ls-files"], check=True,
                           capture_output=True, text=True).stdout.split()
    missing, checked = [], 0
    for f in files:
        p = pathlib.PurePosixPath(f)
        if p.suffix not in SUFFIXES and p.name not in NAMES:
            continue
        if f in SKIP or f.startswith(SKIP_PREFIXES):
            continue
        path = root / f
        if not path.is_file():
            continue
        checked += 1
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = [fh.readline() for _ in range(HEAD_LINES)]
        if not any("SPDX-License-Identifier: Apache-2.0" in line for line in head):
            missing.append(f)
    if checked == 0:
        print("no source file found: is SOURCE_DIR a git work tree?")
        return 1
    for f in missing:
        print(f"{f}: no 'SPDX-License-Identifier: Apache-2.0' in its first {HEAD_LINES} lines")
    print(f"{checked} source files, {len(missing)} without the SPDX line")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
