#!/usr/bin/env bash
# Installs the Python protocol peers of hil/requirements.txt when any is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if python3 - <<'PY' 2>/dev/null
import importlib.metadata as m, re, sys
for line in open("hil/requirements.txt"):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = re.split(r"==", line)
    if m.version(name) != version:
        sys.exit(1)
PY
then exit 0; fi
echo "Installing Python protocol peers: $(grep -v '^#' hil/requirements.txt | xargs)"
# Debian 12's own python3 is "externally managed" (PEP 668) and refuses pip without this; the peers
# are pinned test tools of this machine, not the daemon's dependencies. Other Pythons ignore it.
PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore -r hil/requirements.txt
