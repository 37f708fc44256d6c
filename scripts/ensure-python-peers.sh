#!/usr/bin/env bash
# Installs the Python protocol peers of hil/requirements.txt (the system's python3) and of
# hil/requirements-py312.txt (the IEEE 2030.5 peers, which need Python >= 3.12: pyenv's 3.12.1)
# when any is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# ensure FILE PYTHON...: installs FILE's pins with PYTHON unless each is installed at its version.
ensure() {
    local file=$1
    shift
    if "$@" - "$file" <<'PY' 2>/dev/null
import importlib.metadata as m, re, sys
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line:
        continue
    name, version = re.split(r"==", line)
    if m.version(name) != version:
        sys.exit(1)
PY
    then return 0; fi
    echo "Installing Python protocol peers: $(grep -v '^#' "$file" | xargs)"
    # Debian 12's own python3 is "externally managed" (PEP 668) and refuses pip without this; the peers
    # are pinned test tools of this machine, not the daemon's dependencies. Other Pythons ignore it.
    PIP_BREAK_SYSTEM_PACKAGES=1 "$@" -m pip install -q --disable-pip-version-check --root-user-action=ignore -r "$file"
}

ensure hil/requirements.txt python3
ensure hil/requirements-py312.txt env PYENV_VERSION=3.12.1 python3
