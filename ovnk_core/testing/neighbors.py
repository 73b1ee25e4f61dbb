"""Teach a logical router a neighbour's MAC, as ovn-controller would after an ARP reply.

Without a chassis answering ARP, ``ovn-trace`` stops a routed packet at the
ARP request for its next hop.  Tests that follow a packet out of a gateway
router (to see its SNAT and its exit port) first record the next hop's MAC
in the Southbound ``MAC_Binding`` table, with a fresh timestamp so that
ovn-northd's MAC-binding ageing does not remove it at once.
"""

from __future__ import annotations

import subprocess
import time

from ovnk_core.ovn.install import command


def _sbctl(sb_remote: str, *args: str) -> str:
    return subprocess.run(command("ovn-sbctl", f"--db={sb_remote}", *args), check=True,
                          capture_output=True, text=True).stdout.strip()


def learn_neighbor(sb_remote: str, router: str, port: str, ip: str, mac: str) -> None:
    """Record that ``ip`` behind router port ``port`` of ``router`` has ``mac``."""
    datapath = _sbctl(sb_remote, "--bare", "--columns=_uuid", "find", "Datapath_Binding",
                      f"external_ids:name={router}")
    if not datapath:
        raise LookupError(f"no Southbound datapath for router {router}")
    _sbctl(sb_remote, "create", "MAC_Binding", f"logical_port={port}", f'ip="{ip}"',
           f'mac="{mac}"', f"datapath={datapath}", f"timestamp={int(time.time() * 1000)}")
