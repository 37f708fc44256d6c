#!/usr/bin/env bash
# Installs the Python protocol peers (packages, never an interpreter) when any is missing: the pins of
# hil/requirements.txt into the system's python3, and those of hil/requirements-py312.txt (the IEEE
# 2030.5 peers, which need Python >= 3.12) into the newest Python >= 3.12 that pyenv already has.
# This machine reaches only PyPI and Debian, so `pyenv install` cannot fetch CPython: without such a
# Python the script stops and says what is missing.
#
#   scripts/ensure-python-peers.sh            install what is missing
#   scripts/ensure-python-peers.sh --python   print the 3.12+ interpreter's path (the tests run the
#                                             peers with it: Package.sep2Python), install nothing
set -euo pipefail
cd "$(dirname "$0")/.."

# python312: the path of the newest pyenv Python >= 3.12 (not the shim: PATH order does not matter).
python312() {
    local pyenv
    pyenv=$(command -v pyenv || echo "${PYENV_ROOT:-$HOME/.pyenv}/bin/pyenv")
    if [ ! -x "$pyenv" ]; then
        echo "ensure-python-peers: pyenv is not installed (looked on PATH and in ${PYENV_ROOT:-$HOME/.pyenv}/bin);" \
             "the IEEE 2030.5 peers of hil/requirements-py312.txt need a Python >= 3.12 from pyenv" >&2
        return 1
    fi
    local versions version
    versions=$("$pyenv" versions --bare)
    version=$(grep -E '^3\.(1[2-9]|[2-9][0-9])\.[0-9]+$' <<<"$versions" | sort -V | tail -n 1 || true)
    if [ -z "$version" ]; then
        echo "ensure-python-peers: pyenv has no Python >= 3.12 (it has: $(xargs <<<"$versions"));" \
             "the IEEE 2030.5 peers of hil/requirements-py312.txt need one: 'pyenv install 3.12' where" \
             "python.org is reachable (this script installs packages, not interpreters)" >&2
        return 1
    fi
    local python
    python="$("$pyenv" root)/versions/$version/bin/python3"
    if [ ! -x "$python" ]; then
        echo "ensure-python-peers: pyenv lists Python $version but $python is missing" >&2
        return 1
    fi
    echo "$python"
}

if [ "${1:-}" = "--python" ]; then
    python312
    exit
fi

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
PYTHON312=$(python312)
ensure hil/requirements-py312.txt "$PYTHON312"
