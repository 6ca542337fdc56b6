"""labelSelector and fieldSelector query parameters, parsed once and matched against objects."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

Predicate = Callable[[dict[str, Any]], bool]

# key in (a,b) | key notin (a,b) | key=v | key==v | key!=v | key | !key
_TERM = re.compile(r"""
    \s*(?:
      (?P<set_key>[^\s,!=()]+)\s+(?P<set_op>in|notin)\s*\((?P<values>[^)]*)\)
    | (?P<cmp_key>[^\s,!=()]+)\s*(?P<cmp_op>==|=|!=)\s*(?P<value>[^\s,!=()]*)
    | (?P<not>!)?\s*(?P<exists_key>[^\s,!=()]+)
    )\s*(?:,|$)""", re.VERBOSE)


class SelectorError(ValueError):
    pass


def _terms(selector: str) -> list[re.Match[str]]:
    terms, pos = [], 0
    while pos < len(selector):
        match = _TERM.match(selector, pos)
        if match is None or match.end() == pos:
            raise SelectorError(f"unable to parse requirement: {selector[pos:]!r}")
        terms.append(match)
        pos = match.end()
    return terms


def label_selector(selector: str | None) -> Predicate:
    predicates: list[Predicate] = []
    for m in _terms(selector or ""):
        if m["set_key"]:
            key, values = m["set_key"], {v.strip() for v in m["values"].split(",") if v.strip()}
            if m["set_op"] == "in":
                predicates.append(lambda labels, k=key, vs=values: labels.get(k) in vs)
            else:
                predicates.append(lambda labels, k=key, vs=values: labels.get(k) not in vs)
        elif m["cmp_key"]:
            key, value = m["cmp_key"], m["value"]
            if m["cmp_op"] == "!=":
                predicates.append(lambda labels, k=key, v=value: labels.get(k) != v)
            else:
                predicates.append(lambda labels, k=key, v=value: labels.get(k) == v)
        elif m["not"]:
            predicates.append(lambda labels, k=m["exists_key"]: k not in labels)
        else:
            predicates.append(lambda labels, k=m["exists_key"]: k in labels)
    return lambda obj: all(p(obj.get("metadata", {}).get("labels") or {}) for p in predicates)


# The real server supports metadata.name and metadata.namespace for every kind, a few more per kind.
_FIELDS: dict[str, Callable[[dict[str, Any]], str]] = {
    "metadata.name": lambda obj: obj.get("metadata", {}).get("name", ""),
    "metadata.namespace": lambda obj: obj.get("metadata", {}).get("namespace", ""),
}


def field_selector(selector: str | None) -> Predicate:
    predicates: list[Predicate] = []
    for m in _terms(selector or ""):
        if not m["cmp_key"]:
            raise SelectorError(f"field selectors support only =, == and !=: {m.group(0).strip()!r}")
        getter = _FIELDS.get(m["cmp_key"])
        if getter is None:
            raise SelectorError(f"field label not supported: {m['cmp_key']}")
        if m["cmp_op"] == "!=":
            predicates.append(lambda obj, g=getter, v=m["value"]: g(obj) != v)
        else:
            predicates.append(lambda obj, g=getter, v=m["value"]: g(obj) == v)
    return lambda obj: all(p(obj) for p in predicates)
