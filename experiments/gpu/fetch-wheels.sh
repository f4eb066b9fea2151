#!/usr/bin/env bash
# Download the wheels of experiments/gpu/wheels.txt for the GPU machine (x86-64 Linux, CPython 3.12 by default)
# into DIR (default .gpu-wheels, ignored by git), on a machine that reaches the package index. check.sh installs
# them on the GPU machine, which has no network.
# Usage: bash experiments/gpu/fetch-wheels.sh [DIR] [PYTHON_VERSION]
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-.gpu-wheels}
version=${2:-3.12}
mkdir -p "$dir"
platforms=()
for tag in manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$tag")
done
grep -v '^#' experiments/gpu/wheels.txt | grep . | while read -r requirement; do
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version "$version" --implementation cp \
    "${platforms[@]}" --dest "$dir" "$requirement"
done
ls "$dir"
