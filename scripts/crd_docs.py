"""Write docs/crds/<plural>.md, the field reference of each CRD in crds/, from the CRD itself: every spec and
status field with its type, default, rules and description (the API server's own documentation, as `kubectl
explain` shows it). tests/unit/test_docs.py fails while a page differs from what this writes.

    python scripts/crd_docs.py          # rewrite the pages
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
CRD_DIR, DOCS_DIR = REPO / "crds", REPO / "docs" / "crds"
RULES = ("enum", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "format")


def pages() -> dict[Path, str]:
    found = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        crd = yaml.safe_load(path.read_text())
        found[DOCS_DIR / f"{crd['spec']['names']['plural']}.md"] = page(crd)
    return found


def page(crd: dict) -> str:
    names, version = crd["spec"]["names"], crd["spec"]["versions"][0]
    schema = version["schema"]["openAPIV3Schema"]
    lines = [f"# {names['kind']} ({crd['spec']['group']}/{version['name']})", "",
             "Generated from `crds/` by `scripts/crd_docs.py`: do not edit by hand.", "",
             " ".join(schema.get("description", "").split()), "",
             f"`kubectl get {names['plural']}` (short names: {', '.join(names.get('shortNames', [])) or 'none'}) shows "
             + ", ".join(c["name"] for c in version.get("additionalPrinterColumns", [])) + ".", ""]
    for part in ("spec", "status"):
        node = schema["properties"].get(part)
        if node is None:
            continue
        lines += [f"## {part}", ""]
        for rule in node.get("x-kubernetes-validations", []):
            lines.append(f"- Rule: {rule['message']} (`{rule['rule']}`)")
        lines += ["", "| field | type | default | rules | description |", "| --- | --- | --- | --- | --- |"]
        lines += rows(node, part, required=set(node.get("required", [])))
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def rows(node: dict, path: str, required: set[str]) -> list[str]:
    out = []
    for name, child in (node.get("properties") or {}).items():
        here = f"{path}.{name}"
        out.append(row(here, child, name in required))
        target = child.get("items", child) if child.get("type") == "array" else child
        if target.get("properties"):
            out += rows(target, here + ("[]" if child.get("type") == "array" else ""), set(target.get("required", [])))
    return out


def row(path: str, node: dict, required: bool) -> str:
    kind = node.get("type", "object")
    if kind == "array":
        kind = f"array of {node.get('items', {}).get('type', 'object')}"
    rules = [f"{key} {node[key]}" for key in RULES if key in node]
    rules += [f"{key} {node['items'][key]}" for key in RULES if key in node.get("items", {})]
    rules += [r["message"] for r in node.get("x-kubernetes-validations", [])]
    if required:
        rules.insert(0, "required")
    default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
    text = " ".join(str(node.get("description", "")).split()).replace("|", "\\|")
    cells = [f"`{path}`", kind, default, "; ".join(str(r) for r in rules).replace("|", "\\|"), text]
    return "| " + " | ".join(cells) + " |"


def main() -> int:
    DOCS_DIR.mkdir(parents=True, exist_ok=True)
    for path, text in pages().items():
        path.write_text(text)
        print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
