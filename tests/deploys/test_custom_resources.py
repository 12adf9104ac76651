"""Every custom resource the project renders is valid against the real CRD that serves it: the
openAPIV3Schema of its version in the release's operator-crds.yaml (../shared/reference/), for each
Calico release the tests know.

The CRD schema is OpenAPI v3 (Kubernetes' structural subset), checked here with jsonschema after the
translation below. Modelled as the API server does it: `nullable`, `x-kubernetes-int-or-string`,
`x-kubernetes-preserve-unknown-fields`, and strict field validation (kubectl's default since 1.27): a
field the schema does not declare is an error. Not modelled: CEL rules (x-kubernetes-validations),
defaulting, list-type/map-type uniqueness, and ObjectMeta, which the API server validates itself.
"""

from __future__ import annotations

import copy

import jsonschema
import pytest
import yaml

from deploys import files as f
from tests.deploys.labs import make_lab
from tests.reference import CALICO_RELEASES, calico_crds


def json_schema(schema: dict) -> dict:
    """OpenAPI v3 CRD schema -> JSON Schema with the API server's meaning."""
    schema = copy.deepcopy(schema)

    def walk(node: dict) -> dict:
        for key in ("properties", "patternProperties"):
            for name, child in node.get(key, {}).items():
                node[key][name] = walk(child)
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                node[key] = walk(node[key])
        for key in ("allOf", "anyOf", "oneOf"):
            if key in node:
                node[key] = [walk(child) for child in node[key]]
        if node.pop("x-kubernetes-int-or-string", False):
            node.pop("type", None)
            node.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])  # usually given as such
        preserve = node.pop("x-kubernetes-preserve-unknown-fields", False)
        if node.get("type") == "object" and "properties" in node and "additionalProperties" not in node \
                and not preserve:
            node["additionalProperties"] = False  # strict field validation: unknown fields are errors
        if node.pop("nullable", False):
            return {"anyOf": [{"type": "null"}, node]}
        return node

    return walk(schema)


def crd_for(crds: dict[str, dict], api_version: str, kind: str) -> tuple[dict, dict] | None:
    """(CRD, its version entry) serving apiVersion/kind, or None."""
    group, _, version = api_version.rpartition("/")
    for crd in crds.values():
        spec = crd["spec"]
        if spec["group"] == group and spec["names"]["kind"] == kind:
            served = [v for v in spec["versions"] if v["name"] == version and v.get("served")]
            return (crd, served[0]) if served else None
    return None


def validate(resource: dict, crds: dict[str, dict]) -> None:
    found = crd_for(crds, resource["apiVersion"], resource["kind"])
    assert found, f"no CRD in the release serves {resource['kind']} {resource['apiVersion']}"
    _, version = found
    schema = json_schema(version["schema"]["openAPIV3Schema"])
    schema["properties"]["metadata"] = {"type": "object"}  # ObjectMeta: validated by the API server itself
    jsonschema.Draft7Validator(schema).validate(resource)


def rendered_custom_resources(lab) -> list[dict]:
    """Every document the project renders that is not a built-in kind: today the Calico Installation file."""
    return [doc for doc in yaml.safe_load_all(f.calico_installation(lab)) if doc]


LABS = {
    "cidr": make_lab(),
    "can-reach": make_lab(cni={"ip_autodetection": "can-reach"}),
    "kubernetes-internal-ip": make_lab(cni={"ip_autodetection": "kubernetes-internal-ip"}, workers=3),
}


@pytest.mark.parametrize("release", CALICO_RELEASES)
@pytest.mark.parametrize("lab_name", LABS)
def test_rendered_custom_resources_satisfy_the_real_crd_schemas(release: str, lab_name: str):
    crds = calico_crds(release)
    resources = rendered_custom_resources(LABS[lab_name])
    assert [r["kind"] for r in resources] == ["Installation", "APIServer"]
    for resource in resources:
        validate(resource, crds)


@pytest.mark.parametrize("release", CALICO_RELEASES)
def test_the_crds_the_deploy_waits_for_are_the_ones_serving_what_it_renders(release: str):
    crds = calico_crds(release)
    serving = {crd_for(crds, r["apiVersion"], r["kind"])[0]["metadata"]["name"]
               for r in rendered_custom_resources(make_lab())}
    assert serving == set(f.CALICO_INSTALLATION_CRDS)


@pytest.mark.parametrize("change,error", [
    (lambda spec: spec["calicoNetwork"].update(bgpp="Disabled"), "Additional properties are not allowed ('bgpp'"),
    (lambda spec: spec["calicoNetwork"]["ipPools"][0].update(encapsulation="GRE"), "'GRE' is not one of"),
    (lambda spec: spec["calicoNetwork"]["ipPools"][0].update(blockSize="26"), "'26' is not of type 'integer'"),
    (lambda spec: spec["calicoNetwork"]["nodeAddressAutodetectionV4"].update(cidr=["10.0.0.0/8"]),
     "Additional properties are not allowed ('cidr'"),
])
def test_the_schema_check_refuses_what_the_api_server_would(change, error):
    crds = calico_crds(CALICO_RELEASES[-1])
    installation = rendered_custom_resources(make_lab())[0]
    change(installation["spec"])
    with pytest.raises(jsonschema.ValidationError, match=error.replace("(", r"\(").replace("[", r"\[")):
        validate(installation, crds)


def test_openapi_extensions_keep_their_api_server_meaning():
    schema = json_schema({"type": "object", "properties": {
        "port": {"x-kubernetes-int-or-string": True},
        "note": {"type": "string", "nullable": True},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {"a": {"type": "string"}}},
    }})
    check = jsonschema.Draft7Validator(schema)
    for good in ({"port": 8080}, {"port": "http"}, {"note": None}, {"free": {"a": "x", "anything": 1}}):
        check.validate(good)
    for bad in ({"port": 1.5}, {"note": 3}, {"other": 1}):
        with pytest.raises(jsonschema.ValidationError):
            check.validate(bad)
