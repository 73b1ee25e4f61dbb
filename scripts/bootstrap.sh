#!/usr/bin/env bash
# Install what ovnk needs, idempotently: Debian packages (OVN, OVS, nftables, the CNI
# reference plugins the local kubelet chains after ovnk's,
# iproute2), the OVN that upstream runs (26.03, a cached Debian root made by
# scripts/ovn-root.sh; skipped with OVNK_OVN=system) and a virtualenv with ovnk-core, every bundled plugin (with its `test`
# extra when it has one: the plugins its tests need) and ovnk-local (the development
# distribution: local API server, `ovnk local`) in development mode.  Safe to run
# again; it only does what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
APT_PACKAGES=(ovn-central ovn-host openvswitch-switch python3-openvswitch nftables libnftables1 python3-nftables
              iproute2 iputils-ping procps debootstrap containernetworking-plugins)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
  # The packages start system daemons we do not use; ovnk runs its own per test/cluster.
  for unit in ovn-central ovn-host openvswitch-switch ovn-northd ovn-ovsdb-server-nb \
              ovn-ovsdb-server-sb ovn-controller ovs-vswitchd ovsdb-server; do
    $SUDO systemctl stop "$unit" >/dev/null 2>&1 || true
  done
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "bootstrap: creating virtualenv $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when a pyproject.toml changed since the last install.
stamp="$VENV/.ovnk-installed"
digest=$(cat pyproject.toml plugins/*/pyproject.toml local/pyproject.toml | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$digest" ]; then
  echo "bootstrap: installing ovnk-core, plugins and ovnk-local into $VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  editables=(-e ".[dev]" -e local/)
  for plugin in plugins/*/; do
    if grep -q '^test *= *\[' "$plugin/pyproject.toml"; then
      editables+=(-e "${plugin%/}[test]")
    else
      editables+=(-e "$plugin")
    fi
  done
  "$VENV/bin/python" -m pip install -q "${editables[@]}"
  echo "$digest" > "$stamp"
fi

# The libnftables binding is Debian's python3-nftables (pure ctypes over
# libnftables.so.1); expose it to the virtualenv's interpreter.
if ! "$VENV/bin/python" -c "import nftables" 2>/dev/null; then
  site=$("$VENV/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
  ln -sfn /usr/lib/python3/dist-packages/nftables "$site/nftables"
  "$VENV/bin/python" -c "import nftables" || {
    echo "bootstrap: cannot import the nftables binding" >&2; exit 1; }
fi

# OVSDB JSON parsing dominates the IDL's time; Debian's python3-openvswitch ships the C
# parser (ovs/_json) for this CPython minor version.  Use it when it loads (bench/
# render_topology.py measures the difference); the pure-Python parser still works without.
c_json=$(ls /usr/lib/python3/dist-packages/ovs/_json.cpython-*.so 2>/dev/null | head -1 || true)
if [ -n "$c_json" ] && ! "$VENV/bin/python" -c "import ovs._json" 2>/dev/null; then
  ovs_dir=$("$VENV/bin/python" -c "import ovs, os; print(os.path.dirname(ovs.__file__))")
  ln -sfn "$c_json" "$ovs_dir/$(basename "$c_json")"
  if ! "$VENV/bin/python" -c "import ovs.json, sys; sys.exit(ovs.json.PARSER != 'C')"; then
    rm -f "$ovs_dir/$(basename "$c_json")"
    echo "bootstrap: Debian's ovs C JSON parser does not load here; using the Python one"
  fi
fi

# The OVN upstream OVN-Kubernetes runs (ovnk_core/ovn/install.py says where its root lives
# and which series it is); OVNK_OVN=system (or a root's directory) makes no root.
read -r root series < <("$VENV/bin/python" -c \
  "from ovnk_core.ovn import install; print(install.pinned_root(), install.PINNED_SERIES)")
if [ -z "${OVNK_OVN:-}" ] || [ "$OVNK_OVN" = "$series" ]; then
  scripts/ovn-root.sh "$root" "$series"
fi
# Which OVN the tests and ovnk local will run, and what it lacks (exit 1 when anything).
"$VENV/bin/python" -m ovnk_core.ovn.install
