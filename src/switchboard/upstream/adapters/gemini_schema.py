"""JSON Schemas reshaped into the OpenAPI subset Gemini accepts, as litellm 1.106.0 reshapes them.

Function parameters always take this form (`build_vertex_schema` in litellm); a `json_schema`
response format takes it only for model names before Gemini 2 (`responseSchema`), newer ones get the
JSON Schema as it is (`responseJsonSchema`). Every step copies: the client's body is never changed
(litellm changes it in place, which a retry or a fallback would then see).
"""

from __future__ import annotations

from typing import Any

from switchboard.errors import BadRequest
from switchboard.kit.nesting import deeper_than

MAX_DEPTH = 200  # containers deep (litellm refuses schemas over 100 levels of properties)
MAX_INLINED = 2000  # `$ref`s expanded per schema: a self-multiplying schema is refused, not expanded
# Gemini's Schema object: any other key is dropped.
SCHEMA_FIELDS = frozenset(
    (
        "type", "format", "title", "description", "nullable", "default", "items", "minItems", "maxItems",
        "enum", "properties", "propertyOrdering", "required", "minProperties", "maxProperties", "minimum",
        "maximum", "minLength", "maxLength", "pattern", "example", "anyOf",
    )
)  # fmt: skip
KEPT_FORMATS = frozenset(("enum", "date-time"))
# Moved into the object's or array's branch when a type list becomes anyOf.
TYPED_FIELDS = (
    "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minProperties",
    "maxProperties",
)  # fmt: skip


def without_openai_flags(value: Any, *, additional_properties: bool = True, param: str = "tools") -> Any:
    """A copy without OpenAI's `strict` flags and (unless told to keep them) the
    `additionalProperties: false` that Gemini's OpenAPI schemas refuse.

    litellm drops every key named `strict`; only flags are dropped here, so that a property that
    happens to be called "strict" survives.
    """
    if deeper_than(value, MAX_DEPTH):  # checked once here; the copy below recurses
        raise BadRequest("a JSON schema in the request nests too deeply", param=param)
    return _without_flags(value, additional_properties)


def _without_flags(value: Any, additional_properties: bool) -> Any:
    if isinstance(value, dict):
        return {
            key: _without_flags(item, additional_properties)
            for key, item in value.items()
            if not (
                (key == "strict" and isinstance(item, bool))
                or (additional_properties and key == "additionalProperties" and item is False)
            )
        }
    if isinstance(value, list):
        return [_without_flags(item, additional_properties) for item in value]
    return value


def gemini_schema(
    parameters: dict[str, Any], *, property_ordering: bool = False, param: str = "tools"
) -> dict[str, Any]:
    """A JSON Schema as Gemini's OpenAPI Schema (the input is not changed). BadRequest, naming
    `param`, for a schema that nests too deeply, expands too far or allows only null."""
    defs = parameters.get("$defs") or {}
    root = {key: value for key, value in parameters.items() if key != "$defs"}
    try:
        schema: dict[str, Any] = _inline_refs(
            root, {**defs, **(root.get("definitions") or {})}, frozenset(), [MAX_INLINED], 0
        )
        _nullable_from_any_of(schema, 0)
        _type_lists_as_any_of(schema, 0)
        _empty_enum_strings_as_null(schema, 0)
        _enums_on_strings_only(schema, 0)
        _array_items(schema, 0)
        _object_types(schema, 0)
        schema = _known_fields(schema, 0)
        if property_ordering:
            _property_ordering(schema, 0)
    except ValueError as exc:
        raise BadRequest(str(exc), param=param) from None
    return schema


def _deeper(depth: int) -> int:
    if depth >= MAX_DEPTH:
        raise ValueError("a JSON schema in the request nests too deeply")
    return depth + 1


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def _inline_refs(
    node: Any, defs: dict[str, Any], chain: frozenset[str], budget: list[int], depth: int
) -> Any:
    """A copy with every `$ref` to a known definition replaced by (a copy of) it; cycles stay refs."""
    depth = _deeper(depth)
    if isinstance(node, list):
        return [_inline_refs(item, defs, chain, budget, depth) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = defs.get(name)
        if name in chain or not isinstance(target, dict):
            return _copy(node)  # a cycle, or a reference to nothing: left as it is
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError("a JSON schema in the request expands too far")
        inner = {**defs, **(target.get("$defs") or {}), **(target.get("definitions") or {})}
        return _inline_refs(target, inner, chain | {name}, budget, depth)
    if "$defs" in node or "definitions" in node:
        defs = {**defs, **(node.get("$defs") or {}), **(node.get("definitions") or {})}
    return {key: _inline_refs(value, defs, chain, budget, depth) for key, value in node.items()}


def _children(schema: dict[str, Any], *, any_of: bool) -> list[Any]:
    found: list[Any] = []
    properties = schema.get("properties")
    if isinstance(properties, dict):
        found.extend(properties.values())
    if "items" in schema:
        found.append(schema["items"])
    if any_of and isinstance(schema.get("anyOf"), list):
        found.extend(schema["anyOf"])
    return [child for child in found if isinstance(child, dict)]


def _nullable_from_any_of(schema: dict[str, Any], depth: int) -> None:
    """`anyOf: [X, {type: null}]` → `anyOf: [X + nullable]` (properties and items, as litellm)."""
    depth = _deeper(depth)
    any_of = schema.get("anyOf")
    if isinstance(any_of, list):
        kept = [item for item in any_of if not (isinstance(item, dict) and item.get("type") == "null")]
        for item in kept:
            if isinstance(item, dict) and not item:
                item["type"] = "object"
        if not kept:
            raise ValueError("a JSON schema's anyOf holds only the null type")
        if len(kept) != len(any_of):
            for item in kept:
                item["nullable"] = True
            schema["anyOf"] = kept
    for child in _children(schema, any_of=False):
        _nullable_from_any_of(child, depth)


def _type_lists_as_any_of(schema: dict[str, Any], depth: int) -> None:
    """`type: [a, b]` → `anyOf: [{type: a}, {type: b}]`; `type: [a]` → `type: a`."""
    depth = _deeper(depth)
    types = schema.get("type")
    if isinstance(types, list) and len(types) > 1:
        branches: list[dict[str, Any]] = []
        for kind in types:
            if not isinstance(kind, str):
                continue
            branch: dict[str, Any] = {"type": kind}
            if kind in ("object", "array"):
                branch.update({field: _copy(schema[field]) for field in TYPED_FIELDS if field in schema})
            branches.append(branch)
        if any(kind in ("object", "array") for kind in types if isinstance(kind, str)):
            for field in TYPED_FIELDS:
                schema.pop(field, None)
        schema["anyOf"] = branches
        del schema["type"]
    elif isinstance(types, list) and len(types) == 1:
        schema["type"] = types[0]
    for child in _children(schema, any_of=True):
        _type_lists_as_any_of(child, depth)


def _empty_enum_strings_as_null(schema: dict[str, Any], depth: int) -> None:
    depth = _deeper(depth)
    if isinstance(schema.get("enum"), list):
        schema["enum"] = [None if value == "" else value for value in schema["enum"]]
    for child in _children(schema, any_of=False):
        _empty_enum_strings_as_null(child, depth)


def _enums_on_strings_only(schema: dict[str, Any], depth: int) -> None:
    """Gemini takes `enum` on strings only: elsewhere it is dropped."""
    depth = _deeper(depth)
    if isinstance(schema.get("enum"), list) and not _is_string(schema):
        del schema["enum"]
    for child in _children(schema, any_of=True):
        _enums_on_strings_only(child, depth)


def _is_string(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if isinstance(kind, str) and kind.lower() == "string":
        return True
    branches = schema.get("anyOf")
    return isinstance(branches, list) and any(
        isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"].lower() == "string"
        for b in branches
    )


def _array_items(schema: Any, depth: int) -> None:
    """Every array names its items (an object when unsaid), at any depth."""
    depth = _deeper(depth)
    if isinstance(schema, dict):
        kind = schema.get("type")
        if isinstance(kind, str) and kind.lower() == "array" and schema.get("items", {}) == {}:
            schema["items"] = {"type": "object"}
        values: Any = schema.values()
    elif isinstance(schema, list):
        values = schema
    else:
        return
    for value in values:
        if isinstance(value, dict | list):
            _array_items(value, depth)


def _object_types(schema: dict[str, Any], depth: int) -> None:
    """An untyped schema is an object; empty `properties` are dropped (Gemini refuses them)."""
    depth = _deeper(depth)
    if not any(key in schema for key in ("type", "anyOf", "oneOf", "allOf")):
        schema["type"] = "object"
    properties = schema.get("properties")
    if properties is not None:
        if "required" in schema and schema["required"] is None:
            del schema["required"]
        schema["type"] = "object"
        if not properties:
            schema.pop("properties", None)
            schema.pop("required", None)
        elif isinstance(properties, dict):
            for value in properties.values():
                if isinstance(value, dict):
                    _object_types(value, depth)
    if isinstance(schema.get("items"), dict):
        _object_types(schema["items"], depth)
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list):
            for value in schema[key]:
                if isinstance(value, dict):
                    _object_types(value, depth)


def _known_fields(schema: Any, depth: int) -> Any:
    """Only Gemini's Schema fields; beside `anyOf` nothing but it (title and description go into it)."""
    depth = _deeper(depth)
    if not isinstance(schema, dict):
        return schema
    any_of = schema.get("anyOf")
    if any_of:
        if isinstance(any_of, list) and all(isinstance(item, dict) for item in any_of):
            for key in ("title", "description"):
                if schema.get(key):
                    for item in any_of:
                        item[key] = schema[key]
        schema = {"anyOf": any_of}
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key not in SCHEMA_FIELDS:
            continue
        if key == "properties" and isinstance(value, dict):
            kept[key] = {name: _known_fields(child, depth) for name, child in value.items()}
        elif key == "format":
            if value in KEPT_FORMATS:
                kept[key] = value
        elif key == "items" and isinstance(value, dict):
            kept[key] = _known_fields(value, depth)
        elif key == "anyOf" and isinstance(value, list):
            kept[key] = [_known_fields(item, depth) for item in value]
        else:
            kept[key] = value
    return kept


def _property_ordering(schema: dict[str, Any], depth: int) -> None:
    """Gemini orders structured output alphabetically unless told: keep the schema's order."""
    depth = _deeper(depth)
    properties = schema.get("properties")
    if isinstance(properties, dict):
        schema.setdefault("propertyOrdering", list(properties))
        for child in properties.values():
            if isinstance(child, dict):
                _property_ordering(child, depth)
    if isinstance(schema.get("items"), dict):
        _property_ordering(schema["items"], depth)
