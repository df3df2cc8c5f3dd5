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
# The test command compiles each module as the suite first imports it (scripts/test.sh), so pip's
# up-front compile of every installed module, about half of a fresh install's time, is skipped there.
compile=()
[[ "$extras" == *test* ]] && compile=(--no-compile)
.venv/bin/python -m pip install --quiet --disable-pip-version-check "${compile[@]}" -c constraints.txt -e "$target"
# Tests and benchmarks compare with PyG's own samplers, which need torch-sparse: PyPI has no
# build for this platform, so CPU wheels beside the checkout are installed when present (never a
# dependency of the package; the tests that need them skip without). They go into a folder off the
# default path, .venv/pyg-samplers: PyG imports them in every process that can find them (about
# 0.35 CPU s each), and only the tests that compare with PyG put them on theirs (tests/pyg_samplers.py).
wheels="$(cd .. && pwd)/shared/wheels"
samplers=.venv/pyg-samplers
if [[ "$extras" == *test* ]] && compgen -G "$wheels/torch_sparse-*.whl" > /dev/null; then
  if compgen -G ".venv/lib/python*/site-packages/torch_sparse" > /dev/null; then  # where earlier set-ups put them
    .venv/bin/python -m pip uninstall --quiet --yes torch-scatter torch-sparse
  fi
  if [ ! -d "$samplers" ]; then
    rm -rf "$samplers.partial"  # what an interrupted install left
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-deps --no-compile \
      --target "$samplers.partial" "$wheels"/torch_scatter-*.whl "$wheels"/torch_sparse-*.whl
    mv "$samplers.partial" "$samplers"
  fi
fi
# Tools some tests drive, installed where this machine allows (root with apt); elsewhere those
# tests skip: Debian's Chromium for the cost explorer's browser tests (Playwright never downloads a
# browser here), rsync for `provision run`'s dataset staging, bpftool to see which of PINCH's
# kernel programs are still loaded after a job.
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v rsync > /dev/null || missing+=(rsync)
command -v bpftool > /dev/null || missing+=(bpftool)
if [[ "$extras" == *test* ]] && [ ${#missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
  echo "installing ${missing[*]} for the tests"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" > /dev/null; } \
    || echo "${missing[*]} could not be installed: the tests that need them will skip"
fi
# PINCH's kernel programs ship compiled; rebuild them where clang is present so they match their sources.
command -v clang > /dev/null && bash scripts/build_bpf.sh || true
