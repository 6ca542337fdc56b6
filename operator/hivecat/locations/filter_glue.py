"""A parsed partition filter as an AWS Glue GetPartitions `Expression`.

Only what Glue is sure to read the same way is rendered; anything else raises FilterError, and the Glue
backend then lists every partition and filters with `evaluate` (Glue's answer is only ever a first pass).
"""

from __future__ import annotations

import re

from hivecat.locations.partition_filter import (
    LIKE_ANY, LIKE_ONE, And, Between, Compare, Expr, FilterError, In, Literal, Not, Or, like_parts,
)

_GLUE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
# Words Glue's SQL parser would read as syntax; Glue also rejects a key named "key" (a known Glue quirk).
_GLUE_RESERVED = frozenset({"and", "or", "not", "in", "like", "between", "is", "null", "true", "false", "key"})
GLUE_MAX_EXPRESSION = 2048  # characters of GetPartitions' Expression (its API model; botocore enforces it)


def _glue_literal(value: Literal) -> str:
    if isinstance(value, int):
        return str(value)
    # How Glue's parser treats a backslash or a control character inside a string is not documented:
    # refuse rather than risk selecting other partitions.
    if "\\" in value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise FilterError(f"the value {value!r} cannot be written safely in a Glue expression")
    return "'" + value.replace("'", "''") + "'"


def _glue_key(key: str) -> str:
    if not _GLUE_NAME.fullmatch(key) or key in _GLUE_RESERVED:
        raise FilterError(f"the partition key {key!r} cannot be written safely in a Glue expression")
    return key


def to_glue_expression(expr: Expr) -> str:
    """The filter in AWS Glue GetPartitions `Expression` syntax (fully parenthesized).

    Raises FilterError for what Glue's documentation leaves unclear (backslashes, LIKE escapes, key names
    that are not plain identifiers or are reserved) and for an expression longer than Glue accepts (a long IN
    list): callers fetch unfiltered and use evaluate() instead.
    """
    text = _glue_expression(expr)
    if len(text) > GLUE_MAX_EXPRESSION:
        raise FilterError(f"the filter is {len(text)} characters long as a Glue expression, more than the "
                          f"{GLUE_MAX_EXPRESSION} Glue accepts")
    return text


def _glue_expression(expr: Expr) -> str:
    if isinstance(expr, (And, Or)):
        word = " AND " if isinstance(expr, And) else " OR "
        return word.join(f"({_glue_expression(operand)})" for operand in expr.operands)
    if isinstance(expr, Not):
        return f"NOT ({_glue_expression(expr.operand)})"
    key = _glue_key(expr.key)
    if isinstance(expr, Compare):
        return f"{key} {'<>' if expr.op == '!=' else expr.op} {_glue_literal(expr.value)}"
    if isinstance(expr, Between):
        return f"{key} BETWEEN {_glue_literal(expr.low)} AND {_glue_literal(expr.high)}"
    if isinstance(expr, In):
        return f"{key} IN ({', '.join(_glue_literal(value) for value in expr.values)})"
    # Glue documents LIKE's wildcards but no escape: a pattern that needs a literal %, _ or \ is refused.
    parts = like_parts(expr.pattern)
    if any(part in ("%", "_", "\\") for part in parts):
        raise FilterError(f"the LIKE pattern {expr.pattern!r} needs an escape, which Glue does not document")
    text = "".join("%" if p is LIKE_ANY else "_" if p is LIKE_ONE else str(p) for p in parts)
    return f"{key} LIKE {_glue_literal(text)}"
