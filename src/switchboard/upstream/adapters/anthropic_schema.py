"""JSON Schemas reshaped for Anthropic as litellm 1.106.0 reshapes them: tool input schemas, and the
`output_format` schema of a json_schema response format.

Every step copies: the client's body is never changed.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

import orjson

from switchboard.errors import BadRequest

MAX_INLINED_BYTES = 10_000_000  # litellm's budget for `$ref` expansion (a self-multiplying schema is refused)
# What Anthropic accepts at the top of a tool's input_schema; litellm drops the rest (title, description…).
INPUT_SCHEMA_KEYS = ("type", "properties", "additionalProperties", "required", "$defs", "strict")
# Keywords structured outputs cannot enforce: removed, and told in the description, as Anthropic's SDK does.
CONSTRAINTS = {
    "minItems": "minimum number of items: {}",
    "maxItems": "maximum number of items: {}",
    "uniqueItems": "all array items must be unique",
    "contains": "array must contain an item matching: {}",
    "minContains": "minimum number of matching items: {}",
    "maxContains": "maximum number of matching items: {}",
    "prefixItems": "leading items must match, in order: {}",
    "minimum": "minimum value: {}",
    "maximum": "maximum value: {}",
    "exclusiveMinimum": "exclusive minimum value: {}",
    "exclusiveMaximum": "exclusive maximum value: {}",
    "multipleOf": "must be a multiple of {}",
    "minLength": "minimum length: {}",
    "maxLength": "maximum length: {}",
    "minProperties": "minimum number of properties: {}",
    "maxProperties": "maximum number of properties: {}",
    "patternProperties": "properties whose names match each pattern must satisfy: {}",
    "propertyNames": "property names must satisfy: {}",
    "dependentRequired": "dependent required properties: {}",
    "dependentSchemas": "dependent schemas: {}",
    "unevaluatedProperties": "unevaluated properties must satisfy: {}",
    "if": "conditional (if): {}",
    "then": "conditional (then): {}",
    "else": "conditional (else): {}",
    "not": "must not match: {}",
}
_TYPE_CHECKS = {
    "null": lambda v: v is None,
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def input_schema(parameters: object) -> dict[str, Any]:
    """A function's `parameters` as Anthropic's input_schema: an object schema of the known keys,
    `definitions` (draft-04) and OpenAPI `components.schemas` references inlined."""
    schema = dict(parameters) if isinstance(parameters, dict) and parameters else {}
    if schema.get("type") != "object":
        schema["type"] = "object"
    schema.setdefault("properties", {})
    components = schema.get("components")
    if "definitions" in schema or (
        isinstance(components, dict) and isinstance(components.get("schemas"), dict)
    ):
        legacy = dict(schema.pop("components", {}).get("schemas") or {})
        legacy.update(schema.pop("definitions", None) or {})
        schema = inline_refs(schema, legacy)
    return {key: schema[key] for key in INPUT_SCHEMA_KEYS if key in schema}


def output_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A response format's schema as structured outputs take it: references inlined, then
    unenforceable constraints moved into descriptions."""
    schema = dict(schema)
    definitions = schema.pop("definitions", {})
    defs = schema.pop("$defs", definitions)
    resolved = inline_refs(schema, defs if isinstance(defs, dict) else {}) if defs else schema
    filtered: dict[str, Any] = _filtered(resolved)
    return filtered


def inline_refs(schema: dict[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of `schema` with every `$ref` into `defs` (or into `$defs`/`definitions` met on the
    way) replaced by its target; a reference back into its own chain is left as it is."""
    budget = [MAX_INLINED_BYTES]
    root = _inlined(schema, {**defs, **_local_defs(schema)}, frozenset(), budget)
    return root if isinstance(root, dict) else schema


def _local_defs(node: Mapping[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        if isinstance(node.get(key), dict):
            found.update(node[key])
    return found


def _inlined(node: Any, defs: Mapping[str, Any], chain: frozenset[str], budget: list[int]) -> Any:
    if isinstance(node, list):
        return [_inlined(item, defs, chain, budget) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.split("/")[-1]
        target = defs.get(name)
        if name in chain or not isinstance(target, dict):
            return copy.deepcopy(node)
        budget[0] -= len(orjson.dumps(target, option=orjson.OPT_NON_STR_KEYS))
        if budget[0] < 0:
            raise BadRequest("a JSON schema expands past the size the gateway accepts")
        return _inlined(target, {**defs, **_local_defs(target)}, chain | {name}, budget)
    scope = {**defs, **_local_defs(node)}
    return {key: _inlined(value, scope, chain, budget) for key, value in node.items()}


def _filtered(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return schema
    notes = []
    for field, label in CONSTRAINTS.items():
        if field not in schema or schema[field] is False:
            continue
        value = schema[field]
        # json.dumps, not orjson: the note is text the model reads, spelled as litellm spells it.
        notes.append(label.format(json.dumps(value) if isinstance(value, dict | list) else value))
    result: dict[str, Any] = {}
    if notes:
        note = "Note: " + ", ".join(notes) + "."
        result["description"] = f"{schema['description']} {note}" if schema.get("description") else note
    drop_type = _enum_conflicts_with_type(schema)
    for key, value in schema.items():
        if key in CONSTRAINTS or (key == "type" and drop_type) or (key == "description" and notes):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            result[key] = {name: _filtered(sub) for name, sub in value.items()}
        elif key == "items" and isinstance(value, dict):
            result[key] = _filtered(value)
        elif key in ("anyOf", "oneOf") and isinstance(value, list):
            # Anthropic refuses oneOf; its SDK (and litellm) write it as anyOf.
            result["anyOf"] = result.get("anyOf", []) + [_filtered(item) for item in value]
        elif key == "allOf" and isinstance(value, list):
            result[key] = [_filtered(item) for item in value]
        else:
            result[key] = value
    if result.get("type") == "object":
        result["additionalProperties"] = False
    return result


def _enum_conflicts_with_type(schema: Mapping[str, Any]) -> bool:
    enum, declared = schema.get("enum"), schema.get("type")
    if not isinstance(enum, list) or declared is None:
        return False
    if isinstance(declared, list):
        return True
    check = _TYPE_CHECKS.get(declared) if isinstance(declared, str) else None
    return check is not None and not all(check(value) for value in enum)
