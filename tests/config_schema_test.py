#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The daemon's config schema and the example configs (CTest config_schema_test, label unit).

  config_schema_test.py SOURCE_DIR BRIDGE_BIN

- helm/slurm-k8s-bridge/values.schema.json's `config` is exactly what `BRIDGE_BIN
  --print-config-schema` prints (scripts/chart-config-schema --check);
- every example config the project ships (the Debian package's bridge/dist/config.json,
  docs/examples/*.json) passes `BRIDGE_BIN --check-config`.
Whether helm refuses what the schema refuses, and accepts every config the daemon accepts,
is tests/integration/helm/check_chart.py's (it needs helm).
"""
import glob
import os
import subprocess
import sys


def main(source, binary):
    failures = []
    p = subprocess.run([sys.executable, os.path.join(source, "scripts", "chart-config-schema"),
                        "--check", binary], capture_output=True, text=True)
    if p.returncode != 0:
        failures.append(f"chart-config-schema --check:\n{p.stdout}{p.stderr}")
    examples = [os.path.join(source, "bridge", "dist", "config.json")]
    examples += sorted(glob.glob(os.path.join(source, "docs", "examples", "*.json")))
    for path in examples:
        p = subprocess.run([binary, "--config", path, "--check-config"], capture_output=True,
                           text=True)
        rel = os.path.relpath(path, source)
        if p.returncode != 0:
            failures.append(f"{rel}: --check-config refused it:\n{p.stdout}{p.stderr}")
        else:
            print(f"{rel}: {p.stdout.strip()}")
    if len(examples) < 2:
        failures.append("no docs/examples/*.json found")
    for f in failures:
        print(f"FAIL {f}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
