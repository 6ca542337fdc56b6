#!/usr/bin/env bash
# Copy the CRDs from crds/ (the source of truth) into the chart, which installs
# them from its crds/ directory, and into the Python package, whose spec parsers
# apply their schemas (operator/hivecat/specs/schema.py). tests/unit/test_crds.py
# fails while they differ.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
for dest in "$repo/charts/hivecat/crds" "$repo/operator/hivecat/specs/crds"; do
    mkdir -p "$dest"
    rm -f "$dest"/*.yaml
    cp "$repo"/crds/*.yaml "$dest"/
    echo "copied $(ls "$repo"/crds/*.yaml | wc -l) CRDs to $dest"
done
