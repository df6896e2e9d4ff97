#!/usr/bin/env bash
# Installs the release wheel ($1) into fresh venvs of Python 3.9 (NumPy 1.26) and 3.13
# (NumPy 2.x) and runs a smoke test and the MNIST demo there. The interpreters are
# looked up on PATH and in pyenv (PYENV_ROOT or ~/.pyenv); a missing one is reported
# and fails the check.
set -euo pipefail
wheel="$(realpath "$1")"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
find_python() {
    local v="$1" p
    # (a pyenv shim may exist without the version being selected: it must run)
    for p in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/python"$v" "python$v"; do
        if "$p" -c "import sys" >/dev/null 2>&1; then command -v "$p"; return 0; fi
    done
    return 1
}
status=0
for combo in "3.9 numpy==1.26.4" "3.13 numpy==2.3.5"; do
    set -- $combo
    py="$(find_python "$1")" || { echo "wheel-check: no python$1 found"; status=1; continue; }
    venv="$(mktemp -d)/venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q "$2" "$wheel"
    echo "== $("$venv/bin/python" --version), $2"
    # Run from outside the source tree so `import oxnet` is the installed wheel.
    (cd "$(dirname "$venv")" && "$venv/bin/python" "$here/smoke.py" && \
        "$venv/bin/python" "$root/examples/train_mnist.py" --epochs 1) || status=1
    rm -rf "$(dirname "$venv")"
done
exit $status
