#!/usr/bin/env bash
# Fetch the jars one tests/maven/<name>/pom.xml lists (with their runtime dependencies) from Maven Central
# into a cache outside the checkout, and print that directory:
#
#   scripts/fetch-maven.sh [NAME [VERSION]]      # NAME defaults to hadoop; VERSION to the pom's <NAME.version>
#   -> ${HIVECAT_CACHE:-~/.cache/hivecat}/maven/<NAME>-<VERSION>/*.jar
#
# A directory is complete when its stamp file matches the pom's checksum, so a second run costs well under a
# second; a changed pom or version fetches again. Downloads go to a temporary sibling that is renamed into
# place only when Maven succeeded, so an interrupted fetch never leaves a half-filled directory behind.
# Maven's own local repository (~/.m2) keeps the downloaded artifacts too, so a refetch is offline.
set -euo pipefail

name="${1:-hadoop}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
pom="$here/tests/maven/$name/pom.xml"
[[ -f "$pom" ]] || { echo "fetch-maven: no $pom" >&2; exit 2; }

property="$name.version"
version="${2:-$(python3 - "$pom" "$property" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = {"m": "http://maven.apache.org/POM/4.0.0"}
node = ET.parse(sys.argv[1]).getroot().find(f"m:properties/m:{sys.argv[2]}", ns)
print(node.text.strip() if node is not None and node.text else "")
PY
)}"
[[ -n "$version" ]] || { echo "fetch-maven: $pom sets no <$property>; pass the version" >&2; exit 2; }
[[ "$version" =~ ^[A-Za-z0-9._-]+$ ]] || { echo "fetch-maven: bad version '$version'" >&2; exit 2; }

root="${HIVECAT_CACHE:-$HOME/.cache/hivecat}/maven"
target="$root/$name-$version"
stamp="$target/.hivecat-complete"
want="$(sha256sum "$pom" | cut -d' ' -f1) $version"

if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$target"
    exit 0
fi

command -v mvn >/dev/null || { echo "fetch-maven: mvn not found (apt-get install maven)" >&2; exit 1; }
mkdir -p "$root"
# One fetch per directory at a time (parallel test workers): wait for the other, then use what it made.
exec 9>"$root/.$name-$version.lock"
flock 9
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "$target"
    exit 0
fi
partial="$(mktemp -d "$root/.$name-$version.XXXXXX")"
trap 'rm -rf "$partial"' EXIT
began=$SECONDS
if ! mvn -B -q -f "$pom" "-D$property=$version" dependency:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$partial" >"$partial/.mvn.log" 2>&1; then
    cat "$partial/.mvn.log" >&2
    echo "fetch-maven: mvn failed for $name $version (log above)" >&2
    exit 1
fi
rm -f "$partial/.mvn.log"
echo "$want" >"$partial/.hivecat-complete"
rm -rf "$target"
mv -T "$partial" "$target"
trap - EXIT
echo "fetch-maven: $name $version: $(ls "$target" | wc -l) jars, $(du -sh "$target" | cut -f1), $((SECONDS - began))s" >&2
echo "$target"
