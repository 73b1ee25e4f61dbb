#!/usr/bin/env bash
# Make the cached OVN root: a minimal Debian root (debootstrap --variant=minbase) of the
# suite that carries OVN SERIES.x (unstable: OVN 26.03 with OVS 4.0), with ovn-central,
# ovn-host and openvswitch-switch installed in it.  Its programs run on the host through
# the root's own loader (ovnk_core/ovn/install.py); nothing of that suite is installed on
# the host, whose libc and Python it would replace.
#
#   scripts/ovn-root.sh ROOT SERIES
#
# Idempotent: a root whose stamp (ROOT/.ovnk-root) exists is complete and left alone.  Two
# bootstraps at once: the second waits on ROOT.lock and then finds the stamp.  The root is
# built in ROOT.build and renamed to ROOT only once it runs and has the right version, so a
# root without its stamp never exists.  The mirror is the one the machine's apt sources
# name for Debian (override: OVNK_DEBIAN_MIRROR); the suite is unstable (override:
# OVNK_OVN_SUITE, e.g. a suite of a snapshot mirror that still has SERIES).
set -euo pipefail

if [ $# -ne 2 ]; then echo "usage: $0 ROOT SERIES" >&2; exit 2; fi
root=$1 series=$2
suite=${OVNK_OVN_SUITE:-unstable}
packages=(ovn-central ovn-host openvswitch-switch)
stamp=$root/.ovnk-root
log=$root.log

fail() {
  echo "bootstrap: cannot make the OVN $series root $root: $*" >&2
  echo "bootstrap: (or run on the host's OVN: OVNK_OVN=system, ovnk local up --ovn system)" >&2
  exit 1
}

# The program's --version, run through the root's loader with the root's libraries.
root_version() {  # ROOT PROGRAM
  local interp
  interp=$(ls "$1"/lib64/ld-linux-*.so.* "$1"/lib/ld-linux*.so.* 2>/dev/null | head -1)
  [ -n "$interp" ] || return 1
  "$interp" --library-path "$1/usr/lib/$(uname -m)-linux-gnu:$1/lib/$(uname -m)-linux-gnu" \
    "$1/usr/$2" --version 2>/dev/null | head -1 | awk '{print $NF}'
}

# The Debian mirror apt uses for the host's own release (Origin and Label "Debian": not
# the security archive, not a third-party repository).
debian_mirror() {
  apt-get indextargets --format '$(TARGET_OF)|$(ORIGIN)|$(LABEL)|$(REPO_URI)' \
    'Created-By: Packages' 2>/dev/null | awk -F'|' '$1=="deb" && $2=="Debian" && $3=="Debian" {print $4; exit}'
}

if [ -f "$stamp" ]; then exit 0; fi
mkdir -p "$(dirname "$root")"
exec 9>"$root.lock"
if ! flock -n 9; then
  echo "bootstrap: another bootstrap is making $root; waiting for it"
  flock 9
fi
if [ -f "$stamp" ]; then exit 0; fi

[ "$(id -u)" -eq 0 ] || fail "making it needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (Debian package debootstrap)"
mirror=${OVNK_DEBIAN_MIRROR:-$(debian_mirror)}
if [ -z "$mirror" ]; then
  apt-get update -qq >/dev/null 2>&1 || true  # apt knows a source's origin once it has its lists
  mirror=$(debian_mirror)
fi
[ -n "$mirror" ] || fail "no Debian mirror in the apt sources (/etc/apt/sources.list, /etc/apt/sources.list.d/); set OVNK_DEBIAN_MIRROR"

build=$root.build
rm -rf "$build"  # what an interrupted bootstrap left (we hold the lock: nobody else builds it)
echo "bootstrap: making a Debian $suite root with OVN $series from $mirror in $root (a few minutes; log $log)"
debootstrap --variant=minbase "$suite" "$build" "$mirror" >"$log" 2>&1 \
  || fail "debootstrap $suite from $mirror failed: $(tail -3 "$log" | tr '\n' ' ')"
# No service of the root is ever started by its packages' scripts.
printf '#!/bin/sh\nexit 101\n' >"$build/usr/sbin/policy-rc.d"
chmod +x "$build/usr/sbin/policy-rc.d"
# A mirror that serves a frozen archive has an expired Release file; its signature is still checked.
apt_options=(-q -y -o Acquire::Check-Valid-Until=false -o APT::Install-Recommends=false)
chroot "$build" apt-get "${apt_options[@]}" update >>"$log" 2>&1 \
  || fail "apt-get update in the root failed: $(tail -3 "$log" | tr '\n' ' ')"
DEBIAN_FRONTEND=noninteractive chroot "$build" apt-get "${apt_options[@]}" install "${packages[@]}" \
  >>"$log" 2>&1 || fail "installing ${packages[*]} failed: $(tail -3 "$log" | tr '\n' ' ')"

ovn=$(root_version "$build" bin/ovn-northd) || true
[ -n "$ovn" ] || fail "its ovn-northd does not run on this host through the root's loader (log $log)"
case "$ovn" in
  "$series".*) ;;
  *) fail "the $suite suite of $mirror carries OVN $ovn, not $series.x (OVNK_OVN_SUITE names another suite)" ;;
esac
ovs=$(root_version "$build" lib/openvswitch-switch/ovs-vswitchd) || true
[ -n "$ovs" ] || fail "its ovs-vswitchd does not run on this host (log $log)"
chroot "$build" apt-get clean >>"$log" 2>&1 || true
rm -rf "$build"/var/lib/apt/lists/*
printf 'ovn %s\novs %s\nsuite %s\nmirror %s\n' "$ovn" "$ovs" "$suite" "$mirror" >"$build/.ovnk-root"
mv "$build" "$root"
echo "bootstrap: OVN $ovn with OVS $ovs ready in $root ($(du -sh "$root" | cut -f1))"
