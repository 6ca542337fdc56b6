"""The CRD reference in docs/crds/ is what scripts/crd_docs.py writes from crds/ now (run it after a CRD
change), and the docs pages link only to files that exist."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _generator():
    spec = importlib.util.spec_from_file_location("crd_docs", REPO / "scripts" / "crd_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_crd_reference_is_current() -> None:
    for path, text in _generator().pages().items():
        assert path.is_file() and path.read_text() == text, f"{path.relative_to(REPO)} is stale: run " \
                                                             "python scripts/crd_docs.py"


def test_every_spec_and_status_field_is_in_the_reference() -> None:
    import yaml

    for crd_path in sorted((REPO / "crds").glob("*.yaml")):
        crd = yaml.safe_load(crd_path.read_text())
        page = (REPO / "docs" / "crds" / f"{crd['spec']['names']['plural']}.md").read_text()
        schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
        for part in ("spec", "status"):
            for name in schema[part].get("properties", {}):
                assert f"| `{part}.{name}` |" in page, (crd_path.name, part, name)


def test_links_between_docs_resolve() -> None:
    written = [p for p in sorted((REPO / "docs").rglob("*.md")) if p.parent.name != "crds"]  # (crds: tables of regexes)
    for page in [REPO / "README.md", *written]:
        for target in re.findall(r"\]\((?!https?:|#)([^)#]+)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.relative_to(REPO)} links to missing {target}"
