#!/usr/bin/env bash
# Fetch real standalone Hive Metastores (3.1.3 and 4.0.1) from Maven Central into a cache outside the
# checkout, for tests/support/hive_metastores.py:
#
#   $HIVECAT_CACHE/maven/hive-standalone-metastore-3.1.3/          *.jar + scripts/metastore/upgrade/{mysql,postgres}
#   $HIVECAT_CACHE/maven/hive-standalone-metastore-server-4.0.1/   the same for Hive 4
#
# HIVECAT_CACHE defaults to ~/.cache/hivecat. The jars come from tests/maven/hive{3,4}/pom.xml (the metastore
# plus the Hadoop jars it marks optional/provided); the schema scripts that schematool runs come from the same
# release's -bin.tar.gz (classifier `bin`, on Maven Central too: the jars themselves hold no *.sql).
# A stamp file records what was fetched: a second run with unchanged poms only compares stamps.
#
#   $HIVECAT_CACHE/maven/hive-listener-{2.3.10,3.1.3}/            DbNotificationListener (hive-hcatalog-server-
#                                                                  extensions, the jar alone) for the 2.3.10
#                                                                  metastore of Spark's jars and for 3.1.3
#
# Usage: scripts/fetch-hive-metastores.sh [hive3|hive4|listeners|all]     (default: all)
# Prints one line per metastore: `<name> <dir> <fetched in Ns | cached>`.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${HIVECAT_CACHE:-$HOME/.cache/hivecat}/maven"
MVN=(mvn -B -q -Dstyle.color=never)

fetch() {  # fetch <pom> <name> <bin artifact coordinates>
    local pom="$ROOT/$1" name="$2" bin="$3"
    local dir="$CACHE/$name" stamp="$CACHE/$name/.fetched"
    local want
    want="$(sha256sum "$pom" | cut -d' ' -f1) $bin"
    if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
        echo "$name $dir cached"
        return
    fi
    local began=$SECONDS partial="$dir.partial" download
    rm -rf "$partial"
    mkdir -p "$partial"
    "${MVN[@]}" -f "$pom" dependency:copy-dependencies -DoutputDirectory="$partial"
    download="$(mktemp -d)"
    "${MVN[@]}" -f "$pom" dependency:copy -Dartifact="$bin" -DoutputDirectory="$download"
    # Only the schema scripts of the databases the tests use (the tarball's lib/ duplicates the jars).
    tar -xzf "$download"/*.tar.gz -C "$partial" --strip-components=1 --wildcards \
        '*/scripts/metastore/upgrade/mysql/*' '*/scripts/metastore/upgrade/postgres/*'
    rm -rf "$download"
    ls "$partial"/*.jar > /dev/null
    ls "$partial"/scripts/metastore/upgrade/mysql/hive-schema-*.mysql.sql > /dev/null
    echo "$want" > "$partial/.fetched"
    rm -rf "$dir"
    mv "$partial" "$dir"
    echo "$name $dir fetched in $((SECONDS - began))s ($(du -sh "$dir" | cut -f1))"
}

fetch_jar() {  # fetch_jar <name> <coordinates>: one jar alone
    local name="$1" artifact="$2" dir="$CACHE/$1"
    if [[ -f "$dir/.fetched" && "$(cat "$dir/.fetched")" == "$artifact" ]]; then
        echo "$name $dir cached"
        return
    fi
    rm -rf "$dir.partial"
    mkdir -p "$dir.partial"
    "${MVN[@]}" dependency:copy -Dartifact="$artifact" -DoutputDirectory="$dir.partial"
    echo "$artifact" > "$dir.partial/.fetched"
    rm -rf "$dir"
    mv "$dir.partial" "$dir"
    echo "$name $dir fetched"
}

which="${1:-all}"
case "$which" in
    hive3|hive4|listeners|all) ;;
    *) echo "usage: $0 [hive3|hive4|listeners|all]" >&2; exit 2 ;;
esac
command -v mvn > /dev/null || { echo "mvn not found: install maven (make setup)" >&2; exit 1; }
mkdir -p "$CACHE"
# One fetch at a time per cache (parallel test workers may all ask for the same release).
exec 9> "$CACHE/.fetch-hive-metastores.lock"
flock 9
if [[ "$which" == hive3 || "$which" == all ]]; then
    fetch tests/maven/hive3/pom.xml hive-standalone-metastore-3.1.3 \
        org.apache.hive:hive-standalone-metastore:3.1.3:tar.gz:bin
fi
if [[ "$which" == hive4 || "$which" == all ]]; then
    fetch tests/maven/hive4/pom.xml hive-standalone-metastore-server-4.0.1 \
        org.apache.hive:hive-standalone-metastore-server:4.0.1:tar.gz:bin
fi
if [[ "$which" == listeners || "$which" == all ]]; then
    # No 4.0.x is published (the next is 4.2.0, built for Java 21): tests/java/StandInNotificationListener.java
    for version in 2.3.10 3.1.3; do
        fetch_jar "hive-listener-$version" "org.apache.hive.hcatalog:hive-hcatalog-server-extensions:$version"
    done
fi
