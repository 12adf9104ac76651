"""Versions checked up front: the lab definition refuses what upstream does not support together (Kubernetes
minor vs Calico's tested range, a pinned containerd below the minor's floor) naming both versions and the fix,
and only warns about what the project cannot judge (newer than it knows, out of upstream support)."""

import copy
import ipaddress

import pytest
import yaml

from labdef import versions
from labdef.lab import DEFAULT_LAB_FILE, LabError, parse_lab, version_warnings
from labkit import doctor


def lab_with(**sections):
    data = yaml.safe_load(DEFAULT_LAB_FILE.read_text())
    for section, values in sections.items():
        data[section] = {**copy.deepcopy(data.get(section, {})), **values}
    return parse_lab(data, "lab.yaml", allowed_ranges=[ipaddress.ip_network("192.168.56.0/21")])


def problems(**sections) -> list[str]:
    with pytest.raises(LabError) as err:
        lab_with(**sections)
    return err.value.problems


def test_the_default_lab_is_a_supported_combination_without_warnings():
    lab = lab_with()
    assert (lab.kubernetes.version, lab.cni.calico_version) == ("1.36.4", "v3.32.1")
    assert lab.kubernetes.minor_number in versions.SUPPORTED_KUBERNETES_MINORS
    assert version_warnings(lab) == []


def test_calico_that_stops_at_1_35_is_refused_for_1_36_naming_both_and_the_fix():
    (problem,) = problems(cni={"calico_version": "v3.30.3"})
    assert problem == ("cni.calico_version: Calico v3.30.3 supports Kubernetes 1.31 to 1.35 (its requirements page), "
                       "not kubernetes.version 1.36.4; use Calico v3.33.x, which supports 1.36, or a Kubernetes "
                       "version in that range")


def test_kubernetes_older_than_calicos_range_is_refused():
    (problem,) = problems(kubernetes={"version": "1.33.5"})
    assert "Calico v3.32.1 supports Kubernetes 1.34 to 1.36" in problem and "not kubernetes.version 1.33.5" in problem
    assert "use Calico v3.31.x, which supports 1.33" in problem


def test_pinned_containerd_below_the_floor_is_refused_with_the_fix():
    (problem,) = problems(containerd={"version": "1.7.28-0ubuntu1~24.04.1"})
    assert problem.startswith("containerd.version: 1.7.28-0ubuntu1~24.04.1 is containerd 1.7.28, below what "
                              "Kubernetes 1.36.4 needs (2.3.0+ or 2.2.0+, containerd's RELEASES.md)")
    assert "pin a version that meets it, or unset containerd.version" in problem
    assert "below" in problems(containerd={"version": "2.1.9-1"})[0]  # a line 1.36 no longer lists


def test_pinned_containerd_that_meets_the_floor_is_accepted():
    assert lab_with(containerd={"version": "2.2.1-0ubuntu1~24.04.1"}).containerd.version.startswith("2.2.1")
    assert lab_with(containerd={"version": "1:2.3.0-1"}).containerd.version == "1:2.3.0-1"


def test_allow_below_floor_turns_the_refusal_into_a_warning():
    lab = lab_with(containerd={"version": "1.7.28-1", "allow_below_floor": True})
    (warning,) = version_warnings(lab)
    assert "below what Kubernetes 1.36.4 needs" in warning and "containerd.allow_below_floor is true" in warning


def test_kubernetes_1_37_with_calico_3_32_is_refused_naming_calico_3_33():
    (problem,) = problems(kubernetes={"version": "1.37.1"})
    assert problem == ("cni.calico_version: Calico v3.32.1 supports Kubernetes 1.34 to 1.36 (its requirements page), "
                       "not kubernetes.version 1.37.1; use Calico v3.33.x, which supports 1.37, or a Kubernetes "
                       "version in that range")


def test_kubernetes_1_37_with_calico_3_33_only_warns_that_its_containerd_floor_is_unknown():
    lab = lab_with(kubernetes={"version": "1.37.1"}, cni={"calico_version": "v3.33.0"})
    assert version_warnings(lab) == [(
        "kubernetes.version: 1.37.1: this project does not know the containerd floor and kubeadm pause image of "
        "1.37 yet (labdef/versions.py says why): the floor is not checked, and containerd keeps its own sandbox "
        "image")]
    checks = {c.name: c for c in doctor.check_versions(lab)}
    assert checks["calico"].detail == "v3.33.0 supports Kubernetes 1.35 to 1.37, 1.37.1 included"
    assert versions.kubeadm_api(37) == "v1beta4"  # v1beta3 was removed in 1.37


def test_an_older_patch_than_the_newest_known_is_a_warning():
    lab = lab_with(kubernetes={"version": "1.37.0"}, cni={"calico_version": "v3.33.0"})
    assert ("kubernetes.version: 1.37.0 is older than 1.37.1, the newest 1.37 patch this project knows; patch "
            "releases carry security and bug fixes") in version_warnings(lab)


def test_a_kubernetes_minor_newer_than_the_project_knows_is_a_warning_not_a_refusal():
    lab = lab_with(kubernetes={"version": "1.38.0"})
    warnings = version_warnings(lab)
    assert any(w.startswith("kubernetes.version: 1.38.0 is newer than this project knows (1.32 to 1.37)")
               for w in warnings)
    assert any(w.startswith("cni.calico_version: Calico v3.32.1 supports Kubernetes 1.34 to 1.36") for w in warnings)


def test_a_calico_release_the_project_does_not_know_is_a_warning():
    (warning,) = version_warnings(lab_with(cni={"calico_version": "v3.34.0"}))
    assert warning == ("cni.calico_version: this project does not know Calico 3.34's requirements; whether it "
                       "supports Kubernetes 1.36 is not checked")


def test_upstream_support_follows_the_end_of_life_dates_as_checked():
    assert versions.SUPPORTED_KUBERNETES_MINORS == (35, 36, 37)
    assert versions.KUBERNETES_RELEASES[37].end_of_life.isoformat() == "2027-10-28"


def test_a_pinned_upstream_containerd_build_of_an_ended_line_is_a_warning():
    lab = lab_with(containerd={"package": "containerd.io", "version": "2.2.1-1~ubuntu.24.04~noble"})
    assert version_warnings(lab) == [(
        "containerd.version: 2.2.1-1~ubuntu.24.04~noble is containerd 2.2, whose upstream line ended on 2026-11-06 "
        "(containerd's RELEASES.md): containerd.io builds of it get no more fixes; pin a line upstream still "
        "maintains (2.0, 2.3)")]
    # Ubuntu patches its own containerd package past upstream's date: no warning for it
    assert version_warnings(lab_with(containerd={"version": "2.2.1-0ubuntu1~24.04.3"})) == []
    assert version_warnings(lab_with(containerd={"package": "containerd.io", "version": "2.3.1-1"})) == []


def test_a_minor_out_of_upstream_support_is_a_warning():
    (warning,) = version_warnings(lab_with(kubernetes={"version": "1.34.8"}))
    assert warning == ("kubernetes.version: upstream no longer patches 1.34 (supported: 1.35, 1.36, 1.37); "
                       "pick a supported minor")


@pytest.mark.parametrize("version,release", [
    ("2.2.1-0ubuntu1~24.04.1", (2, 2, 1)), ("1.6.20~ds1-1+b1", (1, 6, 20)), ("1:1.7.28-1", (1, 7, 28)),
    ("v2.3.0", (2, 3, 0)), ("2.2", None)])
def test_the_release_is_read_from_debian_package_versions(version, release):
    assert versions.release(version) == release


@pytest.mark.parametrize("minor,version,verdict", [
    (36, "2.2.0", "ok"), (36, "2.3.4", "ok"), (36, "2.1.5", "below"), (36, "1.7.12", "below"),
    (35, "1.7.28", "ok"), (35, "1.7.27", "below"), (35, "2.1.4", "below"), (36, "2.4.0", "newer"),
    (37, "2.2.1", "unknown")])
def test_containerd_verdict_follows_releases_md(minor, version, verdict):
    assert versions.containerd_verdict(minor, version) == verdict


def test_doctor_reports_the_checked_pairings_and_the_warnings(monkeypatch):
    for host_check in ("check_python_deps", "check_vagrant", "check_host_size", "check_network", "check_lab_files",
                       "check_scheduler_plugins"):
        monkeypatch.setattr(doctor, host_check, lambda *args: [])
    assert [c.name for c in doctor.run_checks(lab_with())] == ["calico", "containerd", "kubeadm"]
    checks = {c.name: c for c in doctor.check_versions(lab_with())}
    assert checks["calico"].detail == "v3.32.1 supports Kubernetes 1.34 to 1.36, 1.36.4 included"
    assert checks["containerd"].detail.startswith("Kubernetes 1.36.4 needs 2.3.0+ or 2.2.0+")
    assert checks["kubeadm"].detail == "config v1beta4, sandbox image registry.k8s.io/pause:3.10.2"
    unknown_calico = lab_with(cni={"calico_version": "v3.34.0"})
    (warned,) = [c for c in doctor.check_versions(unknown_calico) if c.verdict == doctor.WARN]
    assert warned.name == "versions (cni.calico_version)" and "Calico 3.34" in warned.detail
