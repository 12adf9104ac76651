"""scheduler.dra.cel: DRA device selectors compiled and evaluated as kube-scheduler 1.36 does.

The corpus tests replay real kube-scheduler v1.36.2 decisions (../shared/reference/kube-scheduler-v1.36.2-dra):
every selector there compiles, and every device kube-scheduler allocated matches its request's class and
request selectors; a model no device has matches no device.
"""

from __future__ import annotations

import itertools
import json
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest

from scheduler.dra.cel import CelError, SemVer, compile_selector, device_view
from tests.reference import REFERENCE_DIR
from tests.unavailable import skip_or_fail

DRA_CASES = REFERENCE_DIR / "kube-scheduler-v1.36.2-dra" / "cases"
FIELD = "spec.devices.requests[0].exactly.selectors[0].cel.expression"

GPU = {
    "name": "gpu-0",
    "attributes": {
        "model": {"string": "a100"},
        "numa": {"int": 1},
        "ecc": {"bool": True},
        "driverVersion": {"version": "1.2.3-rc.1+build.5"},
        "example.com/socket": {"int": 1},
    },
    "capacity": {"memory": {"value": "40Gi"}, "example.com/slots": {"value": "1500m"}},
}


def gpu(**changes) -> object:
    return device_view("gpu.example.com", {**GPU, **changes})


def matches(expression: str, device=None) -> bool:
    return compile_selector(expression, FIELD).matches(device or gpu())


def compile_error(expression: str) -> CelError:
    with pytest.raises(CelError) as caught:
        compile_selector(expression, FIELD)
    assert not caught.value.runtime
    return caught.value


def runtime_error(expression: str, device=None) -> CelError:
    selector = compile_selector(expression, FIELD)
    with pytest.raises(CelError) as caught:
        selector.matches(device or gpu())
    assert caught.value.runtime
    return caught.value


# --- the device view -----------------------------------------------------------------------------------

def test_view_puts_unqualified_names_in_the_drivers_domain():
    view = gpu()
    assert view.driver == "gpu.example.com"
    assert dict(view.attributes["gpu.example.com"]) == {
        "model": "a100", "numa": 1, "ecc": True, "driverVersion": SemVer(1, 2, 3, ("rc", 1), "build.5")}
    assert dict(view.attributes["example.com"]) == {"socket": 1}
    assert view.capacity["gpu.example.com"]["memory"] == 40 * 2**30
    assert view.capacity["example.com"]["slots"] == Fraction(3, 2)
    assert view.allow_multiple_allocations is False
    assert len({view, gpu()}) == 2  # hashable, by identity


def test_attribute_lookups():
    assert matches('device.driver == "gpu.example.com"')
    assert matches('device.attributes["gpu.example.com"].model == "a100"')
    assert matches('device.attributes["gpu.example.com"].model in ["h100", "a100"]')
    assert matches('device.attributes["gpu.example.com"].numa == 1 && device.attributes["gpu.example.com"].ecc')
    assert not matches('!device.attributes["gpu.example.com"].ecc')
    assert matches('device.attributes["example.com"].socket >= 1')
    assert matches('cel.bind(g, device.attributes["gpu.example.com"], g.model == "a100" && g.numa == 1)')
    assert matches('device.attributes["gpu.example.com"].model.startsWith("a")')
    assert matches('"model" in device.attributes["gpu.example.com"]')


def test_a_missing_domain_is_an_empty_map_and_a_missing_attribute_a_runtime_error():
    # Upstream: an unknown domain gives {} (so has() is false); an unknown id is "no such key".
    assert not matches('has(device.attributes["nic.example.com"].model)')
    assert not matches('has(device.capacity["nic.example.com"].memory)')
    assert matches('has(device.attributes["gpu.example.com"].model)')
    assert runtime_error('device.attributes["nic.example.com"].model == "x"').reason == "no such key: model"
    err = runtime_error('device.attributes["gpu.example.com"].nope == 1')
    assert err.reason == "no such key: nope"
    assert err.field == FIELD
    assert str(err) == f"{FIELD}: CEL runtime error: no such key: nope"


def test_runtime_errors_in_cel_gos_words():
    numa = 'device.attributes["gpu.example.com"].numa'
    assert runtime_error(f"1 / ({numa} - 1) == 1").reason == "division by zero"
    assert runtime_error(f"[1][{numa} + 2] == 1").reason == "index '3' out of range in list size '1'"
    assert runtime_error(f"{numa} + 9223372036854775807 > 0").reason == "integer overflow"


def test_short_circuit_hides_runtime_errors_as_in_cel_go():
    assert matches('device.attributes["gpu.example.com"].nope == 1 || true')
    assert not matches('device.driver == "nic.example.com" && device.attributes["nic.example.com"].sriov')


def test_quantity_library():
    assert matches('device.capacity["gpu.example.com"].memory.compareTo(quantity("80Gi")) < 0')
    assert matches('device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) == 0')
    assert matches('device.capacity["gpu.example.com"].memory == quantity("40960Mi")')
    assert matches('device.capacity["gpu.example.com"].memory.isGreaterThan(quantity("39Gi"))')
    assert matches('device.capacity["gpu.example.com"].memory.isLessThan(quantity("41Gi"))')
    assert matches('device.capacity["gpu.example.com"].memory.asInteger() == 42949672960')
    assert matches('device.capacity["gpu.example.com"].memory.isInteger()')
    assert matches('sign(device.capacity["gpu.example.com"].memory) == 1')  # not a member function upstream
    assert matches('device.capacity["gpu.example.com"].memory.add(quantity("1Gi")) == quantity("41Gi")')
    assert matches('device.capacity["gpu.example.com"].memory.sub(1).add(1) == quantity("40Gi")')
    assert matches('device.capacity["example.com"].slots.asApproximateFloat() == 1.5')
    assert not matches('device.capacity["example.com"].slots.isInteger()')
    assert matches('isQuantity("1.5Gi") && !isQuantity("1.5 Gi")')
    assert "cannot convert value to integer" in runtime_error(
        'device.capacity["example.com"].slots.asInteger() == 1').reason
    assert runtime_error('sign(quantity("12 apples")) == 1').reason == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


def test_semver_library():
    assert matches('device.attributes["gpu.example.com"].driverVersion == semver("1.2.3-rc.1")')
    assert matches('device.attributes["gpu.example.com"].driverVersion.isLessThan(semver("1.2.3"))')
    assert matches('device.attributes["gpu.example.com"].driverVersion.isGreaterThan(semver("1.2.3-rc.0"))')
    assert matches('device.attributes["gpu.example.com"].driverVersion.compareTo(semver("1.2.3-alpha")) == 1')
    assert matches('device.attributes["gpu.example.com"].driverVersion.major() == 1')
    assert matches('semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3')
    assert matches('semver("v1.2", true) == semver("1.2.0")')
    assert matches('isSemver("1.0.0") && !isSemver("1.0") && isSemver("v1.0", true)')
    assert runtime_error('semver("1.0") == semver("1.0.0")').runtime


def test_semver_order_follows_semver_2():
    order = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
             "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.10.0", "2.0.0"]
    parsed = [SemVer.parse(v) for v in order]
    assert all(a.compare(b) == -1 for a, b in itertools.pairwise(parsed))
    assert SemVer.parse("1.0.0+a") == SemVer.parse("1.0.0+b")
    for bad in ("1.0", "01.0.0", "1.0.0-01", "1.0.0-", "v1.0.0"):
        with pytest.raises(ValueError):
            SemVer.parse(bad)


# --- compile errors ------------------------------------------------------------------------------------

def test_syntax_error_names_the_field_and_reads_like_kube_apiserver():
    err = compile_error('device.driver == ')
    assert err.field == FIELD
    assert err.reason.startswith("compilation failed: ERROR: <input>:1:18: Syntax error:")
    assert str(err).startswith(f'{FIELD}: Invalid value: "device.driver == ": compilation failed: ')


def test_unknown_function_is_refused():
    assert "undeclared reference to 'gpuCount'" in compile_error("gpuCount(device) > 1").reason


def test_type_errors_are_refused_at_compile():
    reason = compile_error('quantity("1Gi") > 1').reason
    assert "found no matching overload for '_>_' applied to '(kubernetes.Quantity, int)'" in reason
    assert "found no matching overload" in compile_error('1 + "a" == "1a"').reason
    assert "found no matching overload" in compile_error('semver("1.0.0").compareTo(quantity("1")) == 0').reason


def test_non_bool_results_are_refused_at_compile():
    assert compile_error("1 + 2").reason == "must evaluate to bool or the unknown type, not int"
    assert compile_error('quantity("1")').reason == (
        "must evaluate to bool or the unknown type, not kubernetes.Quantity")


def test_a_dyn_result_that_is_not_bool_is_a_runtime_error():
    err = runtime_error('device.attributes["gpu.example.com"].numa')
    assert err.reason == "CEL result of type int could not be converted to bool"


def test_device_is_kubernetes_dra_device_object_type():
    # device has exactly driver, allowMultipleAllocations, attributes and capacity, with their types.
    err = compile_error('device.vendor == "x"')
    assert err.reason == ("compilation failed: ERROR: <input>:1:8: undefined field 'vendor'\n"
                          " | device.vendor == \"x\"\n | .......^")
    assert compile_error("device.driver").reason == "must evaluate to bool or the unknown type, not string"
    reason = compile_error("device.driver + 1 == 2").reason
    assert "found no matching overload for '_+_' applied to '(string, int)'" in reason
    assert " | device.driver + 1 == 2" in reason  # the selector as written, not the checker's rewrite
    assert "(kubernetes.Quantity, int)" in compile_error('device.capacity["gpu.example.com"].memory == 1').reason
    assert matches("!device.allowMultipleAllocations")
    assert matches("device . driver == 'gpu.example.com'")
    assert matches("has(device.driver)")
    assert matches('"device.vendor" != ""')  # inside a literal: not a field


def test_optional_types_and_strings_extension():
    assert matches('device.attributes["gpu.example.com"].?model.orValue("") == "a100"')
    assert matches('device.attributes["gpu.example.com"].?nope.orValue("none") == "none"')
    assert matches('device.attributes["gpu.example.com"].model.upperAscii() == "A100"')
    assert matches('"a,b".split(",").size() == 2')


@pytest.mark.parametrize(("expression", "named"), [
    ('url("https://x").getHost() == "x"', "url() from Kubernetes' URL library"),
    ('device.attributes["gpu.example.com"].model.find("[0-9]+") == "100"', "find() from Kubernetes' regex library"),
    ("[1u, 2u].sum() == 3u", "sum() from Kubernetes' lists library"),
    ("[1, 2].indexOf(2) == 1", "indexOf() from Kubernetes' lists library"),
    ('ip("10.0.0.1").family() == 4', "ip() from Kubernetes' IP and CIDR library"),
    ('!format.dns1123Label().validate("x").hasValue()', "format.dns1123Label() from Kubernetes' format library"),
    ('device.capacity["gpu.example.com"].memory.mul(2) == quantity("80Gi")', "mul() from Kubernetes' quantity"),
    ('device.attributes["gpu.example.com"].exists(k, v, k == "model")', "two-variable comprehensions"),
    ('device.attributes["gpu.example.com"].model.includes("a100")', "includes() from Kubernetes' DRA list-type"),
    ('sign(device.capacity["gpu.example.com"].memory) < 1.5', "comparing int with double"),
])
def test_what_kubernetes_allows_and_this_evaluator_lacks_is_refused_saying_so(expression, named):
    reason = compile_error(expression).reason
    assert named in reason
    assert "not supported by kubelab's CEL evaluator" in reason


def test_lists_library():
    assert matches("[1, 2, 3].isSorted() && ![2, 1].isSorted() && ['a', 'b'].isSorted()")
    assert matches("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && ['b', 'a'].min() == 'a'")
    assert matches("[1, 2].sum() == 3 && [1.5, 2.0].sum() == 3.5 && [b'b', b'a'].max() == b'b'")
    assert matches('[device.attributes["gpu.example.com"].numa, 5].max() == 5')
    assert runtime_error("[0].filter(x, x > 0).max() == 1").reason == "max called on empty list"
    assert runtime_error("[9223372036854775807, 1].sum() > 0").reason == "integer overflow"


def test_sets_extension():
    assert matches('sets.contains(["a100", "h100"], [device.attributes["gpu.example.com"].model])')
    assert matches("sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [1, 2])")
    assert matches("sets.equivalent([1, 2], [2, 1, 1]) && !sets.equivalent([1], [1, 2])")
    assert matches("sets.intersects([1, 2], [2, 5]) && !sets.intersects([1], [])")
    assert matches("sets.contains([1.0], [1]) && !sets.contains([true], [1])")  # CEL equality, not Python's
    assert matches('sets.contains([semver("1.0.0")], [semver("1.0.0+build")])')


def test_cross_type_numeric_comparison_of_an_attribute_runs():
    assert matches('device.attributes["gpu.example.com"].numa < 1.5')  # dyn: decided at run time


def test_sign_is_a_function_not_a_method_as_upstream():
    assert "sign" in compile_error('quantity("1").sign() == 1').reason


def test_compiled_once_per_expression():
    a = compile_selector('device.driver == "x"', "a")
    b = compile_selector('device.driver == "x"', "b")
    assert a._program is b._program
    assert (a.field, b.field) == ("a", "b")


def test_bad_device_values_fail_when_evaluated_as_upstream():
    broken = gpu(attributes={"weird": {"float": 1.5}})
    assert runtime_error('device.driver == "gpu.example.com"', broken).reason == (
        "attribute weird: unsupported attribute value")
    badver = gpu(attributes={"v": {"version": "1.0"}})
    assert runtime_error("true", badver).reason.startswith("attribute v: parse semantic version:")


def test_many_evaluations_on_one_view():
    # The view renews its CEL activation as it goes; results stay right across renewals.
    view = gpu()
    for i in range(600):
        selector = compile_selector(f'device.attributes["gpu.example.com"].model + "{i}" == "a100{i}"', FIELD)
        assert selector.matches(view)
        assert selector.matches(view)  # answered from the view's results


# --- the real kube-scheduler corpus --------------------------------------------------------------------

def corpus_files() -> list[Path]:
    return sorted(DRA_CASES.glob("*.json")) if DRA_CASES.is_dir() else []


def corpus_ids() -> list[str]:
    return [p.stem for p in corpus_files()] or ["missing"]


@cache
def load(stem: str) -> dict:
    if not DRA_CASES.is_dir():
        skip_or_fail(f"the recorded kube-scheduler DRA decisions are not in {DRA_CASES} (see the project's README)")
    return json.loads((DRA_CASES / f"{stem}.json").read_text())


def class_selectors(doc: dict) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for cls in doc["objects"]["deviceclasses"]:
        name = cls["metadata"]["name"]
        out[name] = [(s["cel"]["expression"], f"deviceclass {name}: spec.selectors[{i}].cel.expression")
                     for i, s in enumerate(cls["spec"].get("selectors") or [])]
    return out


def devices(doc: dict) -> dict[tuple[str, str, str], object]:
    """(driver, pool, device name) -> its view, for every device of every slice."""
    out = {}
    for slice_ in doc["objects"]["resourceslices"]:
        spec = slice_["spec"]
        for dev in spec.get("devices") or []:
            out[(spec["driver"], spec["pool"]["name"], dev["name"])] = device_view(spec["driver"], dev)
    return out


def requests(claim: dict) -> dict[str, tuple[str, list[tuple[str, str]]]]:
    """Request name ("r0", or "r0/s1" for a firstAvailable subrequest) -> (class, [(expression, field)])."""
    out = {}
    for i, req in enumerate(claim["spec"]["devices"]["requests"]):
        if req.get("exactly"):
            sels = req["exactly"].get("selectors") or []
            out[req["name"]] = (req["exactly"]["deviceClassName"], [
                (s["cel"]["expression"], f"spec.devices.requests[{i}].exactly.selectors[{j}].cel.expression")
                for j, s in enumerate(sels)])
        for k, sub in enumerate(req.get("firstAvailable") or []):
            out[f"{req['name']}/{sub['name']}"] = (sub["deviceClassName"], [
                (s["cel"]["expression"],
                 f"spec.devices.requests[{i}].firstAvailable[{k}].selectors[{j}].cel.expression")
                for j, s in enumerate(sub.get("selectors") or [])])
    return out


def selected(selectors: list[tuple[str, str]], view) -> bool:
    """The allocator's order: class selectors, then request selectors, stopping at the first false."""
    return all(compile_selector(expr, where).matches(view) for expr, where in selectors)


@pytest.mark.parametrize("stem", corpus_ids())
def test_corpus_selectors_compile(stem):
    doc = load(stem)
    count = 0
    for sels in class_selectors(doc).values():
        for expr, where in sels:
            compile_selector(expr, where)
            count += 1
    for probe in doc["probes"]:
        for claim in probe["claim_manifests"]:
            for _cls, sels in requests(claim).values():
                for expr, where in sels:
                    compile_selector(expr, where)
                    count += 1
    assert count > 0


def test_corpus_allocated_devices_match_their_requests():
    checked = 0
    for stem in corpus_ids():
        checked += allocated_devices_matched(load(stem))
    assert checked > 100  # devices kube-scheduler allocated in the corpus


def allocated_devices_matched(doc: dict) -> int:
    classes = class_selectors(doc)
    views = devices(doc)
    checked = 0
    for probe in doc["probes"]:
        allocations = probe["kube_scheduler"].get("allocations") or {}
        for claim in probe["claim_manifests"]:
            allocation = allocations.get(claim["metadata"]["name"])
            if not allocation:
                continue
            reqs = requests(claim)
            for result in allocation["devices"]["results"]:
                cls, sels = reqs[result["request"]]
                view = views[(result["driver"], result["pool"], result["device"])]
                assert selected(classes[cls] + sels, view), (doc["case"], probe["index"], result)
                checked += 1
    return checked


@pytest.mark.parametrize("stem", corpus_ids())
def test_corpus_selectors_evaluate_on_every_device_without_error(stem):
    # kube-scheduler evaluated these on every candidate device without a CEL error (its one scheduler error
    # in the corpus is a constraint's); a model no device has matches no device.
    doc = load(stem)
    classes = class_selectors(doc)
    views = devices(doc)
    for probe in doc["probes"]:
        for claim in probe["claim_manifests"]:
            for cls, sels in requests(claim).values():
                if cls not in classes:
                    continue  # unsched:missing-class
                hits = [key for key, view in views.items() if selected(classes[cls] + sels, view)]
                if "unsched:missing-model" in probe["tags"] and sels:
                    assert hits == [], (probe["index"], sels)


def reachable(doc: dict, node_name: str) -> set[tuple[str, str, str]]:
    """The devices of the slices a node can use: its own, and shared ones whose nodeSelector (zone terms, as
    the corpus writes them) or allNodes takes it."""
    node = next(n for n in doc["objects"]["nodes"] if n["metadata"]["name"] == node_name)
    labels = node["metadata"].get("labels") or {}
    out = set()
    for slice_ in doc["objects"]["resourceslices"]:
        spec = slice_["spec"]
        if spec.get("nodeName"):
            ok = spec["nodeName"] == node_name
        elif spec.get("nodeSelector"):
            ok = any(all(labels.get(e["key"]) in e["values"] for e in term.get("matchExpressions") or [])
                     and not term.get("matchFields")
                     for term in spec["nodeSelector"]["nodeSelectorTerms"])
        else:
            ok = bool(spec.get("allNodes"))
        if ok:
            out.update((spec["driver"], spec["pool"]["name"], d["name"]) for d in spec.get("devices") or [])
    return out


def test_corpus_all_mode_requests_got_exactly_the_devices_we_select():
    # allocationMode All takes every device on the node's pools that the class and selectors match: ours
    # selecting one more or one fewer than kube-scheduler allocated is a wrong match either way.
    checked = 0
    for stem in corpus_ids():
        checked += all_mode_requests_matched(load(stem))
    assert checked >= 10  # All-mode requests kube-scheduler allocated in the corpus


def all_mode_requests_matched(doc: dict) -> int:
    classes = class_selectors(doc)
    views = devices(doc)
    checked = 0
    for probe in doc["probes"]:
        node = probe["kube_scheduler"].get("bound_to")
        allocations = probe["kube_scheduler"].get("allocations") or {}
        for claim in probe["claim_manifests"]:
            allocation = allocations.get(claim["metadata"]["name"])
            if not node or not allocation:
                continue
            reqs = requests(claim)
            for req in claim["spec"]["devices"]["requests"]:
                if (req.get("exactly") or {}).get("allocationMode") != "All":
                    continue
                cls, sels = reqs[req["name"]]
                ours = {key for key in reachable(doc, node) if selected(classes[cls] + sels, views[key])}
                theirs = {(r["driver"], r["pool"], r["device"]) for r in allocation["devices"]["results"]
                          if r["request"] == req["name"]}
                assert ours == theirs, (doc["case"], probe["index"], req["name"])
                checked += 1
    return checked
