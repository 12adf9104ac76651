"""Template rendering shared by every part of the toolkit: one Jinja environment over templates/.

`render("kubeadm/v1beta4/init.yaml.j2", **values)` returns the text. Undefined names raise at once
(StrictUndefined), so a template that mentions a value nobody passed fails in the fast tests instead of
rendering an empty string onto a node.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml
from jinja2 import Environment, FileSystemLoader, StrictUndefined, TemplateNotFound

TEMPLATES_DIR = Path(__file__).resolve().parent.parent / "templates"


class TemplateError(LookupError):
    """A template is missing or needs a value that was not given."""


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # YAML, TOML and shell files, never HTML
    )
    env.filters["toyaml"] = to_yaml
    return env


def to_yaml(value: Any) -> str:
    """A value as block YAML in its own key order (for data a template places whole, e.g. a profile)."""
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False).rstrip("\n")


def render(template_name: str, **values: Any) -> str:
    try:
        template = environment().get_template(template_name)
    except TemplateNotFound:
        raise TemplateError(f"{TEMPLATES_DIR / template_name}: no such template") from None
    try:
        return template.render(**values)
    except Exception as err:  # jinja2.UndefinedError and friends: say which template
        raise TemplateError(f"{TEMPLATES_DIR / template_name}: {err}") from err
