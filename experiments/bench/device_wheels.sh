#!/usr/bin/env bash
# Wheels for gpu_all.sh's `distributed` stage, for a machine that cannot reach a package index
# (the lent GPU machines): the packages that stage imports and that machine's image lacks, at the
# versions the lock pins, into .whl/ (gitignored: name it in the device call's carry), which
# gpu_all.sh installs before its stages.
#
#   experiments/bench/device_wheels.sh [PYTHON_VERSION] [DEST]   # default: 3.12 .whl
#
# Ray's wheel is about 80 MB, more than a device call carries beside the repo (64 MiB in all). The
# stage needs only Ray's core (actors, the object store, the raylet and its binaries), so the
# subpackages it never imports (the Java jars, RLlib, Data, Serve, Train, Tune, LLM: about half the
# wheel) are deleted from the downloaded wheel, along with their RECORD lines, leaving about 42 MB.
set -eu
cd "$(dirname "$0")/../.."
pyver=${1:-3.12}
dest=${2:-.whl}
lock=requirements.lock
[ "$pyver" = 3.12 ] && lock=requirements-py312.lock
# what bench_distributed imports beyond that image: Ray and its schema validation, gymnasium
packages="ray gymnasium farama-notifications jsonschema jsonschema-specifications referencing rpds-py"
mkdir -p "$dest"
for p in $packages; do
  pin=$(grep -i "^$p==" "$lock") || { echo "device_wheels: $p has no pin in $lock" >&2; exit 2; }
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$pyver" \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$dest" "$pin"
done
wheel=$(realpath "$dest"/ray-*.whl)
trim="ray/jars ray/rllib ray/data ray/serve ray/train ray/tune ray/llm"
zip -q -d "$wheel" $(for d in $trim; do echo "$d/*"; done)
record=$(unzip -Z1 "$wheel" | grep -E '^ray-[^/]+\.dist-info/RECORD$')
tmp=$(mktemp -d)
unzip -q -o "$wheel" "$record" -d "$tmp"
pattern=$(echo $trim | sed 's/ /\/|^/g')
grep -Ev "^${pattern}/" "$tmp/$record" >"$tmp/RECORD.kept"
mv "$tmp/RECORD.kept" "$tmp/$record"
(cd "$tmp" && zip -q "$wheel" "$record")
rm -rf "$tmp"
du -ch "$dest"/*.whl | tail -1
