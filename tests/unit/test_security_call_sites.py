"""Every place where the operator reaches a metastore, Glue, a Secret, storage, a metastore's rows, a child
object or a process on a team's behalf is listed in docs/security.md with its guard. This finds those calls in
the operator's code (handlers, the passes of act/, reconcilers, the Local launcher) and compares: a new call
site fails until it is listed (and its guard stated), a listed one that is gone fails until the table follows."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "operator" / "hivecat"
DOC = PACKAGE.parents[1] / "docs" / "security.md"
SCANNED = ("handlers/*.py", "act/*.py", "reconcile/*.py", "replication/launch/*.py")
# The I/O primitives: what opens a backend, probes or writes a metastore or Glue, reads a Secret, reaches
# storage, starts a copy, or writes a child object. `ports.<method>` (the passes' I/O through their
# Ports) and `k8s.<write or Secret read>` are matched by their receiver.
PRIMITIVES = frozenset({
    "open_backend", "open_catalog", "catalog_backends", "registry_text", "probe_sql", "probe_thrift", "probe_glue",
    "read_schema_state", "ensure_default_database", "glue_client", "assume_role", "check_units", "housekeep",
    "write_plan", "read_plan", "check_switch", "check_unplanned", "check_copies", "unanswered", "cluster_storage",
    "update_unit_params", "relocate_changed", "switch_locations",
    "scan_drift", "repair_drift", "LocalLauncher", "WorkloadLauncher", "Popen"})
K8S = frozenset({"apply", "delete", "read_secret", "read_secret_keys", "read_secret_bytes"})
ROW = re.compile(r"^\| `(?P<module>[^`]+)` \| `(?P<function>[^`]+)` \| `(?P<call>[^`]+)` \| (?P<guard>.+) \|$")


def call_sites() -> set[tuple[str, str, str]]:
    found = set()
    for pattern in SCANNED:
        for path in sorted(PACKAGE.glob(pattern)):
            tree = ast.parse(path.read_text())
            decorators = {id(d) for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                          for d in node.decorator_list}
            module = str(path.relative_to(PACKAGE))
            found |= {(module, function, call) for function, call in _calls(tree, decorators)}
    return found


def _calls(tree: ast.AST, decorators: set[int]) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    scope: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_FunctionDef(self, node: ast.AST) -> None:
            scope.append(node.name)  # type: ignore[attr-defined]
            self.generic_visit(node)
            scope.pop()

        visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

        def visit_Call(self, node: ast.Call) -> None:
            if id(node) not in decorators:  # @kopf.on.delete(...) is no deletion
                name = _name(node.func)
                if name is not None:
                    found.append((".".join(scope), name))
            self.generic_visit(node)

    Visitor().visit(tree)
    return found


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id if func.id in PRIMITIVES else None
    if not isinstance(func, ast.Attribute):
        return None
    receiver = func.value.id if isinstance(func.value, ast.Name) else \
        func.value.attr if isinstance(func.value, ast.Attribute) else None
    if receiver == "ports":
        return f"ports.{func.attr}"
    if receiver == "k8s":
        return f"k8s.{func.attr}" if func.attr in K8S else None
    return func.attr if func.attr in PRIMITIVES else None


def documented() -> dict[tuple[str, str, str], str]:
    rows = {}
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[(match["module"], match["function"], match["call"])] = match["guard"].strip()
    return rows


def test_every_operator_side_io_call_site_is_listed_with_its_guard() -> None:
    in_code, in_doc = call_sites(), documented()
    assert in_code, "the scan found nothing: the package moved?"
    missing = sorted(in_code - set(in_doc))
    assert not missing, "operator-side I/O not in docs/security.md (add each with its guard):\n" + \
        "\n".join(f"| `{m}` | `{f}` | `{c}` | ? |" for m, f, c in missing)
    gone = sorted(set(in_doc) - in_code)
    assert not gone, f"docs/security.md lists call sites that are gone: {gone}"
    assert all(len(guard) > 10 for guard in in_doc.values()), "every row says what guards it"


def test_the_scan_sees_through_a_new_call() -> None:
    """A call site added anywhere in the scanned code is found (the test above cannot silently pass)."""
    tree = ast.parse("def sync(storage):\n    housekeep(storage)\n    self.ports.launcher(x)\n    k8s.apply(m)\n"
                     "    k8s.get(x)\n")
    assert _calls(tree, set()) == [("sync", "housekeep"), ("sync", "ports.launcher"), ("sync", "k8s.apply")]
