"""HMS partition filters (the get_partitions_by_filter subset): parse once, then evaluate in Python, render
for AWS Glue, or translate to SQL over the metastore's own tables.

Grammar (keywords are case-insensitive; NOT binds tighter than AND, AND tighter than OR):

    filter    := or
    or        := and (OR and)*
    and       := not (AND not)*
    not       := NOT not | '(' or ')' | predicate
    predicate := key op literal | literal op key                      op: = != <> < <= > >=
               | key [NOT] LIKE string | key [NOT] BETWEEN literal AND literal
               | key [NOT] IN '(' literal (',' literal)* ')'

Keys are the table's partition keys, compared lower-cased; `back quotes` allow any name (`` is a quote).
Literals are integers (-12) or strings in single or double quotes, where a backslash escapes only a quote
or a backslash (anything else is refused, so nothing is silently reinterpreted).

Decisions:
- LIKE uses SQL wildcards, not HMS's JDO regex: % is any run of characters, _ is one character, and a
  backslash in the pattern makes the next character literal. Written inside a quoted string the backslash
  itself must be escaped: ds LIKE '100\\%' matches the value "100%". LIKE only on string keys.
- String, varchar and char keys compare as strings, exactly, in code point order. Integral keys (tinyint,
  smallint, int, integer, bigint) compare numerically; a stored value that is not an integer (notably
  __HIVE_DEFAULT_PARTITION__) is unknown, as in HMS's own SQL (a CASE yielding NULL): it satisfies neither a
  comparison nor its NOT. Logic is SQL's three-valued logic; evaluate() answers True only for true.
- Values must fit the key: strings for string keys (a bare 5 is refused: '5' or 5 would be a guess),
  integers for integral keys ('5' is accepted as 5), 'YYYY-MM-DD' for date keys. Date keys compare as
  strings, which orders correctly for the canonical form HMS stores. Other types (timestamp, decimal,
  boolean, ...) allow only =, !=, <> and IN, with a quoted value compared exactly as stored: their string
  order is not their order, so ranges are refused rather than answered wrongly.
- Integers have at most 20 digits; a stored integral value with more is treated as not an integer.
"""

from __future__ import annotations

import datetime
import enum
import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import NoReturn

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from hivecat.locations.prefix import exact_text


class FilterError(ValueError):
    """A filter that cannot be used; `position` is the 0-based offset in the filter text, when known."""

    def __init__(self, message: str, position: int | None = None):
        self.position = position
        super().__init__(message if position is None else f"{message} (at offset {position})")


class KeyKind(str, enum.Enum):
    STRING = "string"
    INTEGRAL = "integral"
    DATE = "date"
    OTHER = "other"


def key_kind(hive_type: str) -> KeyKind:
    """How values of a partition key of this Hive type compare."""
    base = hive_type.strip().lower().split("(", 1)[0].strip()
    if base in ("string", "varchar", "char"):
        return KeyKind.STRING
    if base in ("tinyint", "smallint", "int", "integer", "bigint"):
        return KeyKind.INTEGRAL
    if base == "date":
        return KeyKind.DATE
    return KeyKind.OTHER


Literal = str | int
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
_FLIPPED = {"=": "=", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_MAX_DIGITS = 20
_INTEGER = re.compile(rf"-?[0-9]{{1,{_MAX_DIGITS}}}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MAX_DEPTH = 100  # nesting (parentheses, NOT): far beyond real filters, well below Python's recursion limit


# --- the tree ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Compare:
    key: str          # lower case
    kind: KeyKind
    op: str           # one of OPERATORS (<> is read as !=)
    value: Literal    # int for integral keys, str otherwise


@dataclass(frozen=True)
class Like:
    key: str
    pattern: str      # as written (after string-literal unescaping)


@dataclass(frozen=True)
class Between:
    key: str
    kind: KeyKind
    low: Literal
    high: Literal


@dataclass(frozen=True)
class In:
    key: str
    kind: KeyKind
    values: tuple[Literal, ...]


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class And:
    operands: tuple[Expr, ...]   # a chain stays flat: long generated filters must not nest deeply


@dataclass(frozen=True)
class Or:
    operands: tuple[Expr, ...]


Expr = Compare | Like | Between | In | Not | And | Or


# --- tokens -----------------------------------------------------------------------------------------

_KEYWORDS = frozenset({"and", "or", "not", "like", "between", "in"})
_TWO_CHAR_OPS = ("<=", ">=", "<>", "!=")
_IDENT_START = re.compile(r"[A-Za-z_]")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NUMBER = re.compile(r"-?[0-9]+")


@dataclass(frozen=True)
class _Token:
    kind: str     # key, keyword, string, int, op, punct, end
    value: str | int
    pos: int


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "(),":
            out.append(_Token("punct", ch, i))
            i += 1
        elif text.startswith(_TWO_CHAR_OPS, i):
            op = text[i:i + 2]
            out.append(_Token("op", "!=" if op == "<>" else op, i))
            i += 2
        elif ch in "=<>":
            out.append(_Token("op", ch, i))
            i += 1
        elif ch in "'\"":
            start, (value, i) = i, _string(text, i)
            out.append(_Token("string", value, start))
        elif ch == "`":
            start, name, i = i, *_backquoted(text, i)
            out.append(_Token("key", name, start))
        elif ch.isdigit() or (ch == "-" and text[i + 1:i + 2].isdigit()):
            number = _NUMBER.match(text, i)
            end = number.end()
            if end < len(text) and (text[end].isalnum() or text[end] in "_."):
                raise FilterError("only integer numbers are supported here", i)
            out.append(_Token("int", int(number.group()), i))
            i = end
        elif _IDENT_START.match(ch):
            word = _IDENT.match(text, i).group()
            kind = "keyword" if word.lower() in _KEYWORDS else "key"
            out.append(_Token(kind, word.lower() if kind == "keyword" else word, i))
            i += len(word)
        else:
            raise FilterError(f"unexpected character {ch!r}", i)
    out.append(_Token("end", "", len(text)))
    return out


def _string(text: str, start: int) -> tuple[str, int]:
    """The quoted string at `start` (value, index after its closing quote)."""
    quote, chars, i = text[start], [], start + 1
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(chars), i + 1
        if ch == "\\":
            escaped = text[i + 1:i + 2]
            if escaped not in ("'", '"', "\\"):
                raise FilterError(f"unsupported escape \\{escaped} in a string: a backslash may only escape "
                                  "a quote or a backslash (a LIKE escape is written \\\\)", i)
            chars.append(escaped)
            i += 2
        else:
            chars.append(ch)
            i += 1
    raise FilterError("unterminated string", start)


def _backquoted(text: str, start: int) -> tuple[str, int]:
    chars, i = [], start + 1
    while i < len(text):
        if text[i] == "`":
            if text[i + 1:i + 2] == "`":
                chars.append("`")
                i += 2
                continue
            if not chars:
                raise FilterError("empty `` key name", start)
            return "".join(chars), i + 1
        chars.append(text[i])
        i += 1
    raise FilterError("unterminated `key name`", start)


# --- parser -----------------------------------------------------------------------------------------

def parse_filter(text: str, keys: Mapping[str, str]) -> Expr:
    """Parse `text` against the table's partition keys (name -> Hive type); raises FilterError."""
    if not isinstance(text, str) or not text.strip():
        raise FilterError("the partition filter is empty")
    kinds: dict[str, KeyKind] = {}
    for name, hive_type in keys.items():
        if name.lower() in kinds:
            raise ValueError(f"partition keys {name!r} and another differ only in case")
        kinds[name.lower()] = key_kind(hive_type)
    if not kinds:
        raise FilterError("the table has no partition keys to filter on")
    return _Parser(text, kinds, keys).parse()


class _Parser:
    def __init__(self, text: str, kinds: dict[str, KeyKind], types: Mapping[str, str]):
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0
        self.kinds = kinds
        self.types = {name.lower(): hive_type for name, hive_type in types.items()}

    # helpers
    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, kind: str, value: str | None = None) -> bool:
        token = self.peek()
        return token.kind == kind and (value is None or token.value == value)

    def expect(self, kind: str, value: str, what: str) -> _Token:
        if not self.at(kind, value):
            self.fail(f"expected {what}")
        return self.take()

    def fail(self, message: str) -> NoReturn:
        token = self.peek()
        found = "the end of the filter" if token.kind == "end" else repr(str(token.value))
        raise FilterError(f"{message}, found {found}", token.pos)

    def nest(self, position: int) -> None:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise FilterError(f"the filter nests deeper than {_MAX_DEPTH} levels", position)

    # grammar
    def parse(self) -> Expr:
        expr = self.or_()
        if not self.at("end"):
            self.fail("expected AND, OR or the end of the filter")
        return expr

    def or_(self) -> Expr:
        operands = [self.and_()]
        while self.at("keyword", "or"):
            self.take()
            operands.append(self.and_())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def and_(self) -> Expr:
        operands = [self.not_()]
        while self.at("keyword", "and"):
            self.take()
            operands.append(self.not_())
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def not_(self) -> Expr:
        token = self.peek()
        if self.at("keyword", "not"):
            self.take()
            self.nest(token.pos)
            expr = Not(self.not_())
            self.depth -= 1
            return expr
        if self.at("punct", "("):
            self.take()
            self.nest(token.pos)
            expr = self.or_()
            self.expect("punct", ")", "')'")
            self.depth -= 1
            return expr
        return self.predicate()

    def predicate(self) -> Expr:
        token = self.peek()
        if token.kind in ("string", "int"):
            value = self.take()
            if not self.at("op"):
                self.fail("expected a comparison operator after a value")
            op = str(self.take().value)
            key, kind = self.key()
            return self.compare(key, kind, _FLIPPED[op], value)
        if token.kind != "key":
            self.fail("expected a partition key, a value or '('")
        key, kind = self.key()
        if self.at("op"):
            op = str(self.take().value)
            return self.compare(key, kind, op, self.literal())
        negated = self.at("keyword", "not")
        if negated:
            self.take()
        if self.at("keyword", "like"):
            expr: Expr = self.like(key, kind, token.pos)
        elif self.at("keyword", "between"):
            expr = self.between(key, kind, token.pos)
        elif self.at("keyword", "in"):
            expr = self.in_(key, kind, token.pos)
        else:
            self.fail("expected LIKE, BETWEEN or IN" if negated else
                      "expected a comparison operator, LIKE, BETWEEN or IN")
        return Not(expr) if negated else expr

    def key(self) -> tuple[str, KeyKind]:
        if not self.at("key"):
            self.fail("expected a partition key")
        token = self.take()
        name = str(token.value).lower()
        if name not in self.kinds:
            raise FilterError(f"unknown partition key {token.value!r}; the table's partition keys are: "
                              f"{', '.join(self.kinds)}", token.pos)
        return name, self.kinds[name]

    def literal(self) -> _Token:
        if not (self.at("string") or self.at("int")):
            self.fail("expected a value (a quoted string or an integer)")
        return self.take()

    def value(self, key: str, kind: KeyKind, token: _Token) -> Literal:
        """The literal as the key's kind compares it; refuses one that does not fit."""
        hive_type = self.types[key]
        if kind is KeyKind.INTEGRAL:
            text = str(token.value)
            if not _INTEGER.fullmatch(text):
                raise FilterError(f"partition key {key!r} has type {hive_type}: {text!r} is not an integer "
                                  f"of at most {_MAX_DIGITS} digits", token.pos)
            return int(text)
        if token.kind == "int":
            raise FilterError(f"partition key {key!r} has type {hive_type}: quote the value ('{token.value}')",
                              token.pos)
        if kind is KeyKind.DATE and not _is_date(str(token.value)):
            raise FilterError(f"partition key {key!r} has type {hive_type}: {token.value!r} is not a date written "
                              "'YYYY-MM-DD'", token.pos)
        return str(token.value)

    def ordered(self, key: str, kind: KeyKind, position: int) -> None:
        if kind is KeyKind.OTHER:
            raise FilterError(f"partition key {key!r} has type {self.types[key]}: only =, !=, <> and IN are "
                              "supported on it (its values do not sort as strings)", position)

    def compare(self, key: str, kind: KeyKind, op: str, token: _Token) -> Compare:
        if op not in ("=", "!="):
            self.ordered(key, kind, token.pos)
        return Compare(key, kind, op, self.value(key, kind, token))

    def like(self, key: str, kind: KeyKind, position: int) -> Like:
        self.take()
        if kind is not KeyKind.STRING:
            raise FilterError(f"LIKE needs a string partition key; {key!r} has type {self.types[key]}", position)
        if not self.at("string"):
            self.fail("expected a quoted LIKE pattern")
        token = self.take()
        try:
            _like_parts(str(token.value))
        except ValueError as exc:
            raise FilterError(str(exc), token.pos) from None
        return Like(key, str(token.value))

    def between(self, key: str, kind: KeyKind, position: int) -> Between:
        self.take()
        self.ordered(key, kind, position)
        low = self.value(key, kind, self.literal())
        self.expect("keyword", "and", "AND between the BETWEEN bounds")
        high = self.value(key, kind, self.literal())
        return Between(key, kind, low, high)

    def in_(self, key: str, kind: KeyKind, position: int) -> In:
        self.take()
        self.expect("punct", "(", "'(' after IN")
        values = [self.value(key, kind, self.literal())]
        while self.at("punct", ","):
            self.take()
            values.append(self.value(key, kind, self.literal()))
        self.expect("punct", ")", "',' or ')' in the IN list")
        return In(key, kind, tuple(values))


def _is_date(text: str) -> bool:
    if not _DATE.fullmatch(text):
        return False
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


# --- LIKE patterns ----------------------------------------------------------------------------------

_ANY = object()   # %
_ONE = object()   # _


@functools.lru_cache(maxsize=256)
def _like_parts(pattern: str) -> tuple[object, ...]:
    """The pattern as wildcards (_ANY, _ONE) and literal characters; ValueError for a dangling backslash."""
    parts: list[object] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 == len(pattern):
                raise ValueError("a LIKE pattern cannot end with a single backslash (write \\\\\\\\ to match one)")
            parts.append(pattern[i + 1])
            i += 2
            continue
        parts.append(_ANY if ch == "%" else _ONE if ch == "_" else ch)
        i += 1
    return tuple(parts)


@functools.lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if p is _ANY else "." if p is _ONE else re.escape(str(p)) for p in _like_parts(pattern))
    return re.compile(body, re.DOTALL)   # SQL's % and _ match newlines too


# --- evaluate ---------------------------------------------------------------------------------------

def _as_int(value: str) -> int | None:
    return int(value) if _INTEGER.fullmatch(value) else None


def _compare(left: Literal, op: str, right: Literal) -> bool:
    if op == "=":
        return left == right
    if op == "!=":
        return left != right
    if op == "<":
        return left < right  # type: ignore[operator]
    if op == "<=":
        return left <= right  # type: ignore[operator]
    if op == ">":
        return left > right  # type: ignore[operator]
    return left >= right  # type: ignore[operator]


def _truth(expr: Expr, values: Mapping[str, str | None]) -> bool | None:
    """SQL three-valued truth: None is unknown."""
    if isinstance(expr, (And, Or)):
        # AND is false if any operand is, OR true if any is; otherwise any unknown makes it unknown.
        decisive = isinstance(expr, Or)
        results = [_truth(operand, values) for operand in expr.operands]
        if decisive in results:
            return decisive
        return None if None in results else not decisive
    if isinstance(expr, Not):
        inner = _truth(expr.operand, values)
        return None if inner is None else not inner
    if expr.key not in values:
        raise KeyError(f"no value for partition key {expr.key!r}")
    raw = values[expr.key]
    if raw is None:
        return None
    if isinstance(expr, Like):
        return _like_regex(expr.pattern).fullmatch(raw) is not None
    value: Literal | None = _as_int(raw) if expr.kind is KeyKind.INTEGRAL else raw
    if value is None:
        return None
    if isinstance(expr, Compare):
        return _compare(value, expr.op, expr.value)
    if isinstance(expr, Between):
        return _compare(value, ">=", expr.low) and _compare(value, "<=", expr.high)
    return any(value == candidate for candidate in expr.values)


def evaluate(expr: Expr, values: Mapping[str, str]) -> bool:
    """Whether a partition with these values (key -> value as HMS stores it) is selected."""
    return _truth(expr, {key.lower(): value for key, value in values.items()}) is True


# --- AWS Glue ---------------------------------------------------------------------------------------

_GLUE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
# Words Glue's SQL parser would read as syntax; Glue also rejects a key named "key" (a known Glue quirk).
_GLUE_RESERVED = frozenset({"and", "or", "not", "in", "like", "between", "is", "null", "true", "false", "key"})


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
    that are not plain identifiers or are reserved): callers fetch unfiltered and use evaluate() instead.
    """
    if isinstance(expr, (And, Or)):
        word = " AND " if isinstance(expr, And) else " OR "
        return word.join(f"({to_glue_expression(operand)})" for operand in expr.operands)
    if isinstance(expr, Not):
        return f"NOT ({to_glue_expression(expr.operand)})"
    key = _glue_key(expr.key)
    if isinstance(expr, Compare):
        return f"{key} {'<>' if expr.op == '!=' else expr.op} {_glue_literal(expr.value)}"
    if isinstance(expr, Between):
        return f"{key} BETWEEN {_glue_literal(expr.low)} AND {_glue_literal(expr.high)}"
    if isinstance(expr, In):
        return f"{key} IN ({', '.join(_glue_literal(value) for value in expr.values)})"
    # Glue documents LIKE's wildcards but no escape: a pattern that needs a literal %, _ or \ is refused.
    parts = _like_parts(expr.pattern)
    if any(part in ("%", "_", "\\") for part in parts):
        raise FilterError(f"the LIKE pattern {expr.pattern!r} needs an escape, which Glue does not document")
    text = "".join("%" if p is _ANY else "_" if p is _ONE else str(p) for p in parts)
    return f"{key} LIKE {_glue_literal(text)}"


# --- SQL --------------------------------------------------------------------------------------------

_SQL_ESCAPE = "!"   # our own escape character: a backslash would depend on MySQL's NO_BACKSLASH_ESCAPES
_NUMBER_TYPE = sa.Numeric(_MAX_DIGITS, 0)   # every integer of up to 20 digits, bigint's range included


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


def _sql_like_pattern(pattern: str) -> str:
    out = []
    for part in _like_parts(pattern):
        if part is _ANY:
            out.append("%")
        elif part is _ONE:
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
    well_formed = sa.and_(subject.regexp_match(rf"^-?[0-9]{{1,{_MAX_DIGITS}}}$"),
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
    return sa.or_(*(value == literal(v) for v in expr.values))
