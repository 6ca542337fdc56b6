"""Small directory trees for the copy engine's tests: write one, read one back, compare manifests."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hivecat.copy.manifest import MANIFEST_NAME

# Fields that name the run or its time: the only ones two engines' manifests may differ in.
RUN_FIELDS = ("run_id", "committed_at", "copied_at")


def uri(path: Path | str) -> str:
    """The file:// URI of a local path, as `hivecat distcp` takes it (URIs only; the path literal, not
    %-escaped as Path.as_uri() would: dt=1 stays dt=1)."""
    return f"file://{path}"


def write_tree(root: Path, files: dict[str, bytes]) -> Path:
    for relative, data in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def read_tree(root: Path, with_manifest: bool = False) -> dict[str, bytes]:
    """Every file below root by relative path (the manifest only when asked)."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            relative = os.path.relpath(os.path.join(directory, name), root)
            if with_manifest or relative != MANIFEST_NAME:
                found[relative] = Path(directory, name).read_bytes()
    return found


def read_manifest(unit: Path) -> dict:
    return json.loads((unit / MANIFEST_NAME).read_text())


def without_run_fields(manifest: dict) -> dict:
    stripped = {k: v for k, v in manifest.items() if k not in RUN_FIELDS}
    stripped["files"] = [{k: v for k, v in f.items() if k not in RUN_FIELDS} for f in manifest["files"]]
    return stripped
