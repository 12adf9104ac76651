"""Command line: `python -m scheduler --config FILE [--plugins SOURCE ...] [--kubeconfig FILE]
[--leader-elect BOOL] [--log-level LEVEL]`, `--version`; and extender mode, `python -m scheduler extender
--config FILE [--plugins SOURCE ...] [--kubeconfig FILE] [--listen HOST:PORT] [--log-level LEVEL]`
(scheduler.extender).

Plugins: the in-tree ones, those of the ``kubelab.scheduler_plugins`` entry points, and each ``--plugins``
SOURCE (a module name, a .py file or a package folder declaring ``PLUGINS``; scheduler.framework.registry),
so that the configuration may name them.

Credentials: --kubeconfig, else clientConnection.kubeconfig from the config, else the pod's service
account (in-cluster), as kube-scheduler resolves them. Exit codes: 0 after a clean stop (SIGTERM/SIGINT),
2 for a plugin, configuration or credentials problem (the message names the file/field and the fix).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from scheduler import KUBE_SCHEDULER_VERSION, __version__
from scheduler.config import ConfigError, KubeSchedulerConfiguration, load_config, parse_bind_address
from scheduler.extender.limits import extender_problems
from scheduler.extender.runtime import ExtenderProcess
from scheduler.feature_gates import FeatureGateError, parse_feature_gates
from scheduler.framework import PluginError, Registry, build_profiles, load_registry
from scheduler.framework.registry import IN_TREE
from scheduler.plugins import default_plugins
from scheduler.runtime.client import Client, CredentialsError, load_configuration
from scheduler.runtime.scheduler import LeaderSettings, RuntimeSettings, Scheduler

log = logging.getLogger("scheduler")

DEFAULT_EXTENDER_LISTEN = "127.0.0.1:8888"


def _bool(value: str) -> bool:
    low = value.strip().lower()
    if low in ("true", "1", "yes", "on"):
        return True
    if low in ("false", "0", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {value!r}")


def _common_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="KubeSchedulerConfiguration YAML (kubescheduler.config.k8s.io/v1)")
    p.add_argument(
        "--plugins",
        action="append",
        default=[],
        metavar="SOURCE",
        help="load the plugins a module name, .py file or package folder declares in PLUGINS, so that the "
        "configuration may enable them (repeatable)",
    )
    p.add_argument(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help="kube-scheduler's feature gates of its minor; GenericWorkload=true,GangScheduling=true adds "
        "GangScheduling to the default profile (an unknown gate is refused)",
    )
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file; overrides clientConnection.kubeconfig (default: in-cluster service account)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="debug logs every node's verdict for every pod",
    )
    p.add_argument("--version", action="version",
                   version=f"kubelab-scheduler {__version__} (decides as kube-scheduler {KUBE_SCHEDULER_VERSION})")


def _require_config(p: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.Namespace:
    if not args.config:
        p.error("--config FILE is required (a KubeSchedulerConfiguration, e.g. templates' scheduler config)")
    return args


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scheduler",
        description="kubelab's Python scheduler: places pods whose spec.schedulerName "
        "matches a profile of the configuration. `python -m scheduler extender --help`: "
        "the same plugins as a kube-scheduler extender.",
    )
    _common_options(p)
    p.add_argument(
        "--leader-elect",
        type=_bool,
        metavar="BOOL",
        help="override leaderElection.leaderElect (false for local runs)",
    )
    return _require_config(p, p.parse_args(argv))


def _listen_address(value: str) -> tuple[str, int]:
    try:
        return parse_bind_address(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def parse_extender_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="python -m scheduler extender",
        description="kubelab's plugins as kube-scheduler extender webhooks: POST <urlPrefix>/filter and "
        "<urlPrefix>/prioritize (both nodeCacheCapable modes), GET /healthz, /readyz, /metrics. "
        "The profile named by the pod's schedulerName answers, else the configuration's first; "
        "leaderElection, healthzBindAddress and metricsBindAddress are not used.",
    )
    _common_options(p)
    p.add_argument(
        "--listen",
        type=_listen_address,
        default=DEFAULT_EXTENDER_LISTEN,
        metavar="HOST:PORT",
        help=f"address of the extender's HTTP listener (default {DEFAULT_EXTENDER_LISTEN}: loopback, for a "
        "kube-scheduler in the same pod or on the same machine)",
    )
    return _require_config(p, p.parse_args(argv))


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


def _client(args: argparse.Namespace, cfg: KubeSchedulerConfiguration, pool_size: int) -> Client:
    """The API client from --kubeconfig, else clientConnection.kubeconfig, else in-cluster credentials."""
    configuration = load_configuration(args.kubeconfig or cfg.clientConnection.kubeconfig or None)
    return Client(configuration, qps=cfg.clientConnection.qps, burst=cfg.clientConnection.burst,
                  pool_size=pool_size)


def _registry(args: argparse.Namespace, *, extender: bool = False) -> Registry:
    """The in-tree plugins, the entry points' and those of each --plugins SOURCE, with kube-scheduler's
    default plugin set under --feature-gates. An extender checks the gates but keeps the plain default: the
    kube-scheduler in front of it, given the same gates, runs the points they add (GangScheduling's
    PreEnqueue and Permit), which the extender protocol never reaches. Raises PluginError, FeatureGateError."""
    gates = parse_feature_gates(args.feature_gates)
    if gates.explicit():
        log.info("feature gates: %s", gates.as_flag())
    registry = load_registry(args.plugins)
    if not extender:
        registry = registry.with_defaults(default_plugins(gates.enabled))
    for name in registry:
        if registry.source_of(name) != IN_TREE:
            log.info("plugin %s from %s", name, registry.source_of(name))
    return registry


def build(args: argparse.Namespace) -> Scheduler:
    """Plugins + config + credentials -> a Scheduler, not started. Raises PluginError / ConfigError /
    CredentialsError."""
    registry = _registry(args)
    cfg = load_config(args.config, registry)
    problems = cfg.point_problems()
    if problems:
        raise ConfigError(f"{args.config}: invalid scheduler configuration:\n  " + "\n  ".join(problems))
    profiles = build_profiles(cfg, registry)
    settings = settings_from(cfg, args.leader_elect)
    client = _client(args, cfg, pool_size=settings.bind_workers + 8)
    for name, profile in profiles.items():
        log.info("profile %s: %r", name, profile)
    log.info(
        "API server %s, client qps %s burst %s, leader election %s",
        client.host,
        cfg.clientConnection.qps,
        cfg.clientConnection.burst,
        f"on (lease {settings.leader.namespace}/{settings.leader.name})" if settings.leader else "off",
    )
    return Scheduler(client, profiles, settings)


def build_extender(args: argparse.Namespace) -> ExtenderProcess:
    """Plugins + config + credentials -> an ExtenderProcess listening on --listen, not started. Raises
    PluginError / ConfigError / CredentialsError, and OSError when it cannot listen."""
    registry = _registry(args, extender=True)
    cfg = load_config(args.config, registry)
    problems = extender_problems(cfg)
    if problems:
        raise ConfigError(f"{args.config}: cannot serve as an extender:\n  " + "\n  ".join(problems))
    profiles = build_profiles(cfg, registry)
    client = _client(args, cfg, pool_size=4)  # two watches and their relists
    for name, profile in profiles.items():
        log.info("profile %s: %r", name, profile)
    log.info("API server %s; extender verbs filter and prioritize", client.host)
    return ExtenderProcess(client, profiles, args.listen)


def _setup_logging(level: str) -> None:
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("urllib3").setLevel(logging.WARNING)


def _on_stop_signals(stopping: Callable[[], None]) -> threading.Event:
    """An event set by SIGTERM or SIGINT, which also call ``stopping`` (signal-safe work only)."""
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()
        stopping()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    return stop


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["extender"]:
        return extender_main(argv[1:])
    args = parse_args(argv)
    _setup_logging(args.log_level)
    try:
        sched = build(args)
    except (PluginError, ConfigError, CredentialsError, FeatureGateError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # the only socket opened while building: the health/metrics listener
        print(
            f"error: cannot listen for /healthz and /metrics ({err.strerror}): change healthzBindAddress/"
            f"metricsBindAddress in {args.config} (host:port) or free that port",
            file=sys.stderr,
        )
        return 2

    stop = _on_stop_signals(sched.stop_requested)
    if not sched.check_server():  # retries with backoff until reachable or stopped
        return 0
    missing = sched.unserved_kinds()
    if missing:
        print("error: " + "\n  ".join(missing), file=sys.stderr)
        return 2
    sched.start()
    while not stop.wait(1.0):
        pass
    sched.stop()
    log.info("stopped after binding %d pods", sched.scheduled_count)
    return 0


def extender_main(argv: list[str]) -> int:
    args = parse_extender_args(argv)
    _setup_logging(args.log_level)
    try:
        extender = build_extender(args)
    except (PluginError, ConfigError, CredentialsError, FeatureGateError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except OSError as err:
        host, port = args.listen
        print(f"error: cannot listen on {host}:{port} ({err.strerror}): choose another --listen HOST:PORT or "
              "free that port", file=sys.stderr)
        return 2
    stop = _on_stop_signals(lambda: None)
    extender.start()
    while not stop.wait(1.0):
        pass
    extender.stop()
    log.info("stopped")
    return 0
