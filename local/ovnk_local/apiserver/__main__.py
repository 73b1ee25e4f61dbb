"""``python -m ovnk_local.apiserver``: run the local API server as its own process.

``ovnk local up`` starts it this way (``--data`` keeps objects across
restarts).  It serves HTTPS only: ``--cert-dir`` keeps (and on first use
creates) the cluster CA, the serving certificate and the service-account key;
kube-apiserver's flags name individual files instead.  A non-loopback
``--host`` needs ``--allow-non-loopback``.  Admission hooks that must run in
the server process are loaded
from ``--admission module:function`` options and from the ``ovnk.admission``
entry point group; each is called with the ``AdmissionRegistry``.  ``--log-level``
defaults to ``$OVNK_APISERVER_LOG_LEVEL`` (``ovnk local up`` passes its environment on), so
``OVNK_APISERVER_LOG_LEVEL=DEBUG ovnk local up`` gets an access log: a line per request
with its status and User-Agent.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path
from types import FrameType

from ovnk_local.apiserver.security import SecurityOptions
from ovnk_local.apiserver.server import ServerOptions, serve

log = logging.getLogger("ovnk_local.apiserver")

LOG_LEVEL_ENV = "OVNK_APISERVER_LOG_LEVEL"  # ``ovnk local up`` passes its environment on


def main(argv: list[str] | None = None) -> int:
    """Parse flags, start the server, run until SIGTERM/SIGINT, then stop cleanly."""
    parser = argparse.ArgumentParser(prog="python -m ovnk_local.apiserver",
                                     description="ovnk's local Kubernetes API server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--data", default=None, help="JSON snapshot file (load + save)")
    parser.add_argument("--kubeconfig", default=None,
                        help="write the admin's kubeconfig here (needs --cert-dir)")
    parser.add_argument("--cert-dir", default=None,
                        help="directory of the cluster CA, serving certificate and "
                             "service-account key (created when missing)")
    parser.add_argument("--tls-cert-file", default=None)
    parser.add_argument("--tls-private-key-file", default=None)
    parser.add_argument("--client-ca-file", default=None)
    parser.add_argument("--service-account-signing-key-file", default=None)
    parser.add_argument("--token-auth-file", default=None,
                        help="static bearer tokens: token,user,uid[,\"group1,group2\"]")
    parser.add_argument("--allow-non-loopback", action="store_true",
                        help="allow --host to be an address other than loopback")
    parser.add_argument("--history", type=int, default=10000, help="watch events kept")
    parser.add_argument("--bookmark-interval", type=float, default=60.0)
    parser.add_argument("--service-cidr", action="append", default=None,
                        help="service ClusterIP range (repeat for dual-stack)")
    parser.add_argument("--admission", action="append", default=[],
                        help="module:function called with the admission registry")
    parser.add_argument("--no-admission-entry-points", action="store_true",
                        help="do not load the ovnk.admission entry points")
    parser.add_argument("--log-level", default=os.environ.get(LOG_LEVEL_ENV) or "INFO",
                        help=f"INFO, or DEBUG for an access log line per request "
                             f"(default: ${LOG_LEVEL_ENV}, else INFO)")
    parser.add_argument("--pod-netns-template", default="",
                        help="serve pods/exec by running the command in the network namespace "
                             "this names, e.g. 'x-{node}-pod-{namespace}.{name}'")
    parser.add_argument("--node-netns-template", default="",
                        help="the network namespace of a hostNetwork pod's node for pods/exec, "
                             "e.g. 'x-{node}' (default: exec into hostNetwork pods is refused)")
    args = parser.parse_args(argv)
    # before anything starts: a stop asked for during start-up is a clean stop after it
    done = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        security = _security(args)
    except ValueError as exc:
        parser.error(str(exc))
    options = ServerOptions(history_size=args.history, bookmark_interval=args.bookmark_interval,
                            service_cidrs=tuple(args.service_cidr or ("10.96.0.0/16",)),
                            admission_modules=tuple(args.admission),
                            admission_entry_points=not args.no_admission_entry_points,
                            pod_netns_template=args.pod_netns_template,
                            node_netns_template=args.node_netns_template,
                            security=security, allow_non_loopback=args.allow_non_loopback)
    try:
        handle = serve(args.host, args.port, args.data, options)
    except (ValueError, OSError) as exc:
        log.error("cannot serve: %s", exc)
        return 2
    if args.kubeconfig:
        handle.write_kubeconfig(args.kubeconfig)
    done.wait()
    handle.stop()
    return 0


def _security(args: argparse.Namespace) -> SecurityOptions:
    token_file = Path(args.token_auth_file) if args.token_auth_file else None
    files = (args.tls_cert_file, args.tls_private_key_file, args.client_ca_file,
             args.service_account_signing_key_file)
    if args.cert_dir:
        hosts = (args.host,) if args.host not in ("0.0.0.0", "::") else ()
        return SecurityOptions.in_directory(args.cert_dir, hosts=(*hosts, "127.0.0.1"),
                                            token_auth_file=token_file)
    if not all(files):
        raise ValueError("TLS and authentication are required: give --cert-dir, or all of "
                         "--tls-cert-file, --tls-private-key-file, --client-ca-file and "
                         "--service-account-signing-key-file")
    if args.kubeconfig:
        raise ValueError("--kubeconfig needs --cert-dir (the CA key signs the admin's "
                         "certificate)")
    cert, key, client_ca, sa_key = (Path(f) for f in files)
    return SecurityOptions(cert, key, client_ca, sa_key, token_auth_file=token_file)


if __name__ == "__main__":
    raise SystemExit(main())
