"""Which hivecat modules may import what: production code stays free of the dev-only local services
(hivecat/local/) and of kopf, which only the handlers (and `hivecat run`) need.

Every import counts, including the lazy ones inside functions: a lazy import still runs in production."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import hivecat

PACKAGE_DIR = Path(hivecat.__file__).resolve().parent

# The modules (and packages, with everything below them) allowed to import each guarded package.
MAY_IMPORT_LOCAL = ("hivecat.local", "hivecat.demo")  # demo: the dev-only `hivecat demo` command
MAY_IMPORT_KOPF = ("hivecat.handlers", "hivecat.cli")  # cli: lazily, for `hivecat run`


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, module: str, is_package: bool = False) -> Iterator[tuple[int, str]]:
    """(line, absolute module name) of every import in a module's source; `from a import b` yields a.b as
    well as a, since b may be a submodule."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            anchor = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join([*anchor, *([node.module] if node.module else [])])
            yield node.lineno, base
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}"


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(package: str, importers: tuple[str, ...]) -> list[str]:
    """One line per offending import statement: module, file:line and the (shortest) guarded name."""
    found: dict[tuple[str, int], str] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        module = module_name(path)
        if any(is_within(module, importer) for importer in importers):
            continue
        where = f"{module} ({path.relative_to(PACKAGE_DIR.parent)}"
        for line, imported in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            shortest = found.get((where, line))
            if is_within(imported, package) and (shortest is None or len(imported) < len(shortest)):
                found[where, line] = imported
    return [f"{where}:{line}) imports {imported}" for (where, line), imported in sorted(found.items())]


def test_the_walk_sees_the_package() -> None:
    modules = {module_name(p) for p in PACKAGE_DIR.rglob("*.py")}
    assert {"hivecat", "hivecat.cli", "hivecat.handlers", "hivecat.local.metastore", "hivecat.spark"} <= modules


@pytest.mark.parametrize("package, importers", [
    ("hivecat.local", MAY_IMPORT_LOCAL),
    ("kopf", MAY_IMPORT_KOPF),
], ids=["hivecat.local", "kopf"])
def test_only_allowed_modules_import(package: str, importers: tuple[str, ...]) -> None:
    found = violations(package, importers)
    assert not found, f"{package} is imported where it must not be:\n" + "\n".join(found)


def test_relative_and_from_imports_are_resolved() -> None:
    """The checker itself: `from hivecat import local`, relative and lazy imports all count."""
    source = "from hivecat import local\nfrom ..local import net\nfrom . import model\ndef f():\n    import kopf.cli\n"
    imports = set(imported_modules(source, "hivecat.catalog.probe"))
    assert {(1, "hivecat.local"), (2, "hivecat.local.net"), (3, "hivecat.catalog.model"), (5, "kopf.cli")} <= imports
    assert (1, "hivecat.handlers.kinds") in set(imported_modules("from . import kinds", "hivecat.handlers", True))


# --- layers -------------------------------------------------------------------------------------------------
# Each top-level module or package of hivecat, lowest first: a module imports only what is below its own layer
# (or inside its own package). Domain types live in the lowest package that needs them, so nothing imports
# upward and no two packages import each other (design.md; issue 27).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kinds", "reasons", "durations", "jvm", "timestamps"),
    ("apierrors", "config", "spark", "aws", "kerberos", "malloc", "collector", "log_writer"),
    ("locations",),
    ("copy", "catalog"),
    ("specs",),          # frozen models of the CRs, and the mode rules
    ("replication",),    # the cluster registry, plans, copies, failover: the replication domain
    ("workloads",),      # pure builders of Kubernetes objects, and the schema decision they carry out
    ("reconcile",),      # pure decisions of each kind, over all of the above
    ("act",),            # each kind's pass, carried out through its ports: what reconcile decides
    ("k8s", "metrics", "local"),
    ("leader", "handlers", "commands", "demo"),
    ("cli",),
    ("__main__",),
)
RANK = {f"hivecat.{name}": rank for rank, names in enumerate(LAYERS) for name in names}


def top_level(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_every_module_has_a_layer() -> None:
    tops = {top_level(module_name(p)) for p in PACKAGE_DIR.rglob("*.py")} - {"hivecat"}
    assert tops == set(RANK), f"give these a layer: {sorted(tops - set(RANK))}; gone: {sorted(set(RANK) - tops)}"


def upward_imports() -> list[str]:
    found = []
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        module = module_name(path)
        mine = top_level(module)
        if mine not in RANK:
            continue
        for line, imported in imported_modules(path.read_text(), module, path.name == "__init__.py"):
            theirs = top_level(imported)
            if theirs in RANK and theirs != mine and RANK[theirs] >= RANK[mine]:
                found.append(f"{path.relative_to(PACKAGE_DIR.parent)}:{line}: {mine} imports {imported}")
    return sorted(set(found))


def test_nothing_imports_upward_or_sideways() -> None:
    """Also no package cycle: every import goes strictly down the layers."""
    found = upward_imports()
    assert not found, "imports against the layers (move the shared type down instead):\n" + "\n".join(found)



# --- the pure layers ----------------------------------------------------------------------------------------
# reconcile/ and workloads/ decide from what they are given (design.md): no client, no clock, no thread, and no
# ports to act through, which act/ and the handlers hold.
PURE = ("hivecat.reconcile", "hivecat.workloads")
DOES_IO = ("sqlalchemy", "boto3", "botocore", "kubernetes", "pyarrow", "aiohttp", "requests", "urllib", "socket",
           "subprocess", "threading", "asyncio", "time", "hivecat.k8s", "hivecat.aws", "hivecat.catalog.connect",
           "hivecat.catalog.sql", "hivecat.catalog.glue", "hivecat.catalog.thrift", "hivecat.copy.copier",
           "hivecat.replication.launch.local")
CLOCKS = ("now", "utcnow", "today", "time", "monotonic")


def impurities(source: str, module: str, where: str) -> list[str]:
    """An import of a module that does I/O, a clock read (datetime.now(), time.time()...), ports (a Protocol named
    *Ports: what a pass acts through)."""
    found = [f"{where}:{line}: imports {imported}" for line, imported in imported_modules(source, module)
             if any(is_within(imported, io) for io in DOES_IO)]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCKS:
            found.append(f"{where}:{node.lineno}: reads a clock ({ast.unparse(node.func)}())")
        if isinstance(node, ast.ClassDef) and node.name.endswith("Ports") \
                and any(ast.unparse(base).endswith("Protocol") for base in node.bases):
            found.append(f"{where}:{node.lineno}: defines ports ({node.name}); a pass that acts belongs in act/")
    return found


def test_reconcile_and_workloads_are_pure() -> None:
    found = [line for path in sorted(PACKAGE_DIR.rglob("*.py"))
             if any(is_within(module_name(path), pure) for pure in PURE)
             for line in impurities(path.read_text(), module_name(path), str(path.relative_to(PACKAGE_DIR.parent)))]
    assert not found, "I/O in a pure layer:\n" + "\n".join(found)


def test_the_purity_check_sees_io() -> None:
    """The checker itself: an I/O import, a clock read and a ports Protocol are each found."""
    source = ("from hivecat.catalog.connect import open_catalog\nimport time\nfrom typing import Protocol\n"
              "class Ports(Protocol): ...\ndef f(clock): return time.time(), datetime.now(timezone.utc)\n")
    found = "\n".join(impurities(source, "hivecat.reconcile.example", "example.py"))
    assert "imports hivecat.catalog.connect" in found and "imports time" in found
    assert "reads a clock (time.time())" in found and "reads a clock (datetime.now())" in found
    assert "defines ports (Ports)" in found


HANDLER_LINES = 40  # a handler reads parse → decide/act → status; longer, a step belongs in a function of its own


def long_functions(source: str, limit: int = HANDLER_LINES) -> list[tuple[str, int]]:
    """(name, lines) of each function in `source` longer than `limit` lines (decorators not counted)."""
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(ast.parse(source))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno is not None and node.end_lineno - node.lineno + 1 > limit]


def test_handlers_stay_short() -> None:
    found = {path.name: long for path in sorted((PACKAGE_DIR / "handlers").glob("*.py"))
             if (long := long_functions(path.read_text()))}
    assert not found, f"functions of handlers/ over {HANDLER_LINES} lines: {found}"


def test_the_length_check_counts_lines() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(HANDLER_LINES))
    assert long_functions(f"def f():\n{body}\n") == [("f", HANDLER_LINES + 1)]
    assert long_functions("async def g():\n    pass\n") == []
