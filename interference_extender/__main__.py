"""Command line of the scheduler extender: `python -m interference_extender --listen HOST:PORT`.

`scripts/extender` runs this from the repository root with the project's
virtualenv and `collections/` on PYTHONPATH, so the placement engine imports
by its collection path.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from .cluster_view import ClusterView
from .policy import ExtenderConfigError, policy_from_mapping
from .server import serve
from .service import ExtenderService, tune_interpreter

LOG = logging.getLogger("interference_extender")
DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024  # a full NodeList of 5,000 nodes fits
DEFAULT_TIMEOUT_SECONDS = 30.0


def _listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse the command line."""
    parser = argparse.ArgumentParser(
        prog="scripts/extender", description="kube-scheduler extender that avoids noisy neighbours"
    )
    parser.add_argument(
        "--listen", type=_listen, default=("127.0.0.1", 8888), help="HOST:PORT (default 127.0.0.1:8888)"
    )
    cluster = parser.add_mutually_exclusive_group()
    cluster.add_argument("--kubeconfig", type=Path, help="watch pods and nodes of this cluster")
    cluster.add_argument("--in-cluster", action="store_true", help="watch with the pod's service account")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--config", type=Path, help="YAML policy: weights and forbidden_pairs (see docs/extender.md)")
    parser.add_argument(
        "--max-body-bytes", type=int, default=DEFAULT_MAX_BODY_BYTES, help="larger request bodies get 413"
    )
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_SECONDS, help="socket read/write timeout (seconds)"
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument("--log-file", type=Path, help="append the log here instead of stderr")
    parser.add_argument("--pid-file", type=Path, help="write the process id here while serving (for stopping it)")
    return parser.parse_args(argv)


def _load_policy(path: Path | None) -> Any:
    if path is None:
        return policy_from_mapping(None)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return policy_from_mapping(data)


def _api_client(args: argparse.Namespace) -> Any:
    from kubernetes import client, config

    if args.in_cluster:
        config.load_incluster_config()
        return client.ApiClient()
    return config.new_client_from_config(config_file=str(args.kubeconfig), context=args.context)


def main(argv: Sequence[str] | None = None) -> int:
    """Start the service; returns the exit code."""
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        filename=str(args.log_file) if args.log_file else None,
    )
    try:
        policy = _load_policy(args.config)
    except (OSError, yaml.YAMLError, ExtenderConfigError) as exc:
        LOG.error("bad --config %s: %s", args.config, exc)  # noqa: TRY400 - the message says it all
        return 2
    view = ClusterView()
    if args.kubeconfig or args.in_cluster:
        try:
            api_client = _api_client(args)
        except Exception as exc:
            LOG.error("cannot use the cluster (%s): %s", args.kubeconfig or "in-cluster", exc)  # noqa: TRY400
            return 2
        view.start(api_client)
        LOG.info("watching pods and nodes of %s", args.kubeconfig or "the cluster this pod runs in")
    else:
        LOG.info(
            "no --kubeconfig: empty view of pods and nodes; filter and prioritize answer from the request alone "
            "(nodeCacheCapable requests fail every node: the extender knows none)"
        )
    host, port = args.listen
    try:
        server = serve(ExtenderService(view, policy), host, port, args.max_body_bytes, args.timeout)
    except OSError as exc:
        LOG.error("cannot listen on %s:%s: %s", host, port, exc)  # noqa: TRY400
        return 2

    def shutdown(signum: int, frame: FrameType | None) -> None:
        LOG.info("signal %s: stopping", signum)
        view.stop()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    view.wait_synced(timeout=30.0)  # so the first lists are frozen too (no wait without a cluster)
    tune_interpreter()
    if args.pid_file:
        args.pid_file.write_text(f"{os.getpid()}\n", encoding="utf-8")
    LOG.info(
        "listening on http://%s:%s (POST /filter, /prioritize; GET /healthz, /readyz, /metrics)",
        *server.server_address[:2],
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()
        if args.pid_file:
            args.pid_file.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
