"""The lab's verbs. Thin: parse options, call labkit, print results. `./lab --help` shows them all.

Every verb takes --lab FILE (default: lab.yaml, or $KUBELAB_FILE) and validates it before anything runs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

from invoke import Exit, task
from rich.table import Table

from labdef.errors import UserError
from labdef.lab import DEFAULT_LAB_FILE, Lab, load_lab, version_warnings, with_changes
from labkit import doctor, lifecycle
from labkit.console import console, fail, step, warn
from labkit.paths import LabPaths
from labkit.placement import options as placement_options
from labkit.vagrant import VagrantLab

LAB_HELP = {"lab": "lab definition file (default: lab.yaml, or $KUBELAB_FILE)"}


def _lab_file(lab: str | None) -> Path:
    return Path(lab or os.environ.get("KUBELAB_FILE") or DEFAULT_LAB_FILE)


@contextlib.contextmanager
def _user_errors() -> Iterator[None]:
    """Failures a user can fix become one clear message and exit 2, not a traceback."""
    try:
        yield
    except UserError as err:
        fail(str(err))
        raise Exit(code=2) from None


def _load(lab: str | None) -> tuple[Lab, Path]:
    path = _lab_file(lab)
    with _user_errors():
        return load_lab(path), path


UP_HELP = LAB_HELP | {
    "provision": "provision the machines to a Ready cluster after they are up (default: yes)",
    "inventory": ("provision the hosts of this pyinfra inventory over SSH instead of Vagrant VMs (real machines; "
                  "start from inventory/ssh-example.py)"),
    "package-source": ("override kubernetes.package_source for this run: a mirror URL or file:///dir/ holding a "
                       "flat apt repository with kubeadm, kubelet and kubectl (air-gapped labs)"),
    "timeout": "seconds to wait for nodes, Calico and CoreDNS to become ready (default: 900)",
    "prepare-only": ("stop after node prep (containerd, kernel settings, Kubernetes packages), before kubeadm "
                     "init: then `snapshot` it, and `restore` + `up` rebuilds the cluster in minutes"),
}


@task(help=UP_HELP)
def up(c, lab=None, provision=True, inventory=None, package_source=None, timeout=900, prepare_only=False):
    """Bring the lab up to a Ready cluster (safe to run again).

    Machines first, then provisioning: node prep, kubeadm init, Calico, joins, kubeconfig on the host.

    Example: ./lab up --lab my-lab.yaml --timeout 1200
    """
    definition, path = _load(lab)
    for warning in version_warnings(definition):
        warn(warning)
    with _user_errors():
        if package_source:
            definition = with_changes(definition, {"kubernetes.package_source": package_source},
                                      source="--package-source")
        if inventory is None:
            lifecycle.bring_up_machines(definition, path)
        if not provision:
            return
        kubeconfig = lifecycle.provision(definition, path, inventory, timeout=float(timeout),
                                         prepare_only=prepare_only)
    if prepare_only:
        console.print("[green]nodes prepared[/]: save them with ./lab snapshot --name prepared")
    else:
        console.print(f"[green]cluster {definition.name} is ready[/]: export KUBECONFIG={kubeconfig}")


@task(help=LAB_HELP | {
    "kubeconfig": "cluster to deploy to (default: the lab's exported kubeconfig)",
    "render-only": "write the manifests that would be applied to this directory and stop (extender mode: also "
                   "kube-scheduler-config.yaml)",
    "inventory": "side-load onto the hosts of this pyinfra inventory instead of the lab's VMs",
    "timeout": "seconds to wait for the scheduler's rollout (default: 300)",
    "watch": ("deploy again on every saved change under scheduler/ or a plugin folder of scheduler.plugins (a "
              "failed round waits for the next save)"),
})
def deploy_scheduler(c, lab=None, kubeconfig=None, render_only=None, inventory=None, timeout=300, watch=False):
    """Build, side-load and roll out the scheduler.

    Checks the lab's plugins and profile, builds the image (with the plugin folders), side-loads it into every
    node, applies its config and manifests, waits for the rollout.

    Example: ./lab deploy-scheduler --watch   (rebuild, side-load, roll out on every save under scheduler/ or a
             plugin folder)
    """
    from labkit.scheduler_deploy.verb import run_verb  # pulls in pyinfra (slow): only this verb needs it

    definition, path = _load(lab)
    step("deploy-scheduler")
    with _user_errors():
        run_verb(definition, path, Path(kubeconfig) if kubeconfig else None,
                 Path(render_only) if render_only else None, inventory, float(timeout), echo=console.print,
                 watch=watch)


@task(help=LAB_HELP)
def down(c, lab=None):
    """Destroy the lab's machines and its state on this host.

    Also removes the exported kubeconfig.

    Example: ./lab down --lab my-lab.yaml
    """
    definition, path = _load(lab)
    with _user_errors():
        lifecycle.tear_down(definition, path)
    console.print(f"[green]lab {definition.name} is gone[/]")


@task(help=LAB_HELP)
def rebuild(c, lab=None):
    """Tear the lab down and bring it up again from scratch.

    Example: ./lab rebuild
    """
    down(c, lab=lab)
    up(c, lab=lab)


@task(help=LAB_HELP)
def status(c, lab=None):
    """Show the machines, nodes and scheduler.

    Nodes and the scheduler once a cluster exists.

    Example: ./lab status --lab my-lab.yaml
    """
    definition, path = _load(lab)
    with _user_errors():
        states = VagrantLab(definition, path).status()
    table = Table("machine", "role", "ip", "state", title=f"lab {definition.name}")
    for node in definition.nodes:
        table.add_row(node.name, node.role, str(node.ip), states.get(node.name, "unknown"))
    console.print(table)
    kubeconfig = LabPaths.for_lab(definition.name).kubeconfig
    if not kubeconfig.exists():
        console.print("cluster: not provisioned yet (no exported kubeconfig)")
        return
    # The Kubernetes client takes a second to import: only the verbs that talk to a cluster load it.
    from labkit import cluster
    from labkit.kube import KubeconfigError, KubeError

    try:
        rows, sched = cluster.summary(kubeconfig, definition)
    except (KubeError, KubeconfigError) as err:
        console.print(f"cluster: {err}")
        return
    nodes = Table("node", "status", "roles", "version", "internal ip", title="cluster")
    for row in rows:
        nodes.add_row(row.name, row.ready, row.roles, row.version, row.internal_ip)
    console.print(nodes)
    console.print(f"scheduler {definition.scheduler.name}: "
                  + (f"{sched.ready} ready, image {sched.image}" if sched else "not deployed (./lab deploy-scheduler)"))


@task(help=LAB_HELP | {"name": "snapshot name (default: base)"})
def snapshot(c, lab=None, name="base"):
    """Snapshot every machine, to restore it in seconds.

    For instance of machines prepared but not initialised (`./lab up --prepare-only`).

    Example: ./lab up --prepare-only && ./lab snapshot --name prepared
    """
    definition, path = _load(lab)
    step(f"saving snapshot {name!r} of every machine")
    with _user_errors():
        lifecycle.machines(definition, path).snapshot_save(name)


@task(help=LAB_HELP | {"name": "snapshot name (default: base)"})
def restore(c, lab=None, name="base"):
    """Restore every machine to a saved snapshot.

    One saved with `./lab snapshot`.

    Example: ./lab restore --name prepared && ./lab up
    """
    definition, path = _load(lab)
    step(f"restoring snapshot {name!r} on every machine")
    with _user_errors():
        lifecycle.machines(definition, path).snapshot_restore(name)


def _node_runner(definition: Lab, path: Path):
    """Runs a command on a lab node over ssh, as `./lab ssh NODE -- CMD` does."""
    import subprocess

    from labkit.ssh import lab_ssh_argv

    def run(node: str, command: list[str]) -> subprocess.CompletedProcess[str]:
        return subprocess.run(lab_ssh_argv(definition, path, node, command), capture_output=True, text=True,
                              timeout=300, check=False)
    return run


@task(name="doctor", help=LAB_HELP)
def doctor_(c, lab=None):
    """Check this host and the lab definition.

    Python packages, Vagrant, the provider, CPUs, memory, network, the lab's files and its scheduler plugins
    (they load, and scheduler.profile fits them).

    Example: ./lab doctor --lab my-lab.yaml
    """
    definition, path = _load(lab)
    checks = doctor.run_checks(definition)
    if definition.dra.example_driver:
        checks += doctor.check_dra_image(definition, _node_runner(definition, path))
    table = Table("check", "result", "detail")
    colours = {doctor.OK: "green", doctor.WARN: "yellow", doctor.FAIL: "red"}
    for check in checks:
        table.add_row(check.name, f"[{colours[check.verdict]}]{check.verdict}[/]", check.detail)
    console.print(table)
    if any(c.verdict == doctor.FAIL for c in checks):
        raise Exit("doctor found problems: fix the lines marked fail", code=1)


@task(help=LAB_HELP | placement_options.HELP, iterable=["scenarios", "only"])
def test_placement(c, lab=None, kubeconfig=None, context=None, json=False, keep=False, wait_running=False,
                   include_restart=False, timeout=60, scheduler_config=None, scenarios=None, only=None,
                   html=None):
    """Prove where the scheduler places pods.

    Runs the placement scenarios (built-in, the lab's, or --scenarios FILE), prints their verdicts, exits 1 on a
    miss.

    Example: ./lab test-placement --include-restart --json > verdicts.json
             ./lab test-placement --scenarios my_plugin/scenarios.yaml --only my-case
             ./lab test-placement --html placement.html   (the report as one file to share)
    """
    from labkit.placement.cli import default_kubeconfig, execute  # the scheduler's framework: only this verb

    definition, _ = _load(lab)
    options = placement_options.PlacementOptions(
        kubeconfig=Path(kubeconfig) if kubeconfig else default_kubeconfig(definition), context=context,
        keep=keep, wait_running=wait_running, include_restart=include_restart, timeout=float(timeout),
        scheduler_config=Path(scheduler_config) if scheduler_config else None,
        scenarios_files=[Path(f) for f in scenarios] or None, only=list(only) or None)
    code = execute(definition, options, json_output=json, html=Path(html) if html else None)
    if code:
        raise Exit(code=code)


@task(positional=["pod"], help=LAB_HELP | {
    "pod": "the pod to explain, by name (with --what-if, the name the manifest's pod is explained under)",
    "namespace": "the pod's namespace (default: default; with --what-if, the manifest's own)",
    "what-if": "explain the Pod manifest in this YAML file as POD, without creating it",
    "json": "print the explanation as JSON (keys: README, `./lab explain`)",
    "all": "one row per node (default: nodes failing for the same reasons share one row)",
    "kubeconfig": "cluster to read (default: the lab's exported kubeconfig)",
    "context": "kubeconfig context (default: its current one)",
    "scheduler-config": placement_options.HELP["scheduler-config"],
})
def explain(c, pod, lab=None, namespace=None, what_if=None, json=False, kubeconfig=None, context=None,
            scheduler_config=None, all=False):
    """Show why the scheduler would place a pod where it would.

    Each node's filter verdicts and scores, and the node it picks.

    Example: ./lab explain my-pod --namespace team-a
    """
    from labkit.placement.cli import (  # the scheduler's framework: only here
        default_kubeconfig,
        output_console,
    )
    from labkit.placement.explain_verb import ExplainOptions, explain_target, print_result

    definition, _ = _load(lab)
    options = ExplainOptions(
        kubeconfig=Path(kubeconfig) if kubeconfig else default_kubeconfig(definition), context=context, pod=pod,
        namespace=namespace, what_if=Path(what_if) if what_if else None,
        scheduler_config=Path(scheduler_config) if scheduler_config else None)
    with _user_errors():
        explanation = explain_target(definition, options)
    print_result(output_console(), explanation, json_output=json, every_node=all)


@task(help=LAB_HELP | {
    "workload": "the workload file: groups of pods with arrival times or rates, durations, priorities, gangs",
    "cluster": "the cluster file: Node and Pod documents, or node pools (count, capacity, labels, taints, zones)",
    "from-cluster": "start from the lab's cluster (or --kubeconfig's): nodes and pods listed once, never changed",
    "kubeconfig": "with --from-cluster: the cluster to read (default: the lab's exported kubeconfig)",
    "context": "kubeconfig context (default: its current one)",
    "profile": "a KubeSchedulerConfiguration file whose profiles are compared with the lab's (repeatable)",
    "no-lab-profile": "compare only the --profile files' profiles, not the lab's (or the default one) beside them",
    "plugins": "a plugin folder or module to load, as the scheduler's --plugins takes it (repeatable)",
    "until": "simulated seconds to stop at: what is still pending then is reported (default: 3600)",
    "seed": "seed of the scheduler's random draws (default: 0)",
    "explain": "explain one workload pod's last decision in each profile: every node's filters and scores",
    "json": "print the comparison as JSON",
    "html": "write the comparison as one self-contained HTML file with charts",
}, iterable=["profile", "plugins"], auto_shortflags=False)  # -h would shadow help (see ui)
def simulate(c, workload, lab=None, cluster=None, from_cluster=False, kubeconfig=None, context=None, profile=None,
             no_lab_profile=False, plugins=None, until=3600.0, seed=0, explain=None, json=False, html=None):
    """Run a workload through profiles on a simulated clock.

    The real framework (every extension point, preemption, the lab's plugins) with no cluster: bound and
    pending pods, time to bind, utilization, fragmentation, spread, score shares, pods placed differently.

    Example: ./lab simulate --cluster pools.yaml --workload workload.yaml --profile cheap.yaml --html sim.html
    """
    from labkit.placement.cli import output_console
    from labkit.simulate.cli import SimulateOptions, execute

    path = _lab_file(lab)
    definition = _load(lab)[0] if lab or path.exists() else None
    options = SimulateOptions(
        workload=Path(workload), cluster=Path(cluster) if cluster else None, from_cluster=from_cluster,
        kubeconfig=Path(kubeconfig) if kubeconfig else None, context=context,
        profiles=[Path(p) for p in profile or ()], plugins=list(plugins or ()), until=float(until), seed=int(seed),
        explain=explain, lab_profile=not no_lab_profile)
    with _user_errors():
        code = execute(definition, options, output_console(), json_output=json, html=Path(html) if html else None)
    if code:
        raise Exit(code=code)


# No short flags: -h (from --host) would shadow `./lab ui -h`, the help every verb answers.
@task(auto_shortflags=False, help=LAB_HELP | {
    "kubeconfig": "cluster to show (default: the lab's exported kubeconfig)",
    "context": "kubeconfig context (default: its current one)",
    "port": "port to serve on (default: 8765; 0 picks a free one)",
    "host": "address to bind (default: 127.0.0.1, loopback only; anything else exposes the page)",
    "no-browser": "only print the URL; do not open a browser",
    "scheduler-config": placement_options.HELP["scheduler-config"],
})
def ui(c, lab=None, kubeconfig=None, context=None, port=8765, host="127.0.0.1", no_browser=False,
       scheduler_config=None):
    """Serve a live placement page for the lab's cluster.

    Nodes and their pods as the watches report them, the pending pods and why, every node's verdicts and
    scores for a selected pod or a pasted manifest (what-if), the scheduler's leader and metrics. Read-only.

    Example: ./lab ui --no-browser --port 9000
    """
    from labkit.kube import Kube
    from labkit.placement.cli import default_kubeconfig
    from labkit.ui.server import Source, serve

    definition, _ = _load(lab)
    with _user_errors():
        kube = Kube.from_kubeconfig(Path(kubeconfig) if kubeconfig else default_kubeconfig(definition), context)
        try:
            serve(Source(definition, kube, Path(scheduler_config) if scheduler_config else None), host,
                  int(port), open_browser=not no_browser, echo=lambda line: print(line, flush=True))
        finally:
            kube.close()


@task(help={"fast": "the unit tier: no API test server, no root, no VMs, no image builds",
            "api": "the API tier: the scheduler and the placement runner against the API test server",
            "faults": "the fault tier: the scheduler under injected faults through a TCP proxy (~2 min)",
            "browser": "the browser tier: the placement page (./lab ui) in headless Chromium (Debian's chromium, "
                       "chromium-driver)",
            "k": "only tests matching this pytest -k expression"})
def test(c, fast=False, api=False, faults=False, browser=False, k=None):
    """Run the test suites (every tier by default).

    The switches pick tiers and combine (--fast --api). With none, also the system and image suites, whose
    Debian packages are installed first when run as root; under CI=true nothing that can run may skip.

    Example: ./lab test --fast -k kubeconfig
    """
    from labkit import test_tiers

    tiers = [tier for tier, chosen in (("unit", fast), ("api", api), ("faults", faults), ("browser", browser))
             if chosen]
    if not tiers:
        _install_test_dependencies(c)
    c.run(shlex.join([sys.executable, "-m", "pytest", *test_tiers.pytest_args(tiers, k)]))


def _install_test_dependencies(c) -> None:
    """The system and image suites need Debian packages: install them when we are root, else say why not."""
    script = Path(__file__).parent / "scripts" / "install-test-deps.sh"
    if os.geteuid() == 0:
        step("test dependencies (Debian packages)")
        c.run(shlex.quote(str(script)))
    else:
        console.print(f"[yellow]not root[/]: skipping {script}; the system and image suites will skip")


@task(help={
    "nodes": "end to end: fake nodes to create (default 500)",
    "pods": "end to end: pending pods to create (default 2000)",
    "kubeconfig": "also measure end to end through this API server (creates and deletes fake nodes and pods)",
    "json": "also write the report as JSON to this file",
    "in_process_only": "only the in-process decisions/s (no API server)",
    "qps": "end to end: the scheduler's client qps (default 0 = unthrottled; kube-scheduler's default is 50)",
    "burst": "end to end: the scheduler's client burst (default 100)",
    "repeat": "run every row this many times and report the median run (default 1)",
})
def benchmark(c, nodes=500, pods=2000, kubeconfig=None, json=None, in_process_only=False, qps=None, burst=100,
              repeat=1):
    """Measure the scheduler's throughput.

    Decisions/s in-process at 100/1,000/5,000 nodes, extender latency per request, pods bound/s end to end,
    spread.

    Example: ./lab benchmark --in-process-only --json bench.json
    """
    from benchmarks.scheduler_bench import Options, run_and_report

    options = Options(nodes=int(nodes), pods=int(pods), kubeconfig=Path(kubeconfig) if kubeconfig else None,
                      json_path=Path(json) if json else None, in_process_only=in_process_only,
                      qps=float(qps or 0), burst=int(burst), repeat=int(repeat))
    code = run_and_report(options, console=console)
    if code:
        raise Exit(code=code)


def _passed_through(c) -> list[str]:
    """The words after `--`, quoting kept: invoke's c.remainder joins them with spaces, which loses it."""
    if "--" in sys.argv:
        return sys.argv[sys.argv.index("--") + 1:]
    return shlex.split(c.remainder)


def _exec(argv: list[str]) -> None:
    """Become that program: its terminal, its output, its exit status."""
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvp(argv[0], argv)


@task(help=LAB_HELP | {
    "node": "the machine to reach (default: the control plane); ./lab ssh NODE is short for --node NODE",
    "inventory": "reach the hosts of this pyinfra inventory (an SSH-inventory lab) instead of the lab's VMs",
})
def ssh(c, node=None, lab=None, inventory=None):
    """Open a shell, or run a command, on a lab machine.

    With the SSH details provisioning uses.

    Example: ./lab ssh k8s-worker-01 -- sudo crictl images
    """
    from labkit.ssh import lab_ssh_argv

    definition, path = _load(lab)
    with _user_errors():
        argv = lab_ssh_argv(definition, path, node, _passed_through(c), inventory)
    _exec(argv)


@task(help=LAB_HELP)
def kubectl(c, lab=None):
    """Run kubectl against the lab's cluster.

    With the lab's kubeconfig and context. Every word after `kubectl` goes to kubectl. The host's kubectl when there is one, else the control plane's
    over ssh. Only --lab FILE right after the verb and `./lab kubectl --help` alone are ours (kubectl's own help:
    ./lab kubectl get --help).

    Example: ./lab kubectl -n kube-system get pods -o wide
    """
    from labkit.kubectl import kubectl_argv

    definition, path = _load(lab)
    with _user_errors():
        argv = kubectl_argv(definition, path, _passed_through(c))
    _exec(argv)


@task(help=LAB_HELP | {
    "merge": ("merge the lab's cluster, user and context into ~/.kube/config (or $KUBECONFIG's first file), "
              "keeping a timestamped backup; other entries are left alone"),
    "force": "with --merge: replace entries of the same name that hold other content",
})
def kubeconfig(c, lab=None, merge=False, force=False):
    """Print the lab's kubeconfig, or merge it into yours.

    Its path and an export line, or (--merge) its entries merged into your kubeconfig.

    Example: ./lab kubeconfig --merge && kubectl --context schedlab get nodes
    """
    from labkit import user_kubeconfig
    from labkit.kube import KubeconfigError

    definition, _ = _load(lab)
    path = LabPaths.for_lab(definition.name).kubeconfig
    if not merge:
        with _user_errors():
            if not path.exists():
                raise KubeconfigError(f"{path}: no such kubeconfig; bring the lab up with `./lab up`")
        print(path)
        print(f"export KUBECONFIG={shlex.quote(str(path))}")
        return
    with _user_errors():
        result = user_kubeconfig.merge(path, user_kubeconfig.user_kubeconfig(), force=force)
    if not result.changed:
        console.print(f"{result.target} already holds lab {definition.name}'s entries: nothing to do")
        return
    for label in result.added:
        console.print(f"added {label}")
    for label in result.replaced:
        console.print(f"replaced {label}")
    if result.backup:
        console.print(f"backup: {result.backup}")
    console.print(f"merged into {result.target}: kubectl --context {definition.name} get nodes")


@task(help=LAB_HELP | {
    "follow": "keep streaming new lines (Ctrl-C ends it)",
    "previous": "the previous instance of each container (after a restart or crash)",
    "since": "only lines newer than this duration: 30s, 5m, 1h, 1h30m",
    "container": "only this container of each pod (extender mode runs two)",
    "kubeconfig": "cluster to read from (default: the lab's exported kubeconfig)",
})
def logs(c, lab=None, follow=False, previous=False, since=None, container=None, kubeconfig=None):
    """Show the scheduler's logs, the leader's first.

    Each line prefixed with its pod; says why when none runs.

    Example: ./lab logs --follow --since 10m
    """
    from labkit.kube import Kube
    from labkit.scheduler_logs import LogOptions, parse_since, show_logs

    definition, _ = _load(lab)
    with _user_errors():
        options = LogOptions(follow=follow, previous=previous, container=container,
                             since_seconds=parse_since(since) if since else None)
        kube = Kube.from_kubeconfig(Path(kubeconfig) if kubeconfig else LabPaths.for_lab(definition.name).kubeconfig)
        try:
            complete = show_logs(kube, definition, options, out=print, err=lambda line: print(line, file=sys.stderr))
        except KeyboardInterrupt:
            complete = True
        finally:
            kube.close()
    if not complete:
        raise Exit(code=1)
