"""HMS partition filters (the get_partitions_by_filter subset): parse once, then evaluate in Python here,
render for AWS Glue (filter_glue.py), or translate to SQL over the metastore's own tables (filter_sql.py).

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
- Size is bounded (a filter may come from a custom resource, and becomes one statement on the metastore's
  database): at most MAX_IN_VALUES values in an IN list, MAX_PREDICATES predicates (comparisons, LIKE,
  BETWEEN, IN) and MAX_VALUES values in all, MAX_FILTER_CHARS characters. Past a limit the filter is refused
  with a FilterError naming it, by parse_filter and check_filter_syntax alike, so before any connection.
"""

from __future__ import annotations

import datetime
import enum
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NoReturn


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
MAX_DIGITS = 20
_INTEGER = re.compile(rf"-?[0-9]{{1,{MAX_DIGITS}}}")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_MAX_DEPTH = 100  # nesting (parentheses, NOT): far beyond real filters, well below Python's recursion limit
# Filters come from users and custom resources and become one SQL statement on the metastore's database:
# bounded, so no filter can make that statement (or the server parsing it) arbitrarily large.
MAX_IN_VALUES = 1000   # values in one IN list
MAX_PREDICATES = 200   # comparisons, LIKEs, BETWEENs and IN lists in one filter
MAX_VALUES = 10_000    # literal values in one filter (IN values and bounds), all lists together
MAX_FILTER_CHARS = 1_000_000  # checked before tokenizing, which holds every token of the text at once


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

def _check_text(text: str) -> None:
    if not isinstance(text, str) or not text.strip():
        raise FilterError("the partition filter is empty")
    if len(text) > MAX_FILTER_CHARS:
        raise FilterError(f"the partition filter is longer than the limit of {MAX_FILTER_CHARS} characters")


def parse_filter(text: str, keys: Mapping[str, str]) -> Expr:
    """Parse `text` against the table's partition keys (name -> Hive type); raises FilterError."""
    _check_text(text)
    kinds: dict[str, KeyKind] = {}
    for name, hive_type in keys.items():
        if name.lower() in kinds:
            raise ValueError(f"partition keys {name!r} and another differ only in case")
        kinds[name.lower()] = key_kind(hive_type)
    if not kinds:
        raise FilterError("the table has no partition keys to filter on")
    return _Parser(text, kinds, keys).parse()



def check_filter_syntax(text: str) -> None:
    """Raise FilterError when `text` is not a filter whatever the table's keys are: the part of
    parse_filter that needs no catalog, so a typo is caught before connecting to one."""
    _check_text(text)
    _SyntaxParser(text, {}, {}).parse()


class _Parser:
    def __init__(self, text: str, kinds: dict[str, KeyKind], types: Mapping[str, str]):
        self.tokens = _tokens(text)
        self.i = 0
        self.depth = 0
        self.predicates = 0
        self.values = 0
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

    def count_predicate(self, position: int) -> None:
        self.predicates += 1
        if self.predicates > MAX_PREDICATES:
            raise FilterError(f"the filter has more predicates than the limit of {MAX_PREDICATES} (comparisons, "
                              "LIKE, BETWEEN and IN each count one): write equalities on one key as an IN list",
                              position)

    def counted(self, token: _Token) -> _Token:
        """A literal of the filter, counted against MAX_VALUES."""
        self.values += 1
        if self.values > MAX_VALUES:
            raise FilterError(f"the filter has more values than the limit of {MAX_VALUES} in all", token.pos)
        return token

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
        self.count_predicate(token.pos)
        if token.kind in ("string", "int"):
            value = self.counted(self.take())
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
            return self.compare(key, kind, op, self.counted(self.literal()))
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
                                  f"of at most {MAX_DIGITS} digits", token.pos)
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
            like_parts(str(token.value))
        except ValueError as exc:
            raise FilterError(str(exc), token.pos) from None
        return Like(key, str(token.value))

    def between(self, key: str, kind: KeyKind, position: int) -> Between:
        self.take()
        self.ordered(key, kind, position)
        low = self.value(key, kind, self.counted(self.literal()))
        self.expect("keyword", "and", "AND between the BETWEEN bounds")
        high = self.value(key, kind, self.counted(self.literal()))
        return Between(key, kind, low, high)

    def in_(self, key: str, kind: KeyKind, position: int) -> In:
        self.take()
        self.expect("punct", "(", "'(' after IN")
        values = [self.value(key, kind, self.counted(self.literal()))]
        while self.at("punct", ","):
            self.take()
            if len(values) == MAX_IN_VALUES:
                raise FilterError(f"the IN list has more values than the limit of {MAX_IN_VALUES}: split it "
                                  "into several IN lists joined by OR, or select a range", self.peek().pos)
            values.append(self.value(key, kind, self.counted(self.literal())))
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

LIKE_ANY = object()   # %
LIKE_ONE = object()   # _


@functools.lru_cache(maxsize=256)
def like_parts(pattern: str) -> tuple[object, ...]:
    """The pattern as wildcards (LIKE_ANY, LIKE_ONE) and literal characters; ValueError for a dangling backslash."""
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
        parts.append(LIKE_ANY if ch == "%" else LIKE_ONE if ch == "_" else ch)
        i += 1
    return tuple(parts)


@functools.lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    body = "".join(".*" if p is LIKE_ANY else "." if p is LIKE_ONE else re.escape(str(p)) for p in like_parts(pattern))
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


class _SyntaxParser(_Parser):
    """Accepts any key name and literal: checks the grammar only (types need the table's keys)."""

    def key(self) -> tuple[str, KeyKind]:
        if not self.at("key"):
            self.fail("expected a partition key")
        return str(self.take().value).lower(), KeyKind.STRING

    def value(self, key: str, kind: KeyKind, token: _Token) -> Literal:
        return str(token.value)

    def ordered(self, key: str, kind: KeyKind, position: int) -> None:
        return None
