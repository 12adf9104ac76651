"""Command line: `python -m scheduler --config FILE [--kubeconfig FILE] [--leader-elect BOOL]
[--log-level LEVEL]`, `--version`.

Credentials: --kubeconfig, else clientConnection.kubeconfig from the config, else the pod's service
account (in-cluster), as kube-scheduler resolves them. Exit codes: 0 after a clean stop (SIGTERM/SIGINT),
2 for a configuration or credentials problem (the message names the file/field and the fix).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from types import FrameType

from scheduler import __version__
from scheduler.client import Client, CredentialsError, load_configuration
from scheduler.config import ConfigError, KubeSchedulerConfiguration, load_config, parse_bind_address
from scheduler.framework import build_profiles
from scheduler.scheduler import LeaderSettings, RuntimeSettings, Scheduler

log = logging.getLogger("scheduler")


def _bool(value: str) -> bool:
    low = value.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scheduler",
        description="kubelab's Python scheduler: places pods whose spec.schedulerName "
        "matches a profile of the configuration.",
    )
    p.add_argument("--config", help="KubeSchedulerConfiguration YAML (kubescheduler.config.k8s.io/v1)")
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file; overrides clientConnection.kubeconfig (default: in-cluster service account)",
    )
    p.add_argument(
        "--leader-elect",
        type=_bool,
        metavar="BOOL",
        help="override leaderElection.leaderElect (false for local runs)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="debug logs every node's verdict for every pod",
    )
    p.add_argument("--version", action="version", version=f"kubelab-scheduler {__version__}")
    args = p.parse_args(argv)
    if not args.config:
        p.error("--config FILE is required (a KubeSchedulerConfiguration, e.g. templates' scheduler config)")
    return args


def settings_from(cfg: KubeSchedulerConfiguration, leader_elect: bool | None) -> RuntimeSettings:
    le = cfg.leaderElection
    elect = le.leaderElect if leader_elect is None else leader_elect
    leader = None
    if elect:
        leader = LeaderSettings(
            namespace=le.resourceNamespace,
            name=cfg.lease_name,
            lease_duration=le.leaseDuration,
            renew_deadline=le.renewDeadline,
            retry_period=le.retryPeriod,
        )
    serve = (parse_bind_address(cfg.healthzBindAddress), parse_bind_address(cfg.metricsBindAddress))
    return RuntimeSettings(leader=leader, serve=serve)


def build(args: argparse.Namespace) -> Scheduler:
    """Config + credentials -> a Scheduler, not started. Raises ConfigError / CredentialsError."""
    cfg = load_config(args.config)
    profiles = build_profiles(cfg)
    kubeconfig = args.kubeconfig or cfg.clientConnection.kubeconfig or None
    configuration = load_configuration(kubeconfig)
    settings = settings_from(cfg, args.leader_elect)
    client = Client(
        configuration,
        qps=cfg.clientConnection.qps,
        burst=cfg.clientConnection.burst,
        pool_size=settings.bind_workers + 8,
    )
    for name, profile in profiles.items():
        log.info("profile %s: %r", name, profile)
    log.info(
        "API server %s, client qps %s burst %s, leader election %s",
        configuration.host,
        cfg.clientConnection.qps,
        cfg.clientConnection.burst,
        f"on (lease {settings.leader.namespace}/{settings.leader.name})" if settings.leader else "off",
    )
    return Scheduler(client, profiles, settings)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    try:
        sched = build(args)
    except (ConfigError, CredentialsError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the only socket opened while building: the health/metrics listener
        print(
            f"error: cannot listen for /healthz and /metrics ({err.strerror}): change healthzBindAddress/"
            f"metricsBindAddress in {args.config} (host:port) or free that port",
            file=sys.stderr,
        )
        return 2

    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()
        sched.stop_requested()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if not sched.check_server():  # retries with backoff until reachable or stopped
        return 0
    sched.start()
    while not stop.wait(1.0):
        pass
    sched.stop()
    log.info("stopped after binding %d pods", sched.scheduled_count)
    return 0
