"""The lab definition: one YAML file that every other part of the toolkit reads.

`load_lab(path)` parses and validates it and returns a `Lab`; any problem raises `LabError`, whose message
lists every bad field by its path (``nodes[1].ip``) with the reason and the fix. Nothing else in the toolkit
runs before this succeeds, so a malformed definition changes nothing.

Run ``python -m labdef.lab [FILE]`` to print the validated definition as JSON (the Vagrantfile reads
it that way, so Ruby never parses the YAML itself).
"""

from __future__ import annotations

import ipaddress
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from labdef import versions
from labdef.errors import UserError
from scheduler.config import parse_duration
from scheduler.feature_gates import SCHEDULER_MINOR, FeatureGateError, parse_feature_gates
from scheduler.quantity import QuantityError, parse_quantity
from scheduler.validation import field_problems

DEFAULT_LAB_FILE = Path(__file__).resolve().parent.parent / "lab.yaml"

# VirtualBox 6.1.28+ only lets host-only adapters use these ranges unless /etc/vbox/networks.conf
# lists others (https://www.virtualbox.org/manual/ch06.html#network_hostonly).
VIRTUALBOX_DEFAULT_RANGES = (ipaddress.ip_network("192.168.56.0/21"),)
VBOX_NETWORKS_CONF = Path("/etc/vbox/networks.conf")
# VirtualBox's NAT mode puts every VM's first adapter in this network (10.0.2.15, gateway .2, DNS .3).
VBOX_NAT_NETWORK = ipaddress.IPv4Network("10.0.2.0/24")

CONTROL_PLANE_MIN_CPUS = 2
CONTROL_PLANE_MIN_MEMORY_MB = 2048  # kubeadm's preflight refuses below ~1700 MB; 2 GB leaves room for etcd
WORKER_MIN_MEMORY_MB = 1024

# A node name is a Kubernetes node name and a hostname: an RFC 1123 DNS label.
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
K8S_VERSION = re.compile(r"^1\.(\d+)\.(\d+)$")
OLDEST_MINOR = 28  # oldest minor still published on pkgs.k8s.io when this was written


def _dns_label(value: str) -> str:
    if not DNS_LABEL.match(value):
        raise ValueError(f"{value!r} must be a DNS label: lower-case letters, digits and '-', starting and "
                         "ending with a letter or digit, at most 63 characters")
    return value


def _quantity(value: str) -> str:
    """A request or limit as Kubernetes will read it (the scheduler's own Quantity parser), never negative."""
    try:
        negative = parse_quantity(value) < 0
    except QuantityError as err:
        raise ValueError(f"{err}: a Kubernetes quantity like 100m, 0.5, 128Mi or 1Gi") from None
    if negative:
        raise ValueError(f"{value!r} is negative")
    return value


DnsLabel = Annotated[str, AfterValidator(_dns_label)]
Quantity = Annotated[str, AfterValidator(_quantity)]


class LabError(UserError, ValueError):
    """The lab definition is unusable; `problems` holds one line per bad field."""

    def __init__(self, source: str, problems: list[str]):
        self.source = source
        self.problems = problems
        lines = "\n".join(f"  - {p}" for p in problems)
        super().__init__(f"{source}: the lab definition is invalid; nothing was changed.\n{lines}")


class StrictModel(BaseModel):
    """A section of a definition file: unknown keys are refused, values never change once read."""

    model_config = ConfigDict(extra="forbid", frozen=True)


# The default box, pinned: bento's newest bento/ubuntu-24.04 versions have no VirtualBox build
# (chef/bento#1663: `vagrant up --provider=virtualbox` answers "doesn't support the provider" rather than take
# an older version that has one). 202510.26.0 has VirtualBox builds for amd64 and arm64
# (Vagrant's own "Adding box 'bento/ubuntu-24.04' (v202510.26.0) for provider: virtualbox (amd64)" in public
# logs; the registry itself is out of reach from the machines this was checked on).
DEFAULT_BOX = "bento/ubuntu-24.04"
DEFAULT_BOX_VERSION = "202510.26.0"


class Provider(StrictModel):
    # virtualbox, or lxc (vagrant-lxc containers on a Linux host without VirtualBox; lxc_bridge then).
    name: Literal["virtualbox", "lxc"] = "virtualbox"
    # The Vagrant box every machine starts from (Ubuntu 24.04 or Debian 12).
    box: str = DEFAULT_BOX
    # A Vagrant version constraint ("202510.26.0", ">= 202502"); unset: the newest version of the box.
    box_version: str | None = None
    # VirtualBox: clone one base disk instead of copying the box per machine.
    linked_clone: bool = True
    lxc_bridge: str | None = Field(None, description="lxc only: the host bridge the node addresses live on")

    @model_validator(mode="before")
    @classmethod
    def _pin_the_default_box(cls, data: object) -> object:
        """The default box comes pinned (DEFAULT_BOX_VERSION); another box, or box_version given, is left as is."""
        if isinstance(data, dict) and data.get("box", DEFAULT_BOX) == DEFAULT_BOX and "box_version" not in data:
            return {**data, "box_version": DEFAULT_BOX_VERSION}
        return data


class Network(StrictModel):
    # The machines' private network; every node's ip lies in it (VirtualBox allows 192.168.56.0/21
    # unless /etc/vbox/networks.conf lists more).
    host_only_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("192.168.56.0/24")
    # kubeadm's podSubnet and the Calico pool: one value, clear of the two other ranges.
    pod_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.244.0.0/16")
    # kubeadm's serviceSubnet.
    service_cidr: ipaddress.IPv4Network = ipaddress.IPv4Network("10.96.0.0/12")


PACKAGE_URL_SCHEMES = ("https://", "http://", "file:///")


def _check_repository_url(value: str, what: str) -> str:
    if not value.startswith(PACKAGE_URL_SCHEMES):
        raise ValueError(f"{what} must start with https://, http:// or file:/// (got {value!r})")
    return value


class Kubernetes(StrictModel):
    # kubeadm, kubelet and kubectl; the package repository follows its minor version.
    version: str = "1.36.4"
    # A flat apt repository (pkgs.k8s.io's layout: Release, Packages and Release.key at its root);
    # {minor} becomes e.g. 1.36. For air-gapped labs point it at a mirror or a directory on the nodes
    # (file:///srv/kube-debs/) laid out the same way.
    package_source: str = "https://pkgs.k8s.io/core:/stable:/v{minor}/deb/"
    # The repository's signing key (ASCII-armoured); unset means Release.key beside the packages.
    package_key_url: str | None = None
    # Debian revision of the kubelet/kubeadm/kubectl packages: pkgs.k8s.io publishes 1.36.4-1.1.
    package_revision: str = "1.1"
    # Feature gates of every kube component (API server, controller manager, kube-scheduler, kubelet) and of
    # the lab's scheduler, e.g. {GenericWorkload: true, GangScheduling: true}; checked against the gates of
    # the Kubernetes minor. Set at `up` on a new cluster (kubeadm init): changing them later needs a rebuild.
    feature_gates: dict[str, Any] = Field(default_factory=dict)
    # kube-apiserver's --runtime-config: API versions to serve or not, e.g. {"scheduling.k8s.io/v1alpha2": true}
    # (alpha APIs are off unless listed). Set at `up` on a new cluster, like feature_gates.
    runtime_config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("package_source")
    @classmethod
    def _package_source(cls, value: str) -> str:
        _check_repository_url(value, "the package source")
        if not value.endswith("/"):
            raise ValueError(f"{value!r} must end with '/' (it is the root of a flat apt repository)")
        return value

    @field_validator("package_key_url")
    @classmethod
    def _package_key_url(cls, value: str | None) -> str | None:
        return None if value is None else _check_repository_url(value, "the key URL")

    @field_validator("package_revision")
    @classmethod
    def _package_revision(cls, value: str) -> str:
        if not re.match(r"^[0-9A-Za-z.+~]+$", value):
            raise ValueError(f"{value!r} is not a Debian package revision like 1.1")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str) -> str:
        match = K8S_VERSION.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a Kubernetes version like 1.36.4 (quote it in YAML)")
        if int(match.group(1)) < OLDEST_MINOR:
            raise ValueError(f"{value} is older than 1.{OLDEST_MINOR}, which pkgs.k8s.io no longer serves")
        return value

    @property
    def minor(self) -> str:
        """'1.36' for version 1.36.4: the package repository is per minor version."""
        return self.version.rsplit(".", 1)[0]

    @property
    def package_url(self) -> str:
        return self.package_source.format(minor=self.minor)

    @property
    def key_url(self) -> str:
        return self.package_key_url or f"{self.package_url}Release.key"

    @property
    def package_version(self) -> str:
        """The exact Debian version to install and hold, e.g. 1.36.4-1.1."""
        return f"{self.version}-{self.package_revision}"

    @property
    def minor_number(self) -> int:
        return int(self.version.split(".")[1])

    @property
    def feature_gates_flag(self) -> str:
        """The gates as --feature-gates takes them ('A=true,B=false', sorted); '' when none is set."""
        if not self.feature_gates:
            return ""
        return parse_feature_gates(self.feature_gates, self.minor_number, "kubernetes.feature_gates").as_flag()

    @property
    def feature_gate_values(self) -> dict[str, bool]:
        """The gates as the KubeletConfiguration's featureGates map holds them."""
        if not self.feature_gates:
            return {}
        return parse_feature_gates(self.feature_gates, self.minor_number, "kubernetes.feature_gates").explicit()

    @property
    def runtime_config_flag(self) -> str:
        """runtime_config as kube-apiserver's --runtime-config takes it ('group/version=true,...', sorted)."""
        return ",".join(f"{key}={str(bool(value)).lower()}" for key, value in sorted(self.runtime_config.items()))


class Containerd(StrictModel):
    # The apt package that provides containerd: the distribution's (containerd) or Docker's (containerd.io).
    package: str = "containerd"
    # Exact Debian version to install (apt's `containerd=VERSION`); unset installs the distribution's
    # current one, which the run prints so it can be pinned here.
    version: str | None = None
    # A containerd below the floor of the Kubernetes minor (containerd's RELEASES.md) is refused, pinned here
    # or found on a node. true turns that refusal into a warning, like kubeadm's --ignore-preflight-errors:
    # for machines that cannot get a newer containerd and never run pods (the system suite's lxc machines).
    allow_below_floor: bool = False

    @field_validator("package")
    @classmethod
    def _package(cls, value: str) -> str:
        if not re.match(r"^[a-z0-9][a-z0-9.+-]+$", value):
            raise ValueError(f"{value!r} is not a Debian package name (containerd or containerd.io)")
        return value

    @field_validator("version")
    @classmethod
    def _version(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^[0-9][0-9A-Za-z.+~:-]*$", value):
            raise ValueError(f"{value!r} is not a Debian package version like 1.6.20~ds1-1+b1")
        return value


class Cni(StrictModel):
    # The Calico release installed through the Tigera operator; checked against the Kubernetes minor.
    calico_version: str = "v3.32.1"
    # How Calico picks each node's address: cidr (within host_only_cidr), kubernetes-internal-ip, can-reach.
    ip_autodetection: Literal["cidr", "kubernetes-internal-ip", "can-reach"] = "cidr"
    # The release's manifests folder (operator-crds.yaml, tigera-operator.yaml); {version} becomes
    # calico_version. Point it at a mirror holding the same files when offline.
    manifests_url: str = "https://raw.githubusercontent.com/projectcalico/calico/{version}/manifests"

    @model_validator(mode="before")
    @classmethod
    def _replaced_keys(cls, data: object) -> object:
        if isinstance(data, dict) and "operator_manifest_url" in data:
            raise ValueError("operator_manifest_url is replaced by manifests_url, the release's manifests folder "
                             "(operator-crds.yaml and tigera-operator.yaml), e.g. "
                             "https://raw.githubusercontent.com/projectcalico/calico/{version}/manifests "
                             f"(got operator_manifest_url: {data['operator_manifest_url']!r})")
        return data

    @field_validator("manifests_url")
    @classmethod
    def _manifests_url(cls, value: str) -> str:
        _check_repository_url(value, "the Calico manifests URL")
        if "{version}" not in value:
            raise ValueError("must contain {version}, which becomes calico_version")
        return value

    def manifest_url(self, name: str) -> str:
        """The URL of one of the release's manifests, e.g. operator-crds.yaml."""
        return f"{self.manifests_url.format(version=self.calico_version).rstrip('/')}/{name}"

    @field_validator("calico_version")
    @classmethod
    def _calico_version(cls, value: str) -> str:
        if not re.match(r"^v3\.\d+\.\d+$", value):
            raise ValueError(f"{value!r} is not a Calico release tag like v3.32.1")
        return value


class Node(StrictModel):
    name: DnsLabel  # a Kubernetes node name and the VM's hostname
    # Exactly one control-plane; any number of workers.
    role: Literal["control-plane", "worker"]
    # The node's address in host_only_cidr: kubelet's node IP, the API server's advertise address.
    ip: ipaddress.IPv4Address
    # The machine's CPUs (a control plane needs at least 2, and 2048 MB of memory).
    cpus: int = Field(2, ge=1)
    memory_mb: int = Field(2048, ge=512)  # the machine's memory in MB


# A plugin source that is a module name (importable in the scheduler's image and on this host), not a folder.
MODULE_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def is_folder(source: str) -> bool:
    """A scheduler.plugins entry is a folder when it looks like a path (has a '/' or starts with '.')."""
    return "/" in source or source.startswith(".")


class SchedulerProfile(StrictModel):
    """A KubeSchedulerConfiguration profile without its schedulerName (scheduler.name gives it): which plugins
    run at each extension point with which weights, and their args. Its plugin names and args are checked
    against the scheduler's plugins with the lab's own loaded (doctor, deploy-scheduler, test-placement)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    # Per extension point (multiPoint, filter, postFilter, score): the enabled and disabled plugins, with
    # weights; kube-scheduler's default plugins run unless disabled.
    plugins: dict[str, Any] = Field(default_factory=dict)
    # Each plugin's args: [{name: Plugin, args: {...}}].
    pluginConfig: list[dict[str, Any]] = Field(default_factory=list)
    # How many feasible nodes to find before scoring (kube-scheduler's adaptive default when unset).
    percentageOfNodesToScore: int | None = Field(None, ge=0, le=100)

    @model_validator(mode="before")
    @classmethod
    def _scheduler_name(cls, data: object) -> object:
        if isinstance(data, dict) and "schedulerName" in data:
            raise ValueError("schedulerName comes from scheduler.name; remove it from the profile")
        return data

    def fragment(self) -> dict[str, Any]:
        """The profile as KubeSchedulerConfiguration data (unset fields left out)."""
        return self.model_dump(exclude_none=True, exclude_defaults=True)


KUBE_SCHEDULER_SECURE_PORT = 10259  # kube-scheduler's /healthz, /readyz and /metrics (HTTPS) in extender mode


class ExtenderSettings(StrictModel):
    """Extender mode: the `extenders:` stanza of the second kube-scheduler's KubeSchedulerConfiguration,
    pointing at our extender on the pod's loopback. Read only when scheduler.mode is extender."""

    # kube-scheduler adds each extender score (0..10) x weight x 10 to its plugin total; it refuses a
    # weight below 1 for an extender with a prioritize verb.
    weight: int = Field(1, ge=1)
    # A Go duration (metav1.Duration): how long kube-scheduler waits for a filter or prioritize answer.
    http_timeout: str = "5s"
    # true: requests carry node names, answered from the extender's own cache; false: full Node objects.
    node_cache_capable: bool = True
    # true: kube-scheduler schedules without the extender when it fails or is unreachable.
    ignorable: bool = False
    # The extender's listener on the pod's loopback (127.0.0.1:port), shared with kube-scheduler.
    port: int = Field(8888, ge=1024, le=65535)

    @field_validator("http_timeout")
    @classmethod
    def _http_timeout(cls, value: str) -> str:
        if parse_duration(value) <= 0:
            raise ValueError(f"{value!r} is not a positive duration; use e.g. 5s or 500ms")
        return value

    @field_validator("port")
    @classmethod
    def _port(cls, value: int) -> int:
        if value == KUBE_SCHEDULER_SECURE_PORT:
            raise ValueError(f"{value} is kube-scheduler's own secure port in the same pod; pick another, "
                             "e.g. 8888")
        return value


# An image repository without tag or digest (the distribution reference grammar, lower-case).
IMAGE_REPOSITORY = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._/-][a-z0-9]+)*)*$")


class SchedulerSettings(StrictModel):
    # The spec.schedulerName pods use to opt in; also the Deployment's, the Lease's and the RBAC objects' name.
    name: DnsLabel = "my-custom-scheduler"
    # Where the scheduler's Deployment, ConfigMap and Lease live.
    namespace: DnsLabel = "kube-system"
    # standalone: our scheduler places the pods; extender: a second kube-scheduler (the cluster's own
    # version) places them and asks our plugins through the extender webhooks (`extender` below).
    mode: Literal["standalone", "extender"] = "standalone"
    extender: ExtenderSettings = ExtenderSettings()
    # Leader election on a Lease: one replica schedules, the others wait (needed for replicas > 1).
    leader_elect: bool = True
    # debug logs every node's verdict for every pod.
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # Plugin folders (relative to the lab file; each a Python package declaring PLUGINS) or module names:
    # shipped in the image (folders at /opt/kubelab/plugins/<folder name>) and loaded by the scheduler. A
    # folder's `crds/` and `manifests/` YAML files are applied before the scheduler.
    plugins: list[str] = Field(default_factory=list)
    # The scheduler's profile (scheduler.name is its schedulerName).
    profile: SchedulerProfile = SchedulerProfile()
    # The side-loaded image's repository (no tag: deploy-scheduler derives it from the content).
    image: str = "localhost/kubelab-scheduler"
    replicas: int = Field(1, ge=1, le=5)  # more than 1 needs leader_elect
    port: int = Field(10251, ge=1024, le=65535)  # /healthz, /readyz and /metrics in the pod
    cpu_request: Quantity = "100m"  # the scheduler container's cpu request
    memory_request: Quantity = "128Mi"  # its memory request
    memory_limit: Quantity = "256Mi"  # its memory limit

    @model_validator(mode="before")
    @classmethod
    def _replaced_keys(cls, data: object) -> object:
        # The two fields the bundled example plugins had before they became plugin folders like any other.
        replaced = ("network_aware", "least_loaded")
        problems = [f"{key}: replaced by scheduler.plugins (the plugin's folder) and scheduler.profile (the plugin "
                    "enabled under plugins.multiPoint.enabled, its args under pluginConfig in camelCase, e.g. "
                    "label_key -> labelKey); see the default lab.yaml"
                    for key in replaced if isinstance(data, dict) and key in data]
        if problems:
            raise ValueError("\n".join(problems))
        return data

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        if not IMAGE_REPOSITORY.match(value):
            raise ValueError(f"{value!r} is not an image repository like localhost/kubelab-scheduler "
                             "(lower-case, no tag or digest: the tag is computed from the content)")
        return value


class Placement(StrictModel):
    # Scenario files test-placement runs after the built-in ones (labkit/placement/scenarios.yaml, unless
    # builtin_scenarios is false), paths relative to the lab file: a plugin folder's scenarios.yaml.
    scenarios: list[str] = Field(default_factory=list)
    # Run the built-in scenarios (kube-scheduler's default plugins) before the lab's own.
    builtin_scenarios: bool = True

    @model_validator(mode="before")
    @classmethod
    def _replaced_keys(cls, data: object) -> object:
        if isinstance(data, dict) and "high_speed_nodes" in data:
            raise ValueError("high_speed_nodes is replaced by the scenarios' own node selectors (nodes[].select in "
                             "a scenarios file, e.g. a plugin folder's scenarios.yaml, listed under "
                             "placement.scenarios); remove it")
        return data


# The example driver's image, pinned: registry.k8s.io/dra-example-driver/dra-example-driver (its chart's
# default repository). v0.4.0 is the newest release tag found offline on 2026-11-28 (installed from its chart
# onto Kubernetes 1.36.1 in a public write-up; Kubernetes' own DRA tutorial pins v0.2.0). The registry is out
# of reach here: `./lab doctor` checks the tag on the lab's workers.
DRA_EXAMPLE_DRIVER_IMAGE = "registry.k8s.io/dra-example-driver/dra-example-driver:v0.4.0"
DRA_MIN_MINOR = 34  # resource.k8s.io/v1 (DRA GA), which the driver's ResourceSlices and our DeviceClass use
# An image reference with a tag or digest (the distribution reference grammar, lower-case).
IMAGE_REFERENCE = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*"
                             r"(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}|@sha256:[0-9a-f]{64})$")


class Dra(StrictModel):
    """Dynamic Resource Allocation in the lab: kubernetes-sigs/dra-example-driver, which makes every worker
    publish fake GPUs (driver gpu.example.com) that pods claim through ResourceClaims."""

    # Install the example driver at `up` (after the CNI): a DaemonSet on every worker and the DeviceClass
    # gpu.example.com.
    example_driver: bool = False
    # How many fake GPUs each worker publishes (gpu-0, gpu-1, ...; the driver's own default is 8).
    devices_per_node: int = Field(8, ge=1, le=64)
    # The driver's image (tag or digest); the workers pull it from its registry.
    image: str = DRA_EXAMPLE_DRIVER_IMAGE
    # Where the driver's DaemonSet and ServiceAccount live (created, and allowed privileged pods).
    namespace: DnsLabel = "dra-example-driver"

    @field_validator("image")
    @classmethod
    def _image(cls, value: str) -> str:
        if not IMAGE_REFERENCE.match(value):
            raise ValueError(f"{value!r} is not an image reference with a tag or digest like "
                             f"{DRA_EXAMPLE_DRIVER_IMAGE}")
        return value


class Lab(StrictModel):
    # Names the lab's machines, its state folder .lab/<name>/ and its kubeconfig context.
    name: DnsLabel
    provider: Provider = Provider()
    network: Network = Network()
    kubernetes: Kubernetes = Kubernetes()
    containerd: Containerd = Containerd()
    cni: Cni = Cni()
    # The machines: one control plane and any number of workers.
    nodes: list[Node]
    scheduler: SchedulerSettings = SchedulerSettings()
    placement: Placement = Placement()
    dra: Dra = Dra()
    # The folder relative paths in the definition start from: the lab file's (set by parse_lab).
    _base_dir: Path = PrivateAttr(default=DEFAULT_LAB_FILE.parent)

    @property
    def base_dir(self) -> Path:
        return self._base_dir

    def path(self, relative: str) -> Path:
        """A path the definition names, relative to the lab file's folder."""
        return (self._base_dir / relative).resolve()

    @property
    def control_plane(self) -> Node:
        return next(n for n in self.nodes if n.role == "control-plane")

    @property
    def workers(self) -> list[Node]:
        return [n for n in self.nodes if n.role == "worker"]

    def node(self, name: str) -> Node:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node named {name!r} in lab {self.name!r}")

    def to_json(self) -> str:
        return self.model_dump_json(indent=2)


def _allowed_host_only_ranges() -> list[ipaddress.IPv4Network]:
    """VirtualBox's default ranges plus any `* 10.0.0.0/8`-style lines in /etc/vbox/networks.conf."""
    ranges = list(VIRTUALBOX_DEFAULT_RANGES)
    try:
        text = VBOX_NETWORKS_CONF.read_text()
    except OSError:
        return ranges
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "*":
            for cidr in parts[1:]:
                try:
                    ranges.append(ipaddress.ip_network(cidr, strict=False))
                except ValueError:
                    continue
    return ranges


def _check_nodes(lab: Lab) -> Iterator[str]:
    roles = [n for n in lab.nodes if n.role == "control-plane"]
    if len(roles) != 1:
        names = ", ".join(n.name for n in roles) or "none"
        yield (f"nodes: exactly one node needs role: control-plane (found {len(roles)}: {names}); "
               "set the others to role: worker")
    seen_names: dict[str, int] = {}
    seen_ips: dict[ipaddress.IPv4Address, int] = {}
    net = lab.network.host_only_cidr
    for i, node in enumerate(lab.nodes):
        where = f"nodes[{i}]"
        if node.name in seen_names:
            yield f"{where}.name: {node.name!r} is already used by nodes[{seen_names[node.name]}]; names must be unique"
        seen_names.setdefault(node.name, i)
        if node.ip in seen_ips:
            yield f"{where}.ip: {node.ip} is already used by nodes[{seen_ips[node.ip]}]; give each node its own address"
        seen_ips.setdefault(node.ip, i)
        if node.ip not in net:
            yield f"{where}.ip: {node.ip} is outside network.host_only_cidr {net}; pick an address inside it"
        elif node.ip in (net.network_address, net.broadcast_address, net.network_address + 1):
            yield (f"{where}.ip: {node.ip} is reserved in {net} (network, broadcast, or the host's own "
                   f"address {net.network_address + 1}); use .2 or above")
        if node.role == "control-plane":
            if node.cpus < CONTROL_PLANE_MIN_CPUS:
                yield f"{where}.cpus: the control plane needs at least {CONTROL_PLANE_MIN_CPUS} CPUs (kubeadm preflight), got {node.cpus}"
            if node.memory_mb < CONTROL_PLANE_MIN_MEMORY_MB:
                yield (f"{where}.memory_mb: the control plane needs at least {CONTROL_PLANE_MIN_MEMORY_MB} MB "
                       f"(kubeadm preflight), got {node.memory_mb}")
        elif node.memory_mb < WORKER_MIN_MEMORY_MB:
            yield f"{where}.memory_mb: a worker needs at least {WORKER_MIN_MEMORY_MB} MB to run kubelet and pods, got {node.memory_mb}"


def _check_network(lab: Lab, allowed_ranges: list[ipaddress.IPv4Network]) -> Iterator[str]:
    nets = {
        "network.host_only_cidr": lab.network.host_only_cidr,
        "network.pod_cidr": lab.network.pod_cidr,
        "network.service_cidr": lab.network.service_cidr,
    }
    names = list(nets)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if nets[a].overlaps(nets[b]):
                yield f"{b}: {nets[b]} overlaps {a} {nets[a]}; the three ranges must not overlap"
    if lab.provider.name == "virtualbox":
        for name in names:
            if nets[name].overlaps(VBOX_NAT_NETWORK):
                yield (f"{name}: {nets[name]} overlaps {VBOX_NAT_NETWORK}, the network of every VirtualBox VM's NAT "
                       "adapter (its gateway and DNS); pick a range clear of it")
        host_only = lab.network.host_only_cidr
        if not any(host_only.subnet_of(r) for r in allowed_ranges):
            allowed = ", ".join(str(r) for r in allowed_ranges)
            yield (f"network.host_only_cidr: VirtualBox refuses {host_only} (allowed: {allowed}); pick a range "
                   f"inside them or list it in {VBOX_NETWORKS_CONF}")


def _check_provider(lab: Lab) -> Iterator[str]:
    if lab.provider.name == "lxc" and not lab.provider.lxc_bridge:
        yield "provider.lxc_bridge: the lxc provider needs the name of the host bridge for the node addresses"


def _check_plugins(lab: Lab) -> Iterator[str]:
    folders: dict[str, int] = {}
    for i, source in enumerate(lab.scheduler.plugins):
        where = f"scheduler.plugins[{i}]"
        if source.endswith(".py"):
            yield (f"{where}: {source!r} is a file; give the folder holding the plugin (a Python package: an "
                   "__init__.py declaring PLUGINS), e.g. ./my_plugin")
            continue
        if not is_folder(source):
            if not MODULE_NAME.match(source):
                yield (f"{where}: {source!r} is neither a folder (write ./{source} for one beside the lab file) "
                       "nor a module name like my_pkg.my_plugin")
            continue
        name = Path(source.rstrip("/")).name
        if not MODULE_NAME.match(name) or "." in name:
            yield f"{where}: folder name {name!r} is not a Python package name (letters, digits and _)"
        if name in folders:
            yield (f"{where}: folder name {name!r} is also scheduler.plugins[{folders[name]}]'s; each folder goes "
                   "to /opt/kubelab/plugins/<folder name> in the image: rename one")
        folders.setdefault(name, i)


# A --runtime-config key: v1 (the core group), api/all|ga|beta|alpha, or group/version[/resource].
RUNTIME_CONFIG_KEY = re.compile(r"^(v1|api/(all|ga|beta|alpha)|[a-z0-9]([-a-z0-9.]*[a-z0-9])?/v[1-9][0-9]*"
                                r"((alpha|beta)[1-9][0-9]*)?(/[a-z0-9]([-a-z0-9]*[a-z0-9])?)?)$")


def _check_kubernetes(lab: Lab) -> Iterator[str]:
    """feature_gates against the gates of the lab's minor, runtime_config against kube-apiserver's syntax."""
    k8s = lab.kubernetes
    if k8s.feature_gates:
        try:
            parse_feature_gates(k8s.feature_gates, k8s.minor_number, "kubernetes.feature_gates")
            # The lab's scheduler takes them too, as the kube-scheduler minor it follows would.
            if k8s.minor_number != SCHEDULER_MINOR:
                parse_feature_gates(k8s.feature_gates, SCHEDULER_MINOR, "kubernetes.feature_gates")
        except FeatureGateError as err:
            yield from str(err).splitlines()
    for key, value in k8s.runtime_config.items():
        where = f"kubernetes.runtime_config.{key}"
        if not RUNTIME_CONFIG_KEY.match(key):
            yield (f"{where}: not an API kube-apiserver's --runtime-config names; write group/version (e.g. "
                   "scheduling.k8s.io/v1alpha2), group/version/resource, v1, or api/all|ga|beta|alpha")
        if not isinstance(value, bool):
            yield f"{where}: {value!r} is not true or false"


def _check_dra(lab: Lab) -> Iterator[str]:
    if not lab.dra.example_driver:
        return
    if lab.kubernetes.minor_number < DRA_MIN_MINOR:
        yield (f"dra.example_driver: needs Kubernetes 1.{DRA_MIN_MINOR} or later (resource.k8s.io/v1), not "
               f"kubernetes.version {lab.kubernetes.version}; raise the version or set example_driver: false")
    if not lab.workers:
        yield "dra.example_driver: the driver runs on the workers and the lab has none; add a worker under nodes"


def _check_scheduler(lab: Lab) -> Iterator[str]:
    yield from _check_plugins(lab)
    if lab.scheduler.replicas > 1 and not lab.scheduler.leader_elect:
        yield (f"scheduler.replicas: {lab.scheduler.replicas} replicas without leader election would all "
               "schedule the same pods; set scheduler.leader_elect: true or replicas: 1")


def missing_files(lab: Lab) -> list[str]:
    """The files the definition names that are not there, one line per field. Checked by the verbs that read
    them (and doctor), not on every load: a lab file copied elsewhere still drives its machines."""
    folders = [f"scheduler.plugins[{i}]: no folder {name} (looked in {lab.base_dir}, the lab file's folder); "
               "give a plugin folder's path relative to it" for i, name in enumerate(lab.scheduler.plugins)
               if is_folder(name) and not lab.path(name).is_dir()]
    return folders + [f"placement.scenarios[{i}]: no file {name} (looked in {lab.base_dir}, the lab file's folder); "
                      "give a scenarios file's path relative to it" for i, name in enumerate(lab.placement.scenarios)
                      if not lab.path(name).is_file()]


PROBLEM, WARNING = "problem", "warning"


def _known_minors() -> list[int]:
    """Kubernetes minors the version tables know anything about (support dates, or runtime needs)."""
    return sorted(set(versions.KUBERNETES) | set(versions.KUBERNETES_RELEASES))


def _kubernetes_findings(lab: Lab) -> Iterator[tuple[str, str]]:
    version, minor = lab.kubernetes.version, lab.kubernetes.minor_number
    known = _known_minors()
    if minor not in known:
        age = "newer" if minor > max(known) else "older"
        yield WARNING, (f"kubernetes.version: {version} is {age} than this project knows (1.{min(known)} to "
                        f"1.{max(known)}): its containerd floor and pause image are not checked, and containerd "
                        "keeps its own sandbox image")
    elif minor not in versions.KUBERNETES:
        yield WARNING, (f"kubernetes.version: {version}: this project does not know the containerd floor and "
                        f"kubeadm pause image of 1.{minor} yet (labdef/versions.py says why): the floor is not "
                        "checked, and containerd keeps its own sandbox image")
    if minor < min(versions.SUPPORTED_KUBERNETES_MINORS):
        supported = ", ".join(f"1.{m}" for m in versions.SUPPORTED_KUBERNETES_MINORS)
        yield WARNING, (f"kubernetes.version: upstream no longer patches 1.{minor} (supported: {supported}); "
                        "pick a supported minor")
    newest = versions.KUBERNETES_RELEASES.get(minor)
    if newest and versions.release(version) < versions.release(newest.newest_patch):
        yield WARNING, (f"kubernetes.version: {version} is older than {newest.newest_patch}, the newest 1.{minor} "
                        "patch this project knows; patch releases carry security and bug fixes")


def _calico_findings(lab: Lab) -> Iterator[tuple[str, str]]:
    tag, version, minor = lab.cni.calico_version, lab.kubernetes.version, lab.kubernetes.minor_number
    calico = versions.calico_minor(tag)
    if calico not in versions.CALICO:
        yield WARNING, (f"cni.calico_version: this project does not know Calico 3.{calico}'s requirements; "
                        f"whether it supports Kubernetes 1.{minor} is not checked")
        return
    low, high = versions.CALICO[calico]
    if low <= minor <= high:
        return
    covering = [c for c, (lo, hi) in versions.CALICO.items() if lo <= minor <= hi]
    fix = (f"use Calico v3.{max(covering)}.x, which supports 1.{minor}" if covering
           else "use a Calico release whose requirements list it")
    message = (f"cni.calico_version: Calico {tag} supports Kubernetes 1.{low} to 1.{high} (its requirements "
               f"page), not kubernetes.version {version}; {fix}, or a Kubernetes version in that range")
    # A Kubernetes minor this project does not know yet is not refused: Calico may simply not list it yet.
    yield (WARNING if minor not in _known_minors() else PROBLEM), message


def _containerd_findings(lab: Lab) -> Iterator[tuple[str, str]]:
    pin, minor = lab.containerd.version, lab.kubernetes.minor_number
    ended = versions.containerd_line_ended(pin) if pin and lab.containerd.package == "containerd.io" else None
    if ended:
        line = ".".join(map(str, versions.release(pin)[:2]))
        maintained = ", ".join(f"{major}.{minor_}" for (major, minor_), end in versions.CONTAINERD_END_OF_LIFE.items()
                               if end > versions.CHECKED_ON)
        yield WARNING, (f"containerd.version: {pin} is containerd {line}, whose upstream line ended on {ended} "
                        f"(containerd's RELEASES.md): containerd.io builds of it get no more fixes; pin a line "
                        f"upstream still maintains ({maintained})")
    if pin is None or minor not in versions.KUBERNETES:
        return
    verdict = versions.containerd_verdict(minor, pin)
    floors = versions.containerd_floors(minor)
    if verdict == "below":
        message = (f"containerd.version: {pin} is containerd {'.'.join(map(str, versions.release(pin)))}, below "
                   f"what Kubernetes {lab.kubernetes.version} needs ({floors}, containerd's RELEASES.md); pin a "
                   "version that meets it, or unset containerd.version to install the distribution's current one")
        if lab.containerd.allow_below_floor:
            yield WARNING, f"{message} (going on: containerd.allow_below_floor is true)"
        else:
            yield PROBLEM, message
    elif verdict == "newer":
        yield WARNING, (f"containerd.version: {pin} is newer than the containerd lines RELEASES.md lists for "
                        f"Kubernetes 1.{minor} ({floors}); not checked")
    elif verdict == "unknown":
        yield WARNING, f"containerd.version: {pin!r} names no containerd release (like 2.2.1-...); not checked"


def _version_findings(lab: Lab) -> Iterator[tuple[str, str]]:
    """What the upstream projects say about this lab's versions together (labdef.versions)."""
    yield from _kubernetes_findings(lab)
    yield from _calico_findings(lab)
    yield from _containerd_findings(lab)


def version_warnings(lab: Lab) -> list[str]:
    """Versions the project cannot vouch for but does not refuse: `up` and `doctor` print them."""
    return [message for kind, message in _version_findings(lab) if kind == WARNING]


def validate(lab: Lab, allowed_ranges: list[ipaddress.IPv4Network] | None = None) -> list[str]:
    """Cross-field rules pydantic's per-field checks cannot express."""
    ranges = allowed_ranges if allowed_ranges is not None else _allowed_host_only_ranges()
    versions_refused = [message for kind, message in _version_findings(lab) if kind == PROBLEM]
    return [*_check_nodes(lab), *_check_network(lab, ranges), *_check_provider(lab), *_check_kubernetes(lab),
            *_check_dra(lab), *_check_scheduler(lab), *versions_refused]


def parse_lab(data: object, source: str = "<lab>",
              allowed_ranges: list[ipaddress.IPv4Network] | None = None, base_dir: Path | None = None) -> Lab:
    """The validated definition; relative paths in it start from `base_dir` (default: the project's root,
    where the default lab.yaml lives)."""
    if not isinstance(data, dict):
        raise LabError(source, ["(top level): expected a mapping of keys such as name, nodes, network"])
    try:
        lab = Lab.model_validate(data)
    except ValidationError as err:
        raise LabError(source, field_problems(err)) from None
    if base_dir is not None:
        lab._base_dir = Path(base_dir).resolve()
    problems = validate(lab, allowed_ranges)
    if problems:
        raise LabError(source, problems)
    return lab


def with_changes(lab: Lab, changes: dict[str, object], source: str = "<override>") -> Lab:
    """The lab with dotted fields replaced (``{"kubernetes.package_source": url}``), validated again."""
    data = lab.model_dump(mode="json")
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        target = data
        for key in parents:
            target = target[key]
        target[leaf] = value
    return parse_lab(data, source, base_dir=lab.base_dir)


def load_lab(path: str | Path | None = None,
             allowed_ranges: list[ipaddress.IPv4Network] | None = None) -> Lab:
    path = Path(path) if path else DEFAULT_LAB_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise LabError(str(path), ["file not found; pass --lab FILE or create lab.yaml"]) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise LabError(str(path), [f"{where}not valid YAML ({getattr(err, 'problem', err)})"]) from None
    return parse_lab(data, str(path), allowed_ranges, base_dir=path.parent)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    try:
        lab = load_lab(args[0] if args else None)
    except LabError as err:
        print(err, file=sys.stderr)
        return 2
    print(lab.to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main())
