#!/usr/bin/env bash
# make typecheck: mypy, starting from the machine's last mypy cache when this checkout has
# none.  A clean clone (CI) otherwise analyses every module and its dependencies again
# (~30 CPU s, 155 s at load 8 on two CPUs, against 7 s from a cache).  mypy checks each
# cached module against its source's hash, so a cache made by another checkout is safe:
# what changed is analysed again.  Afterwards the machine's copy becomes this checkout's
# cache (replaced whole, by rename, so a concurrent run reads the old or the new one).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.venv/bin}
shared=${OVNK_MYPY_CACHE:-$HOME/.cache/ovnk/mypy-cache}

if [ ! -d .mypy_cache ] && [ -d "$shared" ]; then
  cp -r "$shared" .mypy_cache
fi
"$BIN/mypy" "$@"
mkdir -p "$(dirname "$shared")"
fresh=$(mktemp -d "$shared.new.XXXXXX")
cp -r .mypy_cache/. "$fresh/"
old="$shared.old.$$"
if [ -d "$shared" ]; then mv "$shared" "$old"; fi
mv "$fresh" "$shared"
rm -rf "$old"
