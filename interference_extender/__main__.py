"""Command line of the scheduler extender: `python -m interference_extender --listen HOST:PORT`.

`scripts/extender` (or the scheduler_extender role, with ansible_playbook_python) runs this with the project's
virtualenv and `collections/` on PYTHONPATH, so the placement engine imports
by its collection path.
"""

from __future__ import annotations

import argparse
import logging
import logging.handlers
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
from .repeated_logs import RepeatedLogFilter
from .server import ServerLimits, client_auth, memory_bound_bytes, serve
from .service import ExtenderService, tune_interpreter

LOG = logging.getLogger("interference_extender")
DEFAULTS = ServerLimits()
# --log-file rotates at this size and keeps two old files (30 MiB at most on disk).
LOG_FILE_BYTES = 10 * 1024 * 1024
LOG_FILE_BACKUPS = 2
# cgroup v2: the container's memory limit ("max" when there is none).
CGROUP_MEMORY_MAX = Path("/sys/fs/cgroup/memory.max")

# The options of the limits group: (option, the ServerLimits field it sets, which is also where argparse
# stores it, its type, its help, where {default} is the field's default).
LIMIT_OPTIONS: tuple[tuple[str, str, type, str], ...] = (
    ("--max-body-bytes", "max_body_bytes", int, "larger request bodies get 413 (default {default})"),
    ("--body-budget-bytes", "body_budget_bytes", int,
     "request bodies being read or decided at once hold at most this many bytes; "
     "a body that does not fit gets 503 (default {default})"),
    ("--max-connections", "max_connections", int,
     "connections served at once, a thread each; more get 503 (default {default})"),
    ("--timeout", "request_timeout", float,
     "seconds a request may take to arrive, headers and body together, and its answer to be taken "
     "(default {default:g})"),
    ("--idle-timeout", "idle_timeout", float,
     "seconds a keep-alive connection may wait for its next request (default {default:g})"),
)


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
    limits = parser.add_argument_group("limits (see docs/extender.md)")
    for option, field, kind, text in LIMIT_OPTIONS:
        default = getattr(DEFAULTS, field)
        limits.add_argument(option, dest=field, type=kind, default=default, help=text.format(default=default))
    tls = parser.add_argument_group("HTTPS with client certificates (see docs/extender.md, Who may call it)")
    tls.add_argument(
        "--tls-cert", type=Path, help="serve HTTPS with this certificate (PEM); needs --tls-key and --client-ca"
    )
    tls.add_argument("--tls-key", type=Path, help="private key of --tls-cert (PEM)")
    tls.add_argument(
        "--client-ca", type=Path,
        help="CA (PEM) the scheduler's client certificate must chain to for /filter, /prioritize and /bind",
    )
    tls.add_argument(
        "--client-name", action="append", default=[],
        help="commonName of a client certificate allowed to call them (repeatable; default interference-scheduler)",
    )
    parser.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    parser.add_argument(
        "--log-file", type=Path,
        help=f"log here instead of stderr, rotated at {LOG_FILE_BYTES // (1024 * 1024)} MiB "
        f"({LOG_FILE_BACKUPS} old files kept)",
    )
    parser.add_argument("--pid-file", type=Path, help="write the process id here while serving (for stopping it)")
    return parser.parse_args(argv)


def limits_from(args: argparse.Namespace) -> ServerLimits:
    """The HTTP limits the parsed command line asks for."""
    return ServerLimits(**{field: getattr(args, field) for _option, field, _kind, _text in LIMIT_OPTIONS})


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


def _set_up_logging(level: str, log_file: Path | None) -> None:
    """Log to stderr or a rotated file, each kind of repeated traceback or client warning once a minute."""
    handler: logging.Handler = (
        logging.handlers.RotatingFileHandler(log_file, maxBytes=LOG_FILE_BYTES, backupCount=LOG_FILE_BACKUPS)
        if log_file
        else logging.StreamHandler()
    )
    handler.addFilter(RepeatedLogFilter())
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=[handler])


def _container_memory_limit() -> int | None:
    """The cgroup's memory limit (bytes), None outside a limited cgroup (v2)."""
    try:
        raw = CGROUP_MEMORY_MAX.read_text(encoding="ascii").strip()
    except OSError:
        return None
    return int(raw) if raw.isdigit() else None


def _warn_when_over_the_memory_limit(limits: ServerLimits) -> None:
    memory_limit = _container_memory_limit()
    needed = memory_bound_bytes(limits)
    if memory_limit is not None and needed > memory_limit:
        LOG.warning(
            "the limits may need %d MiB, over the container's memory limit of %d MiB: lower --body-budget-bytes "
            "or --max-connections, or raise the limit (docs/extender.md, Memory)",
            needed // 2**20, memory_limit // 2**20,
        )


def main(argv: Sequence[str] | None = None) -> int:
    """Start the service; returns the exit code."""
    args = parse_args(argv)
    _set_up_logging(args.log_level, args.log_file)
    limits = limits_from(args)
    try:
        limits.check()
    except ValueError as exc:
        LOG.error("bad limits: %s", exc)  # noqa: TRY400 - the message says it all
        return 2
    _warn_when_over_the_memory_limit(limits)
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
    tls = None
    if args.tls_cert or args.tls_key or args.client_ca:
        if not (args.tls_cert and args.tls_key and args.client_ca):
            LOG.error("HTTPS needs all of --tls-cert, --tls-key and --client-ca")
            return 2
        try:
            tls = client_auth(str(args.tls_cert), str(args.tls_key), str(args.client_ca),
                              frozenset(args.client_name or ["interference-scheduler"]))
        except (OSError, ValueError) as exc:
            LOG.error("cannot use the TLS files: %s", exc)  # noqa: TRY400 - the message says it all
            return 2
    else:
        LOG.warning("plain HTTP: any client that reaches %s:%s may call /filter, /prioritize and /bind", host, port)
    try:
        server = serve(ExtenderService(view, policy), host, port, limits, tls)
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
        "listening on %s://%s:%s (POST /filter, /prioritize, /bind; GET /healthz, /readyz, /metrics)",
        "https" if tls else "http", *server.server_address[:2],
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
