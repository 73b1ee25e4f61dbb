"""``python -m ovnk_core.apiserver``: run the local API server as its own process.

``ovnk local up`` starts it this way (``--data`` keeps objects across
restarts).  Admission hooks that must run in the server process are loaded
from ``--admission module:function`` options and from the ``ovnk.admission``
entry point group; each is called with the ``AdmissionRegistry``.
"""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from types import FrameType

from ovnk_core.apiserver.server import ServerOptions, serve

log = logging.getLogger("ovnk_core.apiserver")


def main(argv: list[str] | None = None) -> int:
    """Parse flags, start the server, run until SIGTERM/SIGINT, then stop cleanly."""
    parser = argparse.ArgumentParser(prog="python -m ovnk_core.apiserver",
                                     description="ovnk's local Kubernetes API server")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--data", default=None, help="JSON snapshot file (load + save)")
    parser.add_argument("--kubeconfig", default=None, help="write a kubeconfig here")
    parser.add_argument("--history", type=int, default=10000, help="watch events kept")
    parser.add_argument("--bookmark-interval", type=float, default=60.0)
    parser.add_argument("--service-cidr", action="append", default=None,
                        help="service ClusterIP range (repeat for dual-stack)")
    parser.add_argument("--admission", action="append", default=[],
                        help="module:function called with the admission registry")
    parser.add_argument("--no-admission-entry-points", action="store_true",
                        help="do not load the ovnk.admission entry points")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--pod-netns-template", default="",
                        help="serve pods/exec by running the command in the network namespace "
                             "this names, e.g. 'x-{node}-pod-{namespace}.{name}'")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    options = ServerOptions(history_size=args.history, bookmark_interval=args.bookmark_interval,
                            service_cidrs=tuple(args.service_cidr or ("10.96.0.0/16",)),
                            admission_modules=tuple(args.admission),
                            admission_entry_points=not args.no_admission_entry_points,
                            pod_netns_template=args.pod_netns_template)
    handle = serve(args.host, args.port, args.data, options)
    if args.kubeconfig:
        handle.write_kubeconfig(args.kubeconfig)
    done = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: shutting down", signum)
        done.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    done.wait()
    handle.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
