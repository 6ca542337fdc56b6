"""Reasons are an API (users match on them in alerts and scripts): every condition reason, Event reason and
`hivecat route` reason is a constant of hivecat.reasons, spelled nowhere else in the operator's code, and
described once: in docs/reasons.md, or, for the policy and ownership reasons, in docs/security.md (which
docs/reasons.md links to).

Two scans of the operator's code keep it so: no string literal equals a reason (a re-spelt reason), and no
string literal reaches a place that takes a reason (a new reason added as a literal). The places are found,
not listed: every parameter or dataclass field of hivecat named `reason`, `reason=` keywords, assignments to
`reason`, Event tuples (type, reason, message) and the drift refusal mapping."""

from __future__ import annotations

import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import hivecat
from hivecat import reasons

PACKAGE = Path(hivecat.__file__).resolve().parent
REPO = PACKAGE.parents[1]
REASONS_DOC = REPO / "docs" / "reasons.md"
SECURITY_DOC = REPO / "docs" / "security.md"

# Strings that are reasons' values but mean something else where they are written as literals (never in a
# place that takes a reason: test_no_literal_takes_the_place_of_a_reason still covers them there).
ALSO_TYPE_AND_PHASE = {
    "Ready": "the condition type Ready, the phase Ready and the schema decision workloads.schema.Ready",
    "Drifted": "the condition type Drifted and the phase Drifted of a ClusterStorage",
}
# Callables of hivecat with a `reason` that is not a condition reason.
OTHER_REASONS = {
    "Refusal": "the location engine's refusal reasons (iceberg, too-long, ...; status.drift.refusals[].reason), "
               "mapped to condition reasons by reconcile/drift.py REASONS",
    "unsafe_table_refusal": "the location engine's refusal reason iceberg or acid",
    "InvalidLocation": "a location engine refusal reason (invalid-uri, overlap, scheme-change)",
    "UnitCheck": "words: why a unit's copy is not in sync (a condition message shows them)",
    "CopyCheck": "words: why a recorded copy is not whole, judged from itself (replication/verify.py)",
    "UnitResult": "words: why the copy engine failed a unit (the run summary shows them)",
    "_fail": "the copy engine failing a unit: UnitResult's words",
}
# Where a name says `reason` without a position to go by (an assignment, a default), only what looks like a
# reason counts: the copy engine's reasons are words, the location engine's kebab-case.
REASON_SHAPE = re.compile(r"[A-Z][A-Za-z0-9]*")
EVENT_TYPES = frozenset({"Normal", "Warning"})


def constants() -> dict[str, str]:
    return {name: value for name, value in vars(reasons).items() if name.isupper() and isinstance(value, str)}


def sources() -> Iterator[tuple[str, ast.Module]]:
    """(path below hivecat/, syntax tree) of every module but hivecat.reasons itself."""
    for path in sorted(PACKAGE.rglob("*.py")):
        if path != PACKAGE / "reasons.py":
            yield str(path.relative_to(PACKAGE)), ast.parse(path.read_text())


# --- the constants ------------------------------------------------------------------------------------------

def test_each_reason_is_one_camel_case_constant_named_after_its_value() -> None:
    found = constants()
    twice = {value: n for value, n in Counter(found.values()).items() if n > 1}
    assert not twice, f"one constant per reason, no aliases: {twice}"
    for name, value in found.items():
        assert re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*", value), f"{name} = {value!r} is not CamelCase"
        assert name == re.sub(r"(?<!^)(?=[A-Z])", "_", value).upper(), f"{name} = {value!r}: name it after its value"


def test_the_security_reasons_are_constants() -> None:
    assert set(reasons.POLICY_REASONS) <= set(reasons.SECURITY_REASONS) <= set(constants().values())


# --- the documentation ----------------------------------------------------------------------------------------

def documented_rows() -> list[str]:
    """The reasons docs/reasons.md describes: the first cell of each table row, `Reason`."""
    return re.findall(r"^\| `([^`]+)` \|", REASONS_DOC.read_text(), flags=re.MULTILINE)


def security_section() -> str:
    text = SECURITY_DOC.read_text()
    return text.split("\n## Condition reasons\n", 1)[1].split("\n## ", 1)[0]


def test_every_reason_is_described_in_one_place() -> None:
    values = set(constants().values())
    rows = documented_rows()
    assert rows, "docs/reasons.md has no table rows"
    twice = sorted(value for value, n in Counter(rows).items() if n > 1)
    assert not twice, f"described twice in docs/reasons.md: {twice}"
    unknown = sorted(set(rows) - values)
    assert not unknown, f"docs/reasons.md describes reasons the operator does not have: {unknown}"
    security = set(reasons.SECURITY_REASONS)
    moved = sorted(set(rows) & security)
    assert not moved, f"described in docs/security.md, so not in docs/reasons.md's tables: {moved}"
    missing = sorted(values - security - set(rows))
    assert not missing, f"not in docs/reasons.md: {missing}"


def test_the_security_reasons_are_in_docs_security_and_linked() -> None:
    section = set(re.findall(r"`([A-Za-z]+)`", security_section()))
    assert set(reasons.SECURITY_REASONS) <= section, sorted(set(reasons.SECURITY_REASONS) - section)
    unknown = sorted(name for name in section if name not in constants().values())
    assert not unknown, f"docs/security.md's condition reasons that are not constants: {unknown}"
    assert "](security.md#condition-reasons)" in REASONS_DOC.read_text()
    assert "](reasons.md)" in (REPO / "docs" / "README.md").read_text()


# --- the code: no reason spelt as a literal ---------------------------------------------------------------------

def _exported(tree: ast.Module) -> set[int]:
    """ids of the strings in `__all__`: names of Python objects (hivecat.k8s exports the class NameTaken)."""
    return {id(element) for node in tree.body if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple)) for element in node.value.elts}


def spelt_reasons(where: str, tree: ast.Module, values: set[str]) -> list[str]:
    exported = _exported(tree)
    return [f"{where}:{node.lineno}: {node.value!r}" for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in values
            and node.value not in ALSO_TYPE_AND_PHASE and id(node) not in exported]


def test_no_reason_is_spelt_out_in_the_code() -> None:
    values = set(constants().values())
    found = [hit for where, tree in sources() for hit in spelt_reasons(where, tree, values)]
    assert not found, "use the constant of hivecat.reasons:\n" + "\n".join(found)


# --- the code: nothing takes a reason from a literal -------------------------------------------------------------

def _literals(node: ast.AST | None, shaped: bool = False) -> Iterator[ast.AST]:
    """The strings written out in an expression that yields a reason (either side of `a if c else b`, `a or b`).
    shaped: only those that look like a reason."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value:
        if not shaped or REASON_SHAPE.fullmatch(node.value):
            yield node
    elif isinstance(node, ast.JoinedStr):
        if not shaped:
            yield node
    elif isinstance(node, ast.IfExp):
        yield from _literals(node.body, shaped)
        yield from _literals(node.orelse, shaped)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from _literals(value, shaped)


def _is_dataclass(node: ast.ClassDef) -> bool:
    return any("dataclass" in ast.unparse(d) for d in node.decorator_list)


def reason_slots(trees: list[ast.Module]) -> dict[str, set[int]]:
    """Callable name → the positions of its `reason` argument: functions and methods with a parameter `reason`
    (a class by its __init__), dataclasses with a field `reason`, and exceptions inheriting such an __init__."""
    slots: dict[str, set[int]] = {}
    bases: dict[str, list[str]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
                names = names[1:] if names[:1] in (["self"], ["cls"]) else names
                if "reason" in names and node.name != "__init__":  # a class's: under the class's name
                    slots.setdefault(node.name, set()).add(names.index("reason"))
            elif isinstance(node, ast.ClassDef):
                bases[node.name] = [ast.unparse(b).split(".")[-1] for b in node.bases]
                init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
                if init is not None:
                    names = [a.arg for a in init.args.args][1:]
                    if "reason" in names:
                        slots.setdefault(node.name, set()).add(names.index("reason"))
                elif _is_dataclass(node):
                    fields = [s.target.id for s in node.body if isinstance(s, ast.AnnAssign)
                              and isinstance(s.target, ast.Name) and "ClassVar" not in ast.unparse(s.annotation)]
                    if "reason" in fields:
                        slots.setdefault(node.name, set()).add(fields.index("reason"))
    inherited = True
    while inherited:  # SwitchRefused(PlanRefused), SchemaStateUnavailable(CatalogUnavailable)
        inherited = False
        for name, parents in bases.items():
            for parent in parents:
                if parent in slots and not slots[parent] <= slots.get(name, set()):
                    slots.setdefault(name, set()).update(slots[parent])
                    inherited = True
    for name in OTHER_REASONS:
        slots.pop(name, None)
    return slots


def _callee(call: ast.Call) -> str | None:
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)


def _assigned(target: ast.AST, value: ast.AST) -> Iterator[ast.AST]:
    """What is assigned to a name `reason`, also in `word, reason = (a, b) if c else (d, e)`."""
    if isinstance(target, ast.Name):
        if target.id == "reason":
            yield value
    elif isinstance(target, ast.Tuple):
        for i, element in enumerate(target.elts):
            for branch in (value.body, value.orelse) if isinstance(value, ast.IfExp) else (value,):
                if isinstance(branch, ast.Tuple) and len(branch.elts) == len(target.elts):
                    yield from _assigned(element, branch.elts[i])


def reason_literals(where: str, tree: ast.Module, slots: dict[str, set[int]]) -> list[str]:
    taken: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            callee = _callee(node)
            for i in slots.get(callee or "", ()):
                if i < len(node.args) and not any(isinstance(a, ast.Starred) for a in node.args[:i + 1]):
                    taken.extend(_literals(node.args[i]))
            if callee not in OTHER_REASONS:
                taken.extend(lit for kw in node.keywords if kw.arg == "reason" for lit in _literals(kw.value))
        elif isinstance(node, ast.Tuple) and len(node.elts) == 3:  # an Event: (type, reason, message)
            kinds = [getattr(lit, "value", None) for lit in _literals(node.elts[0])]
            if kinds and set(kinds) <= EVENT_TYPES:
                taken.extend(_literals(node.elts[1]))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for value in _assigned(target, node.value) if node.value is not None else ():
                    taken.extend(_literals(value, shaped=True))
                if isinstance(target, ast.Name) and target.id.endswith("REASONS") and isinstance(node.value, ast.Dict):
                    taken.extend(lit for value in node.value.values for lit in _literals(value))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            params = [*node.args.posonlyargs, *node.args.args]
            defaults = dict(zip(params[len(params) - len(node.args.defaults):], node.args.defaults))
            defaults.update(zip(node.args.kwonlyargs, node.args.kw_defaults))
            taken.extend(lit for param, default in defaults.items() if param.arg == "reason"
                         for lit in _literals(default, shaped=True))
    return [f"{where}:{lit.lineno}: {ast.unparse(lit)}" for lit in taken]


def test_the_places_that_take_a_reason_are_found() -> None:
    slots = reason_slots([tree for _, tree in sources()])
    expected = {"Condition": {2}, "of": {2}, "stop": {0}, "_stop": {0}, "_not_ready": {1}, "SpecInvalid": {0},
                "ProbeResult": {1}, "CatalogUnavailable": {0}, "SchemaStateUnavailable": {0}, "Violation": {0},
                "SecretUnavailable": {0}, "PlanRefused": {0}, "SwitchRefused": {0}, "Rejection": {0}, "Refuse": {0},
                "Route": {1}, "Event": {1}, "parse_duration": {2}, "_uri": {2}, "_event": {1}, "record_error": {1},
                "record_policy_violation": {2}}
    assert {name: slots.get(name) for name in expected} == expected


def test_no_literal_takes_the_place_of_a_reason() -> None:
    trees = list(sources())
    slots = reason_slots([tree for _, tree in trees])
    found = [hit for where, tree in trees for hit in reason_literals(where, tree, slots)]
    assert not found, "a reason is a constant of hivecat.reasons (add it there, and to docs/reasons.md):\n" + \
        "\n".join(found)


# --- the scans themselves ----------------------------------------------------------------------------------------

SAMPLE = '''
from hivecat.reconcile.conditions import Condition
__all__ = ["NameTaken"]
READY = "Ready"
a = Condition.of(READY, False, "BrandNew", "words")
b = Condition("Drifted", "Unknown", "Brand" if x else reasons.NO_DRIFT, "words")
out.stop("BrandNew", "words", phase="Ready")
raise SpecInvalid("InvalidField", f"{where} must be a string")
raise SwitchRefused(f"Brand{kind}", "words")
kopf.event(body, type="Warning", reason="BrandNew", message="words")
events.append(("Warning" if failed else "Normal", "BrandNew", "words"))
word, reason = ("failed back", "BrandNew") if back else ("failed over", reasons.FAILED_OVER)
REASONS = {"iceberg": "BrandNew"}
class Gone(Exception):
    reason = "BrandNew"
def parse(value, where, reason="BrandNew"): ...
InvalidLocation("words", reason="overlap")
UnitCheck(unit, "Unreadable", "cannot be checked")
reason = f": {why}" if why else ""
def fail(work, reason="cannot be read"): ...
ok = Condition.of(READY, True, reasons.READY, "words")
'''


def test_the_scans_catch_a_literal() -> None:
    tree = ast.parse(SAMPLE)
    assert spelt_reasons("sample", tree, set(constants().values())) == ["sample:8: 'InvalidField'"]
    slots = reason_slots([tree, *(t for _, t in sources())])
    found = [hit.split(": ", 1)[1] for hit in reason_literals("sample", tree, slots)]
    assert sorted(found) == sorted(["'BrandNew'", "'Brand'", "'BrandNew'", "'InvalidField'", "f'Brand{kind}'",
                                    "'BrandNew'", "'BrandNew'", "'BrandNew'", "'BrandNew'", "'BrandNew'",
                                    "'BrandNew'"])
