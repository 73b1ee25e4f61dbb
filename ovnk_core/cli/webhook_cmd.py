"""``ovnk webhook``: serve ovnk's admission webhooks over HTTPS until SIGTERM.

Upstream's ``ovnkube-identity`` (webhook part) with its flag names: ``--webhook-cert-dir``
(``tls.crt``, ``tls.key``), ``--webhook-host``, ``--webhook-port``, ``--tls-min-version``,
``--loglevel``.  It needs no API access: the rules it serves decide from the
AdmissionReview alone.
"""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from ovnk_core.errors import OvnkError
from ovnk_core.logsetup import setup_logging
from ovnk_core.webhook.endpoints import load_rules
from ovnk_core.webhook.server import DEFAULT_PORT, TLS_VERSIONS, WebhookOptions, WebhookServer


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "webhook", help="serve ovnk's admission webhooks over HTTPS (ovnkube-identity)",
        description="Serves the validating admission webhooks of ovnk's annotation rules "
                    "(k8s.ovn.org/pod-networks, the node annotations) as "
                    "admission.k8s.io/v1 AdmissionReviews at /pod and /node, for a "
                    "ValidatingWebhookConfiguration to call. Stops on SIGTERM.")
    parser.add_argument("--webhook-cert-dir", type=Path, required=True,
                        help="directory that contains the server key and certificate "
                             "(tls.key, tls.crt)")
    parser.add_argument("--webhook-host", default="localhost",
                        help="the address that the webhook server will listen on "
                             "(default: localhost)")
    parser.add_argument("--webhook-port", type=int, default=DEFAULT_PORT,
                        help=f"port number that the webhook server will serve "
                             f"(default: {DEFAULT_PORT})")
    parser.add_argument("--tls-min-version", default="VersionTLS12",
                        choices=sorted(TLS_VERSIONS),
                        help="minimum TLS version supported by the webhook server")
    parser.add_argument("--loglevel", default="info",
                        help="debug, info, warning, error (or 0-5 as upstream's klog levels)")
    parser.add_argument("--ready-file", type=Path, default=None,
                        help="write this file once serving (for supervisors)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        setup_logging(args.loglevel)
    except ValueError as exc:
        raise OvnkError(f"--loglevel: {exc}") from None
    options = WebhookOptions(args.webhook_cert_dir, args.webhook_host, args.webhook_port,
                             args.tls_min_version)
    for path in (options.cert_file, options.key_file):
        if not path.is_file():
            raise OvnkError(f"--webhook-cert-dir {options.cert_dir}: no {path.name} there")
    rules = load_rules()
    if not rules.paths:
        raise OvnkError("ovnk webhook: no rules to serve (no ovnk.webhook entry point is "
                        "installed; reinstall ovnk-core)")
    try:
        server = WebhookServer(options, rules)
    except (OSError, ValueError) as exc:
        raise OvnkError(f"ovnk webhook: cannot serve on {options.host}:{options.port}: "
                        f"{exc}") from None
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    with server:
        if args.ready_file is not None:
            args.ready_file.parent.mkdir(parents=True, exist_ok=True)
            args.ready_file.write_text("ready\n")
        stop.wait()
    if args.ready_file is not None:
        args.ready_file.unlink(missing_ok=True)
    return 0
