#!/usr/bin/env bash
# Compile PINCH's kernel programs (fullgraph/exchange/pinch/bpf/*.bpf.c) to the .o files shipped with the
# package, so running them needs only the system libbpf, never a compiler. -g keeps the BTF that
# libbpf needs for the maps; -mcpu=v3 allows the atomic fetch-and-add and compare-and-swap.
# Each object is written to a temporary file first and moved into place, so an interrupted build
# never leaves a truncated object behind.
set -euo pipefail
cd "$(dirname "$0")/.."
clang="${CLANG:-clang}"
if ! command -v "$clang" > /dev/null; then
  echo "build_bpf: $clang not found; keeping the committed fullgraph/exchange/pinch/bpf/*.o"
  exit 0
fi
triplet="$(gcc -dumpmachine 2> /dev/null || "$clang" -dumpmachine)"
for source in fullgraph/exchange/pinch/bpf/*.bpf.c; do
  object="${source%.bpf.c}.o"
  tmp="$(mktemp "$object.XXXXXX")"
  trap 'rm -f "$tmp"' EXIT
  "$clang" -O2 -g -target bpf -mcpu=v3 -I"/usr/include/$triplet" -Wall -Werror -c "$source" -o "$tmp"
  mv "$tmp" "$object"
  trap - EXIT
  echo "build_bpf: $object"
done
