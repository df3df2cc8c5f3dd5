#!/usr/bin/env bash
# Create .venv (once) and install memorybridge into it, editable, with the extras given as $1
# (e.g. "test"). Idempotent: re-running only installs what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade "pip>=24"
target="."
[ -n "$extras" ] && target=".[$extras]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e "$target"
# Tests and benchmarks compare with PyG's own samplers, which need torch-sparse: PyPI has no
# build for this platform, so CPU wheels beside the checkout are installed when present (never a
# dependency of the package; the tests that need them skip without).
wheels="$(cd .. && pwd)/shared/wheels"
if [[ "$extras" == *test* ]] && compgen -G "$wheels/torch_sparse-*.whl" > /dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps \
    "$wheels"/torch_scatter-*.whl "$wheels"/torch_sparse-*.whl
fi
# The cost explorer's browser tests drive Debian's Chromium (Playwright never downloads a browser
# here): install it where this machine allows (root with apt); elsewhere those tests skip.
if [[ "$extras" == *test* ]] && [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  echo "installing Debian's chromium for the browser tests"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium > /dev/null; } \
    || echo "chromium could not be installed: the browser tests will skip"
fi
