"""CloudFormation templates as the tests see them, resolved for one set of parameters.

Parsed by cfn-lint's own YAML decoder; parameters checked against their constraints; intrinsic functions
resolved the way CloudFormation resolves them; values coerced to the API's types by botocore's shape
(CloudFormation converts "1" to 1 for an Integer property the same way).

Only the intrinsics these templates use are resolved; any other raises, so a template cannot slip past the
tests by using something this module does not understand.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import botocore.session
from cfnlint.decode import decode_str

if TYPE_CHECKING:
    from botocore.model import OperationModel, Shape

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "infra" / "cloudformation"
ACCOUNT = "123456789012"
REGION = "us-east-1"
NO_VALUE = object()
_PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::Partition": "aws",
    "AWS::StackName": "test-stack",
    "AWS::NoValue": NO_VALUE,
}


def load(name: str) -> dict[str, Any]:
    """The template ``infra/cloudformation/<name>`` as plain JSON data (tags become Fn:: keys)."""
    template, matches = decode_str((TEMPLATES / name).read_text())
    assert not matches, matches
    return json.loads(json.dumps(template))


def parameter_file(name: str) -> dict[str, str]:
    """A ``params/*.json`` file (the `aws cloudformation --parameters` form) as a dict."""
    rows = json.loads((TEMPLATES / "params" / name).read_text())
    return {row["ParameterKey"]: row["ParameterValue"] for row in rows}


def check_parameters(template: dict[str, Any], values: dict[str, str]) -> dict[str, str]:
    """Defaults filled in and every constraint checked, as CloudFormation does before creating."""
    declared = template["Parameters"]
    unknown = set(values) - set(declared)
    assert not unknown, f"parameters the template does not declare: {unknown}"
    out: dict[str, str] = {}
    for name, spec in declared.items():
        if name in values:
            value = str(values[name])
        else:
            assert "Default" in spec, f"{name} has no default and no value"
            value = str(spec["Default"])
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), f"{name}={value!r} breaks its pattern"
        if "AllowedValues" in spec:
            assert value in [str(v) for v in spec["AllowedValues"]], f"{name}={value!r} not allowed"
        if spec["Type"] == "Number":
            number = float(value)
            assert number >= float(spec.get("MinValue", number)), f"{name} below MinValue"
            assert number <= float(spec.get("MaxValue", number)), f"{name} above MaxValue"
        out[name] = value
    return out


@dataclass
class Stack:
    """One template with one set of parameter values, resolved resource by resource."""

    template: dict[str, Any]
    parameters: dict[str, str] = field(default_factory=dict)
    physical: dict[str, dict[str, str]] = field(default_factory=dict)
    """Deployed resources' Ref and attributes by logical id; others resolve to stand-in names."""

    def __post_init__(self) -> None:
        self.parameters = check_parameters(self.template, self.parameters)
        self.conditions = {
            name: self._condition(body) for name, body in self.template.get("Conditions", {}).items()
        }

    def resources(self, type_: str | None = None) -> dict[str, dict[str, Any]]:
        """Resolved Properties of the resources that exist (their Condition holds), by logical id."""
        return {
            logical_id: self.resolve(resource.get("Properties", {}))
            for logical_id, resource in self.template["Resources"].items()
            if (type_ is None or resource["Type"] == type_) and self.exists(logical_id)
        }

    def exists(self, logical_id: str) -> bool:
        """Whether the resource's Condition (if any) holds."""
        condition = self.template["Resources"][logical_id].get("Condition")
        return condition is None or self.conditions[condition]

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its value."""
        if isinstance(value, list):
            items = [self.resolve(v) for v in value]
            return [v for v in items if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref" or key.startswith("Fn::"):
                return self._intrinsic(key, arg)
        items = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not NO_VALUE}

    def _intrinsic(self, key: str, arg: Any) -> Any:  # noqa: PLR0911  (one branch per function)
        if key == "Ref":
            return self._ref(arg)
        if key == "Fn::If":
            name, yes, no = arg
            return self.resolve(yes if self.conditions[name] else no)
        if key == "Fn::Sub":
            text, extra = (arg, {}) if isinstance(arg, str) else (arg[0], self.resolve(arg[1]))
            return self._sub(text, extra)
        if key == "Fn::GetAtt":
            logical_id, attribute = arg if isinstance(arg, list) else arg.split(".", 1)
            assert logical_id in self.template["Resources"], logical_id
            if logical_id in self.physical:
                return self.physical[logical_id][attribute]
            return f"{logical_id.lower()}-{attribute.lower()}"
        if key == "Fn::Select":
            index, items = arg
            return self.resolve(items)[int(index)]
        if key == "Fn::Split":
            separator, text = arg
            return self.resolve(text).split(separator)
        if key == "Fn::Join":
            separator, items = arg
            return separator.join(self.resolve(items))
        raise AssertionError(f"intrinsic not understood by the tests: {key}")

    def _ref(self, name: str) -> Any:
        if name in _PSEUDO:
            return _PSEUDO[name]
        if name in self.parameters:
            return self.parameters[name]
        assert name in self.template["Resources"], name
        if name in self.physical:
            return self.physical[name]["Ref"]
        return f"{name.lower()}-ref"

    def _sub(self, text: str, extra: dict[str, Any]) -> str:
        def one(match: re.Match[str]) -> str:
            name = match.group(1)
            if name.startswith("!"):
                return "${" + name[1:] + "}"
            if name in extra:
                return str(extra[name])
            if "." in name:
                return str(self._intrinsic("Fn::GetAtt", name))
            return str(self._ref(name))

        return re.sub(r"\$\{([^}]+)\}", one, text)

    def _condition(self, body: Any) -> bool:
        (key, arg), = body.items()
        if key == "Fn::Equals":
            left, right = (self.resolve(a) for a in arg)
            return bool(left == right)
        if key == "Fn::Not":
            return not self._condition(arg[0])
        if key == "Fn::And":
            return all(self._condition(a) for a in arg)
        if key == "Fn::Or":
            return any(self._condition(a) for a in arg)
        if key == "Condition":
            return self.conditions[arg]
        raise AssertionError(f"condition not understood by the tests: {key}")


@functools.cache
def operation(service: str, name: str) -> OperationModel:
    """The botocore model of one API operation (loaded once per test run)."""
    return botocore.session.get_session().get_service_model(service).operation_model(name)


def coerce(value: Any, shape: Shape) -> Any:  # noqa: PLR0911  (one branch per shape type)
    """``value`` converted to the types of a botocore input shape (CloudFormation's conversion)."""
    if shape.type_name == "structure":
        return {k: coerce(v, shape.members[k]) if k in shape.members else v for k, v in value.items()}
    if shape.type_name == "list":
        return [coerce(v, shape.member) for v in value]
    if shape.type_name == "map":
        return {k: coerce(v, shape.value) for k, v in value.items()}
    if shape.type_name in {"integer", "long"} and isinstance(value, str):
        return int(value)
    if shape.type_name in {"double", "float"} and isinstance(value, str):
        return float(value)
    if shape.type_name == "boolean" and isinstance(value, str):
        return {"true": True, "false": False}[value.lower()]
    return value
