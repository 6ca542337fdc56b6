"""A parsed partition filter as a SQL predicate over the metastore's own tables (PARTITION_KEY_VALS), with
the same meaning as `evaluate`: exact string comparison, integers compared as numbers, LIKE with SQL
wildcards, three-valued logic. MySQL/MariaDB and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from hivecat.locations.partition_filter import (
    LIKE_ANY, LIKE_ONE, MAX_DIGITS, And, Between, Compare, Expr, KeyKind, Like, Literal, Not, Or, like_parts,
)
from hivecat.locations.prefix import exact_text

_SQL_ESCAPE = "!"   # our own escape character: a backslash would depend on MySQL's NO_BACKSLASH_ESCAPES
_NUMBER_TYPE = sa.Numeric(MAX_DIGITS, 0)   # every integer of up to 20 digits, bigint's range included


class _ExactLike(FunctionElement):
    """value LIKE pattern, case-sensitive and without space padding, escape character _SQL_ESCAPE."""

    name = "hivecat_exact_like"
    inherit_cache = True
    type = sa.Boolean()


def _like_operands(element: FunctionElement, compiler, **kw) -> tuple[str, str]:
    value, pattern = element.clauses
    return compiler.process(value, **kw), compiler.process(pattern, **kw)


@compiles(_ExactLike)
def _like_default(element, compiler, **kw):
    value, pattern = _like_operands(element, compiler, **kw)
    return f"({value} LIKE {pattern} ESCAPE '{_SQL_ESCAPE}')"


@compiles(_ExactLike, "mysql")
def _like_mysql(element, compiler, **kw):
    # A _bin collation of a real character set: case-sensitive, and _ is one character, not one byte.
    value, pattern = _like_operands(element, compiler, **kw)
    return (f"(CONVERT({value} USING utf8mb4) COLLATE utf8mb4_bin LIKE "
            f"CONVERT({pattern} USING utf8mb4) COLLATE utf8mb4_bin ESCAPE '{_SQL_ESCAPE}')")


@compiles(_ExactLike, "postgresql")
def _like_postgresql(element, compiler, **kw):
    value, pattern = _like_operands(element, compiler, **kw)
    return f"(({value}) COLLATE \"C\" LIKE ({pattern}) COLLATE \"C\" ESCAPE '{_SQL_ESCAPE}')"


class _RegexSubject(FunctionElement):
    """A string to match a regular expression against (PostgreSQL refuses nondeterministic collations there)."""

    name = "hivecat_regex_subject"
    inherit_cache = True
    type = sa.String()


@compiles(_RegexSubject)
def _regex_subject_default(element, compiler, **kw):
    (value,) = element.clauses
    return compiler.process(value, **kw)


@compiles(_RegexSubject, "postgresql")
def _regex_subject_postgresql(element, compiler, **kw):
    (value,) = element.clauses
    return f'({compiler.process(value, **kw)}) COLLATE "C"'


class _ExactString(sa.types.TypeDecorator):
    """A string parameter compared exactly: each value is bound as exact_text(value), also in an expanding
    IN, where the values are rendered into the statement when it runs instead of being compiled one by one
    (compiling 10,000 wrapped values took SQLAlchemy seconds per statement)."""

    impl = sa.String
    cache_ok = True

    def bind_expression(self, bindvalue: ColumnElement) -> ColumnElement[str]:
        return exact_text(bindvalue)


def _sql_like_pattern(pattern: str) -> str:
    out = []
    for part in like_parts(pattern):
        if part is LIKE_ANY:
            out.append("%")
        elif part is LIKE_ONE:
            out.append("_")
        else:
            ch = str(part)
            out.append(_SQL_ESCAPE + ch if ch in ("%", "_", _SQL_ESCAPE) else ch)
    return "".join(out)


def _sql_compare(left: ColumnElement, op: str, right: ColumnElement) -> ColumnElement[bool]:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right
    if op == "<=":
        return left <= right
    if op == ">":
        return left > right
    return left >= right


def _sql_number(value: ColumnElement[str]) -> ColumnElement:
    # Only well-formed integers are cast (NULL otherwise, like HMS): MySQL would read 'x' as 0 and
    # PostgreSQL would fail the whole statement. The second test rules out any newline for '$' to hide
    # behind, whatever regex flags the server runs with.
    subject = _RegexSubject(value)
    well_formed = sa.and_(subject.regexp_match(rf"^-?[0-9]{{1,{MAX_DIGITS}}}$"),
                          sa.not_(subject.regexp_match("[^-0-9]")))
    return sa.case((well_formed, sa.cast(value, _NUMBER_TYPE)), else_=sa.null())


def to_sql(expr: Expr, value_of: Callable[[str], ColumnElement[str]]) -> ColumnElement[bool]:
    """The filter as an SQL condition; value_of(key) is the key's stored string value for the current row."""
    if isinstance(expr, And):
        return sa.and_(*(to_sql(operand, value_of) for operand in expr.operands))
    if isinstance(expr, Or):
        return sa.or_(*(to_sql(operand, value_of) for operand in expr.operands))
    if isinstance(expr, Not):
        return sa.not_(to_sql(expr.operand, value_of))
    stored = value_of(expr.key)
    if isinstance(expr, Like):
        return _ExactLike(stored, sa.literal(_sql_like_pattern(expr.pattern)))
    if expr.kind is KeyKind.INTEGRAL:
        value = _sql_number(stored)

        def literal(v: Literal) -> ColumnElement:
            return sa.literal(v, _NUMBER_TYPE)
    else:
        value = exact_text(stored)

        def literal(v: Literal) -> ColumnElement:
            return exact_text(sa.literal(v, sa.String()))
    if isinstance(expr, Compare):
        return _sql_compare(value, expr.op, literal(expr.value))
    if isinstance(expr, Between):
        return sa.and_(value >= literal(expr.low), value <= literal(expr.high))
    # One IN, not an OR of equalities: the stored value (a column, or a subquery when value_of makes one)
    # and, for integral keys, its CASE with two regular expressions appear once, not once per value.
    values_type = _NUMBER_TYPE if expr.kind is KeyKind.INTEGRAL else _ExactString()
    return value.in_(sa.bindparam(None, list(expr.values), type_=values_type, expanding=True))
