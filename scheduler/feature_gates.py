"""Kubernetes feature gates per minor, and `--feature-gates` values checked against them.

A lab sets gates for its kube components (lab.yaml `kubernetes.feature_gates`) and the scheduler takes
kube-scheduler's `--feature-gates A=true,B=false`. Both are checked here the way a kube component checks
its flag, before anything starts: an unknown gate, a value other than true/false, a locked gate set away
from its locked value, or a gate enabled without the gates it depends on is refused, naming the source and
the fix. The tables are facts from upstream, read on 2026-11-28 (stored copies of kubernetes/kubernetes):

- pkg/features/kube_features.go at a 1.35-cycle commit (its newest specs are 1.35's, plus
  VolumeAttributesClass's 1.36 lock): every versioned spec of `defaultVersionedKubernetesFeatureGates`,
  which also carries the apiserver (genericfeatures), apiextensions, kube-controller-manager and zpages
  gates the kube components accept, and `defaultKubernetesFeatureGateDependencies`;
- the 1.37-cycle scheduler feature list (pkg/features split per component in 1.37): the 1.36 specs of the
  scheduler and DRA gates (DRA*, InPlacePodLevelResourcesVerticalScaling, NodeDeclaredFeatures,
  TopologyAwareWorkloadScheduling, VolumeAttributesClass);
- client-go's features (staging/src/k8s.io/client-go/features/known_features.go, 1.35 cycle), which kube
  components register under --feature-gates too, and component-base's logging gates
  (component-base/logs/api/v1/kube_features.go); test/compatibility_lifecycle/reference/
  versioned_feature_list.yaml (1.34 cycle) for ComponentSLIs; pkg/features/kube_features.go (1.33 cycle) for
  PodIndexLabel and StatefulSetAutoDeletePVC, removed in 1.35.

What is not covered, because no copy of the release-1.34/1.35/1.36 tags could be read whole offline:
- 1.36 changes of non-scheduler gates (kubelet, controllers, apiserver): their 1.35 spec is used for 1.36;
- gates new in 1.36 other than those named above (WorkloadAwarePreemption and WorkloadWithJob, alpha in
  1.36, are taken from a quotation of 1.36's kube_features.go);
- gates removed in 1.35 other than the two named above, and DRAResourceClaimGranularStatusAuthorization (named
  by dra-example-driver's RBAC as a 1.36 gate; its stage could not be read).
Gates whose upstream comment planned their removal in 1.36 (all locked GA or deprecated) are treated as gone
in 1.36: refusing one only refuses setting a locked gate to the value it already has.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from scheduler import KUBE_SCHEDULER_VERSION

STAGES = {"A": "ALPHA", "B": "BETA", "G": "GA", "D": "DEPRECATED"}
MINORS = (34, 35, 36)  # the Kubernetes minors the lab definition supports (labdef/versions.py)
SCHEDULER_MINOR: int = int(KUBE_SCHEDULER_VERSION.split(".")[1])


class FeatureGateError(ValueError):
    """A feature gate setting a kube component would refuse; the message names the gate, the source and
    the fix."""


@dataclass(frozen=True)
class Gate:
    name: str
    default: bool
    stage: str  # "ALPHA" | "BETA" | "GA" | "DEPRECATED"
    locked: bool


# Each gate's versioned specs as upstream lists them, one token per spec: the 1.x minor it applies from
# (0 = 1.0), the stage (A alpha, B beta, G GA, D deprecated), the default (+ true, - false) and L when
# locked to that default; "36X" marks a gate gone from that minor on.
_SPECS = """
AllowDNSOnlyNodeCSR 0G+ 31D-
AllowInsecureKubeletCertificateSigningRequests 0G+ 31D-
AllowOverwriteTerminationGracePeriodSeconds 0G+ 32D- 35D-L
AnyVolumeDataSource 18A- 24B+ 33G+L 36X
AuthorizeNodeWithSelectors 31A- 32B+ 34G+L
AuthorizePodWebsocketUpgradeCreatePermission 35B+
CPUCFSQuotaPeriod 12A-
CPUManagerPolicyAlphaOptions 23A-
CPUManagerPolicyBetaOptions 23B+
CPUManagerPolicyOptions 22A- 23B+ 33G+L 36X
CSIMigrationPortworx 23A- 25B- 31B+ 33G+L 36X
CSIServiceAccountTokenSecrets 35B+
CSIVolumeHealth 21A-
ChangeContainerStatusOnKubeletRestart 0G+ 35D-
ClearingNominatedNodeNameAfterBinding 34A- 35B+
ClusterTrustBundle 27A- 33B-
ClusterTrustBundleProjection 29A- 33B-
ContainerCheckpoint 25A- 30B+
ContainerRestartRules 34A- 35B+
ContainerStopSignals 33A-
CrossNamespaceVolumeDataSource 26A-
DRAAdminAccess 32A- 34B+ 36G+L
DRAConsumableCapacity 34A- 36B+
DRADeviceBindingConditions 34A- 36B+
DRADeviceTaintRules 35A- 36B-
DRADeviceTaints 33A- 36B+
DRAExtendedResource 34A- 36B+
DRAListTypeAttributes 36A-
DRANodeAllocatableResources 36A-
DRAPartitionableDevices 33A- 36B+
DRAPrioritizedList 33A- 34B+ 36G+
DRAResourceClaimDeviceStatus 32A- 33B+
DRASchedulerFilterTimeout 34B+
DRAWorkloadResourceClaims 36A-
DeploymentReplicaSetTerminatingReplicas 33A- 35B+
DisableAllocatorDualWrite 31A- 33B- 34G+ 35G+L
DisableCPUQuotaWithExclusiveCPUs 33B+
DisableNodeKubeProxyVersion 29A- 31D- 33D+
DynamicResourceAllocation 26A- 32B- 34G+ 35G+L
EnvFiles 34A- 35B+
EventedPLEG 26A-
ExecProbeTimeout 20G+ 35G+L
ExternalServiceAccountTokenSigner 32A- 34B+
GangScheduling 35A-
GenericWorkload 35A-
GitRepoVolumeDriver 0G+ 33D-
GracefulNodeShutdown 20A- 21B+
GracefulNodeShutdownBasedOnPodPriority 23A- 24B+
HPAConfigurableTolerance 33A- 35B+
HPAScaleToZero 16A-
HonorPVReclaimPolicy 23A- 31B+ 33G+L 36X
HostnameOverride 34A- 35B+
ImageMaximumGCAge 29A- 30B+ 35G+L
ImageVolume 31A- 33B- 35B+
ImageVolumeWithDigest 35A-
InPlacePodLevelResourcesVerticalScaling 35A- 36B+
InPlacePodVerticalScaling 27A- 33B+ 35G+L
InPlacePodVerticalScalingAllocatedStatus 32A- 33D- 36X
InPlacePodVerticalScalingExclusiveCPUs 32A-
InPlacePodVerticalScalingExclusiveMemory 34A-
InTreePluginPortworxUnregister 23A- 36X
JobBackoffLimitPerIndex 28A- 29B+ 33G+L 36X
JobManagedBy 30A- 32B+ 35G+L
JobPodReplacementPolicy 28A- 29B+ 34G+L
JobSuccessPolicy 30A- 31B+ 33G+L 36X
KubeletCgroupDriverFromCRI 28A- 31B+ 34G+L
KubeletCrashLoopBackOffMax 32A- 35B+
KubeletEnsureSecretPulledImages 33A- 35B+
KubeletFineGrainedAuthz 32A- 33B+
KubeletInUserNamespace 22A-
KubeletPSI 33A- 34B+
KubeletPodResourcesDynamicResources 27A- 34B+
KubeletPodResourcesGet 27A- 34B+
KubeletPodResourcesListUseActivePods 0G- 34D+
KubeletRegistrationGetOnExistsOnly 0G+ 32D-
KubeletSeparateDiskGC 29A- 31B+
KubeletServiceAccountTokenForCredentialProviders 33A- 34B+
KubeletTracing 25A- 27B+ 34G+L
LocalStorageCapacityIsolationFSQuotaMonitoring 15A- 31B-
LogarithmicScaleDown 21A- 22B+ 31G+L
MatchLabelKeysInPodAffinity 29A- 31B+ 33G+L
MatchLabelKeysInPodTopologySpread 25A- 27B+
MatchLabelKeysInPodTopologySpreadSelectorMerge 34B+
MaxUnavailableStatefulSet 24A- 35B+
MemoryManager 21A- 22B+ 32G+L
MemoryQoS 22A-
MultiCIDRServiceAllocator 27A- 31B- 33G+ 34G+L
MutableCSINodeAllocatableCount 33A- 34B- 35B+
MutablePVNodeAffinity 35A-
MutablePodResourcesForSuspendedJobs 35A-
MutableSchedulingDirectivesForSuspendedJobs 35A-
NFTablesProxyMode 29A- 31B+ 33G+L
NodeDeclaredFeatures 35A- 36B+
NodeInclusionPolicyInPodTopologySpread 25A- 26B+ 33G+L
NodeLogQuery 27A- 30B-
NodeSwap 22A- 28B- 30B+ 34G+L
NominatedNodeNameForExpectation 34A- 35B+
OpportunisticBatching 35B+
OrderedNamespaceDeletion 30B- 33B+ 34G+L
PodAndContainerStatsFromCRI 23A-
PodCertificateRequest 34A- 35B-
PodDeletionCost 21A- 22B+
PodIndexLabel 28B+ 32G+L 35X
PodLevelResources 32A- 34B+
PodLifecycleSleepAction 29A- 30B+ 34G+L
PodLifecycleSleepActionAllowZero 32A- 33B+ 34G+L
PodLogsQuerySplitStreams 32A-
PodObservedGenerationTracking 33A- 34B+ 35G+L
PodReadyToStartContainersCondition 28A- 29B+
PodSchedulingReadiness 26A- 27B+ 30G+L
PodTopologyLabelsAdmission 33A- 35B+
PortForwardWebsockets 30A- 31B+
PreferSameTrafficDistribution 33A- 34B+ 35G+L
PreventStaticPodAPIReferences 34B+
ProcMountType 12A- 31B- 33B+
QOSReserved 11A-
RecoverVolumeExpansionFailure 23A- 32B+ 34G+L
RecursiveReadOnlyMounts 30A- 31B+ 33G+L 36X
ReduceDefaultCrashLoopBackOffDecay 33A-
RelaxedDNSSearchValidation 32A- 33B+ 34G+L
RelaxedEnvironmentVariableValidation 30A- 32B+ 34G+L
RelaxedServiceNameValidation 34A-
ReloadKubeletServerCertificateFile 31B+
ResourceHealthStatus 31A-
RestartAllContainersOnContainerExits 35A-
RotateKubeletServerCertificate 7A- 12B+
RuntimeClassInImageCriAPI 29A-
SELinuxChangePolicy 32A- 33B+
SELinuxMount 30A- 33B-
SELinuxMountReadWriteOncePod 25A- 27B- 28B+
SchedulerAsyncAPICalls 34B-
SchedulerAsyncPreemption 32A- 33B+
SchedulerPopFromBackoffQ 33B+
SchedulerQueueingHints 28B- 32B+ 34G+L
SeparateTaintEvictionController 29B+ 34G+L
ServiceAccountNodeAudienceRestriction 32B- 33B+
ServiceAccountTokenJTI 29A- 30B+ 32G+L
ServiceAccountTokenNodeBinding 29A- 31B+ 33G+L
ServiceAccountTokenNodeBindingValidation 29A- 30B+ 32G+L
ServiceAccountTokenPodNodeInfo 29A- 30B+ 32G+L
ServiceTrafficDistribution 30A- 31B+ 33G+L 36X
SidecarContainers 28A- 29B+ 33G+L 36X
StatefulSetAutoDeletePVC 23A- 27B+ 32G+L 35X
StatefulSetSemanticRevisionComparison 0B+
StorageCapacityScoring 33A-
StorageNamespaceIndex 30B+ 33D+
StorageVersionMigrator 30A- 35B-
StreamingCollectionEncodingToJSON 33B+ 34G+L
StreamingCollectionEncodingToProtobuf 33B+ 34G+L
StrictIPCIDRValidation 33A-
SupplementalGroupsPolicy 31A- 33B+ 35G+L
SystemdWatchdog 32B+ 35G+L
TaintTolerationComparisonOperators 35A-
TopologyAwareHints 21A- 23B- 24B+ 33G+L
TopologyAwareWorkloadScheduling 36A-
TopologyManagerPolicyAlphaOptions 26A-
TopologyManagerPolicyBetaOptions 26B- 28B+
TopologyManagerPolicyOptions 26A- 28B+ 32G+
TranslateStreamCloseWebsocketRequests 29A- 30B+
UserNamespacesHostNetworkSupport 35A-
UserNamespacesSupport 25A- 30B- 33B+
VolumeAttributesClass 29A- 31B- 34G+ 36G+L
VolumeLimitScaling 35A-
WinDSR 14A- 33B+ 34G+L
WinOverlay 14A- 20B+ 34G+L
WindowsCPUAndMemoryAffinity 32A-
WindowsGracefulNodeShutdown 32A- 34B+
WindowsHostNetwork 26A- 33D-
WorkloadAwarePreemption 36A-
WorkloadWithJob 36A-
CRDObservedGenerationTracking 35B-
CRDValidationRatcheting 28A- 30B+ 33G+L
CustomResourceFieldSelectors 30A- 31B+ 32G+L
APIResponseCompression 8A- 16B+
APIServerIdentity 20A- 26B+
APIServerTracing 22A- 27B+ 34G+L
APIServingWithRoutine 30A-
AggregatedDiscoveryRemoveBetaType 0G- 33D+ 35D+L
AllowParsingUserUIDFromCertAuth 33B+
AllowUnsafeMalformedObjectDeletion 32A-
AnonymousAuthConfigurableEndpoints 31A- 32B+ 34G+L
AuthorizeWithSelectors 31A- 32B+ 34G+L
BtreeWatchCache 32B+ 33G+L
CBORServingAndStorage 32A-
ConcurrentWatchObjectDecode 31B-
ConsistentListFromCache 28A- 31B+ 34G+L
ConstrainedImpersonation 35A-
CoordinatedLeaderElection 31A- 33B-
DeclarativeValidation 33B+
DeclarativeValidationTakeover 33B-
DetectCacheInconsistency 34B+
KMSv1 0G+ 28D+ 29D-
ListFromCacheSnapshot 33A- 34B+
MutatingAdmissionPolicy 32A- 34B-
OpenAPIEnums 23A- 24B+
RemoteRequestHeaderUID 32A- 33B+
ResilientWatchCacheInitialization 31B+ 34G+L
RetryGenerateName 30A- 31B+ 32G+L
SeparateCacheWatchRPC 28B+ 33D-
SizeBasedListCostEstimate 34B+
StorageVersionAPI 20A-
StorageVersionHash 14A- 15B+
StructuredAuthenticationConfiguration 29A- 30B+ 34G+L
StructuredAuthenticationConfigurationEgressSelector 34B+
StructuredAuthenticationConfigurationJWKSMetrics 35B+
StructuredAuthorizationConfiguration 29A- 30B+ 32G+L
TokenRequestServiceAccountUIDValidation 34B+
UnauthenticatedHTTP2DOSMitigation 25B- 29B+
UnknownVersionInteroperabilityProxy 28A-
WatchCacheInitializationPostStartHook 31B-
WatchFromStorageWithoutResourceVersion 27B- 33D-L
WatchList 27A- 32B+ 33B- 34B+
CloudControllerManagerWatchBasedRoutesReconciliation 35A-
CloudControllerManagerWebhook 27A-
ComponentFlagz 32A-
ComponentStatusz 32A-
ComponentSLIs 26A- 27B+ 32G+L
ContextualLogging 24A- 30B+
LoggingAlphaOptions 24A-
LoggingBetaOptions 24B+
ClientsAllowCBOR 32A-
ClientsPreferCBOR 32A-
InOrderInformers 33B+
InOrderInformersBatchProcess 35B+
InformerResourceVersion 30A- 35G+
WatchListClient 30B- 35B+
"""

# A gate may be enabled only with these enabled too (defaultKubernetesFeatureGateDependencies, which
# kube components enforce from 1.35 on).
DEPENDENCIES: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "AuthorizeNodeWithSelectors": ("AuthorizeWithSelectors",),
    "ClusterTrustBundleProjection": ("ClusterTrustBundle",),
    "DRAAdminAccess": ("DynamicResourceAllocation",),
    "DRAConsumableCapacity": ("DynamicResourceAllocation",),
    "DRADeviceBindingConditions": ("DynamicResourceAllocation", "DRAResourceClaimDeviceStatus"),
    "DRADeviceTaintRules": ("DRADeviceTaints",),
    "DRADeviceTaints": ("DynamicResourceAllocation",),
    "DRAExtendedResource": ("DynamicResourceAllocation",),
    "DRAPartitionableDevices": ("DynamicResourceAllocation",),
    "DRAPrioritizedList": ("DynamicResourceAllocation",),
    "DRASchedulerFilterTimeout": ("DynamicResourceAllocation",),
    "DeclarativeValidationTakeover": ("DeclarativeValidation",),
    "DisableAllocatorDualWrite": ("MultiCIDRServiceAllocator",),
    "GangScheduling": ("GenericWorkload",),
    "GracefulNodeShutdownBasedOnPodPriority": ("GracefulNodeShutdown",),
    "ImageVolumeWithDigest": ("ImageVolume",),
    "InPlacePodLevelResourcesVerticalScaling": ("InPlacePodVerticalScaling", "PodLevelResources",
                                                "NodeDeclaredFeatures"),
    "InPlacePodVerticalScalingAllocatedStatus": ("InPlacePodVerticalScaling",),
    "InPlacePodVerticalScalingExclusiveCPUs": ("InPlacePodVerticalScaling",),
    "InPlacePodVerticalScalingExclusiveMemory": ("InPlacePodVerticalScaling", "MemoryManager"),
    "MatchLabelKeysInPodTopologySpreadSelectorMerge": ("MatchLabelKeysInPodTopologySpread",),
    "PodCertificateRequest": ("AuthorizeNodeWithSelectors",),
    "PodLifecycleSleepActionAllowZero": ("PodLifecycleSleepAction",),
    "ProcMountType": ("UserNamespacesSupport",),
    "ResourceHealthStatus": ("DynamicResourceAllocation",),
    "RestartAllContainersOnContainerExits": ("ContainerRestartRules", "NodeDeclaredFeatures"),
    "ServiceAccountTokenNodeBinding": ("ServiceAccountTokenNodeBindingValidation",),
    "StorageVersionAPI": ("APIServerIdentity",),
    "StructuredAuthenticationConfigurationEgressSelector": ("StructuredAuthenticationConfiguration",),
    "StructuredAuthenticationConfigurationJWKSMetrics": ("StructuredAuthenticationConfiguration",),
    "UnknownVersionInteroperabilityProxy": ("APIServerIdentity",),
    "UserNamespacesHostNetworkSupport": ("UserNamespacesSupport",),
    "WindowsCPUAndMemoryAffinity": ("MemoryManager",),
    "WindowsGracefulNodeShutdown": ("GracefulNodeShutdown",),
})
DEPENDENCIES_SINCE = 35

_TOKEN = re.compile(r"^(\d+)(?:([ABGD])([+-])(L?)|(X))$")


def _tables() -> dict[int, dict[str, Gate]]:
    tables: dict[int, dict[str, Gate]] = {minor: {} for minor in MINORS}
    for line in _SPECS.strip().splitlines():
        name, *tokens = line.split()
        specs = [_TOKEN.match(token) for token in tokens]
        for minor in MINORS:
            current = None
            for spec in specs:
                if int(spec[1]) > minor:
                    break
                current = None if spec[5] else Gate(name, spec[3] == "+", STAGES[spec[2]], spec[4] == "L")
            if current is not None:
                tables[minor][name] = current
    return tables


KUBERNETES_GATES: dict[int, dict[str, Gate]] = _tables()
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}  # Go's strconv.ParseBool, which --feature-gates uses
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


@dataclass(frozen=True)
class FeatureGates:
    """The gates set for one Kubernetes minor: explicit values over that minor's defaults. Immutable."""

    minor: int
    _explicit: Mapping[str, bool] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_explicit", MappingProxyType(dict(self._explicit)))

    def enabled(self, name: str) -> bool:
        """The explicit value, else the minor's default; a gate the minor lacks is a FeatureGateError."""
        if name in self._explicit:
            return self._explicit[name]
        gate = KUBERNETES_GATES[self.minor].get(name)
        if gate is None:
            raise FeatureGateError(_unknown(name, self.minor, "FeatureGates.enabled"))
        return gate.default

    def explicit(self) -> dict[str, bool]:
        return dict(self._explicit)

    def as_flag(self) -> str:
        """'A=true,B=false', sorted by name: the value --feature-gates takes ('' when none is set)."""
        return ",".join(f"{name}={'true' if value else 'false'}" for name, value in sorted(self._explicit.items()))


def parse_feature_gates(value: str | Mapping[str, bool] | None, minor: int = SCHEDULER_MINOR,
                        source: str = "--feature-gates") -> FeatureGates:
    """Check gate settings ('A=true,B=false' as the flag takes them, or a name -> bool mapping as lab.yaml
    holds them) against Kubernetes 1.`minor`. `source` names where they came from in errors (a flag, or a
    file's field such as ``lab.yaml kubernetes.feature_gates``). Raises FeatureGateError, listing every
    problem, for an unknown gate, a value other than true/false, a locked gate set away from its value, or
    (1.35+) a gate enabled while a gate it depends on is off."""
    if minor not in KUBERNETES_GATES:
        raise FeatureGateError(f"{source}: no feature gate table for Kubernetes 1.{minor}; this kubelab knows "
                               f"{', '.join(f'1.{m}' for m in MINORS)}")
    pairs = _pairs(value, source)
    gates = KUBERNETES_GATES[minor]
    problems: list[str] = []
    explicit: dict[str, bool] = {}
    for name, raw in pairs:
        where = _where(source, name)
        setting = _boolean(raw)
        if name not in gates:
            problems.append(_unknown(name, minor, where))
        elif setting is None:
            problems.append(f"{where}: {raw!r} is not a feature gate value; use true or false")
        elif gates[name].locked and setting != gates[name].default:
            locked = "true" if gates[name].default else "false"
            problems.append(f"{where}: {name} is {gates[name].stage} and locked to {locked} in Kubernetes "
                            f"1.{minor}; remove it (or set it to {locked})")
        else:
            explicit[name] = setting
    if not problems and minor >= DEPENDENCIES_SINCE:
        state = FeatureGates(minor, explicit)
        for name in sorted(explicit):
            missing = [need for need in DEPENDENCIES.get(name, ()) if need in gates and not state.enabled(need)]
            if explicit[name] and missing:
                problems.append(f"{_where(source, name)}: {name} needs {', '.join(missing)} enabled too in "
                                f"Kubernetes 1.{minor}; add {', '.join(f'{need}=true' for need in missing)}")
    if problems:
        raise FeatureGateError("\n".join(problems))
    return FeatureGates(minor, explicit)


def _pairs(value: str | Mapping[str, bool] | None, source: str) -> list[tuple[str, object]]:
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [(str(name), setting) for name, setting in value.items()]
    if not isinstance(value, str):
        raise FeatureGateError(f"{source}: expected 'Name=true,Other=false' or a mapping of gate names to "
                               f"true/false, not {type(value).__name__}")
    pairs = []
    for item in value.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, setting = item.partition("=")
        if not sep:
            raise FeatureGateError(f"{source}: {item!r} is missing '=': write {item}=true or {item}=false")
        pairs.append((name.strip(), setting.strip()))
    return pairs


def _boolean(raw: object) -> bool | None:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        return True if raw in _TRUE else False if raw in _FALSE else None
    return None


def _where(source: str, name: str) -> str:
    # A file field names the gate as a sub-field (kubernetes.feature_gates.GangScheduling); a flag by value.
    return f"{source} {name}" if source.startswith("-") else f"{source}.{name}"


def _unknown(name: str, minor: int, where: str) -> str:
    others = [other for other in MINORS if other != minor and name in KUBERNETES_GATES[other]]
    if others:
        return (f"{where}: {name} is not a feature gate of Kubernetes 1.{minor} (it is one in "
                f"{', '.join(f'1.{other}' for other in others)}); remove it or change the lab's Kubernetes version")
    by_lower = {gate.lower(): gate for gate in KUBERNETES_GATES[minor]}
    close = [by_lower[name.lower()]] if name.lower() in by_lower else difflib.get_close_matches(
        name, KUBERNETES_GATES[minor], n=3, cutoff=0.75)
    hint = f"; did you mean {' or '.join(close)}?" if close else "; see the feature gates of that release"
    return f"{where}: unknown feature gate {name!r} for Kubernetes 1.{minor}{hint}"
