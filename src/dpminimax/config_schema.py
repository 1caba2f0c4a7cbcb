"""JSON-schema validation of the workflow's configuration files, with one-line errors.

The workflow checks its config (``workflow/schemas/config.schema.yaml``) and every paper's
``experiments.yaml`` (``workflow/schemas/experiments.schema.yaml``) with :func:`check_schema`
before Snakemake's own ``validate`` fills in the defaults: an invalid value is one line naming
the file, the key path and what the value must be (``config: scale: must be one of 'smoke',
'default', 'quick', 'paper'; got 'huge'``) instead of a dump of the schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from dpminimax.experiments import ExperimentConfigError

_TYPES = {"number": "a number", "integer": "an integer", "string": "a string",
          "array": "a list", "object": "a mapping", "boolean": "true or false", "null": "null"}


def check_schema(instance: Any, schema_path: str | Path, source: str) -> None:
    """Raise :class:`ExperimentConfigError` (one line: ``source: key.path: must be ...; got
    ...``) for the most relevant violation of the schema at ``schema_path``, if any."""
    from jsonschema.exceptions import best_match
    from jsonschema.validators import validator_for

    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = validator_for(schema)(schema)
    error = best_match(validator.iter_errors(instance))
    if error is None:
        return
    while _is_alternative(error):  # -1 as an epsilon: say every form an epsilon may take
        error = error.parent
    if error.validator in {"required", "additionalProperties", "propertyNames",
                           "minProperties", "not", "if", "then", "dependentRequired"}:
        what = " ".join(error.message.split())  # the message names the key: keep it, one line
    else:
        what = f"must be {describe(error.schema, schema)}; got {_short(error.instance)}"
    where = key_path(error.absolute_path)
    raise ExperimentConfigError(f"{source}: {where}: {what}" if where else f"{source}: {what}")


def _is_alternative(error) -> bool:
    """Whether ``error`` is one failed option of an ``anyOf`` / ``oneOf`` of typed schemas
    about the same value."""
    parent = error.parent
    return (parent is not None and parent.validator in {"anyOf", "oneOf"}
            and parent.absolute_path == error.absolute_path
            and all(isinstance(option, Mapping) and "type" in option
                    for option in parent.validator_value))


def key_path(path) -> str:
    """``experiments.exp.epsilons[0]`` from a jsonschema path (empty at the top level)."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return text.lstrip(".")


def describe(schema: Mapping[str, Any] | bool, root: Mapping[str, Any] | None = None) -> str:
    """What a value satisfying ``schema`` is, in words (a local ``$ref`` such as
    ``#/$defs/epsilon`` resolved in ``root``): its type, range, allowed values, pattern, list
    length."""
    if not isinstance(schema, Mapping):
        return "nothing" if schema is False else "anything"
    if "$ref" in schema and root is not None:
        target = root
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        return describe(target, root)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(describe(option, root) for option in schema[key])
    if "enum" in schema:
        return "one of " + ", ".join(repr(value) for value in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    types = schema.get("type")
    types = [types] if isinstance(types, str) else list(types or [])
    words = " or ".join(_TYPES.get(name, name) for name in types) or "a value"
    low, high = _bound(schema, "minimum", ">="), _bound(schema, "maximum", "<=")
    low, high = (_bound(schema, "exclusiveMinimum", ">") or low,
                 _bound(schema, "exclusiveMaximum", "<") or high)
    limits = [limit for limit in (low, high) if limit]
    if limits:
        words += " " + " and ".join(limits)
    if "pattern" in schema:
        words += f" matching {schema['pattern']}"
    if "minItems" in schema:
        words += f" of at least {schema['minItems']} item(s)"
    if schema.get("uniqueItems"):
        words += " without repeats"
    return words


def _bound(schema: Mapping[str, Any], key: str, sign: str) -> str | None:
    return f"{sign} {schema[key]}" if key in schema else None


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."
