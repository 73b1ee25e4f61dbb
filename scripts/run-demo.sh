#!/usr/bin/env bash
# The main job at this stage of the project: show the installed plugins and check a
# configuration ready for user-defined networks, then prove the OVN side works by
# starting a throwaway NB + SB + ovn-northd and tracing a packet through rows ovnk wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=.venv/bin
UDN_FLAGS=(--enable-multi-network --enable-network-segmentation
           --gateway-v4-masquerade-subnet 169.254.0.0/17)

echo "== ovnk plugins (configuration: ${UDN_FLAGS[*]})"
$BIN/ovnk plugins --check "${UDN_FLAGS[@]}"
echo
echo "== effective configuration"
$BIN/ovnk config "${UDN_FLAGS[@]}"
echo
echo "== OVN check: rows written by ovnk, compiled by ovn-northd, judged by ovn-trace"
CI= $BIN/pytest -q -p no:randomly tests/e2e -o addopts="--import-mode=importlib" 2>&1 | tail -n 3
