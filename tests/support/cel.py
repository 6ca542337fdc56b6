"""Evaluate a CRD's x-kubernetes-validations (CEL rules) against an object.

This stands in for the apiserver's CEL admission step: at every schema node that
carries rules and is present in the object, each rule is evaluated with ``self``
bound to that node's value. Transition rules (those using ``oldSelf``) only run on
updates, so they are skipped here. Schema defaults are applied first, as the
apiserver does.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import celpy

from .crds import Schema, apply_defaults, walk

_OLD_SELF = re.compile(r"\boldSelf\b")
_ENV = celpy.Environment()


@dataclass(frozen=True)
class Rule:
    schema_path: str  # where the rule sits in the schema, e.g. .spec.compute
    rule: str
    message: str


@dataclass(frozen=True)
class Failure:
    rule: Rule
    path: str  # where in the object it failed, e.g. .spec.configurations
    error: str | None = None  # set when the rule could not be evaluated

    def __str__(self) -> str:
        what = f"error: {self.error}" if self.error else self.rule.message
        return f"{self.path}: {what}"


def _rules_at(node: Schema, schema_path: str) -> list[Rule]:
    return [
        Rule(schema_path, v["rule"], v.get("message") or f"failed rule: {v['rule']}")
        for v in node.get("x-kubernetes-validations", [])
    ]


def rules(schema: Schema) -> list[Rule]:
    """Every CEL rule of a schema, transition rules excluded."""
    return [
        r
        for path, node in walk(schema)
        for r in _rules_at(node, path)
        if not _OLD_SELF.search(r.rule)
    ]


@functools.lru_cache(maxsize=None)
def compile_rule(rule: str) -> celpy.Runner:
    """Parse a rule once; raises celpy.CELParseError on bad syntax."""
    return _ENV.program(_ENV.compile(rule))


def _check(rule: Rule, value: Any, path: str) -> Failure | None:
    try:
        result = compile_rule(rule.rule).evaluate({"self": celpy.json_to_cel(value)})
    except Exception as exc:  # cel-python raises or returns CELEvalError
        return Failure(rule, path, error=f"{type(exc).__name__}: {exc}")
    if isinstance(result, celpy.CELEvalError):
        return Failure(rule, path, error=str(result))
    if not isinstance(result, celpy.celtypes.BoolType):
        return Failure(rule, path, error=f"rule returned {type(result).__name__}, not bool")
    return None if result else Failure(rule, path)


def _visit(node: Schema, value: Any, schema_path: str, path: str) -> Iterator[Failure]:
    for rule in _rules_at(node, schema_path):
        if not _OLD_SELF.search(rule.rule):
            failure = _check(rule, value, path)
            if failure:
                yield failure
    if isinstance(value, dict):
        props = node.get("properties", {})
        for name, sub in props.items():
            if name in value:
                yield from _visit(sub, value[name], f"{schema_path}.{name}", f"{path}.{name}")
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for name, item in value.items():
                if name not in props:
                    yield from _visit(extra, item, f"{schema_path}{{*}}", f"{path}[{name!r}]")
    elif isinstance(value, list) and isinstance(node.get("items"), dict):
        for i, item in enumerate(value):
            yield from _visit(node["items"], item, f"{schema_path}[*]", f"{path}[{i}]")


def evaluate(schema: Schema, obj: dict[str, Any], defaults: bool = True) -> list[Failure]:
    """CEL rules of ``schema`` that ``obj`` fails (or that could not be evaluated)."""
    value = apply_defaults(schema, copy.deepcopy(obj)) if defaults else obj
    return list(_visit(schema, value, "", ""))
