#!/usr/bin/env bash
# Builds the images the real-node tests run, with podman and runc, from this machine's inputs only (no registry):
#   base       Debian bookworm with Python 3.11 (debootstrap --variant=minbase), the hivecat image's PYTHON_IMAGE
#   hivecat    the Dockerfile on that base, the lock's packages only; the CA bundle reaches pip as a build secret
#   pause      the real test node's sandbox image: tests/kube/node/pause.go, static, alone in the image
#   metastore  Hive's standalone metastore 3.1.3 from Maven Central's jars on the base, laid out as apache/hive
#              (tests/kube/metastore-image), for the real node's end to end
# Each image is tagged with the digest of its inputs and built only when that tag is missing, so a second run
# takes a second. Prints the image reference on its last line.
# Usage: scripts/build-image.sh base|hivecat|pause|metastore
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export CONTAINERS_CONF="$REPO/scripts/containers.conf"
SUITE=bookworm
MIRROR=${HIVECAT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
BASE_PACKAGES=python3,python3-venv,python-is-python3,ca-certificates
# The bundle pip trusts inside the build (a TLS-inspecting proxy's CA is in the host's bundle); never in a layer.
CA_BUNDLE=${HIVECAT_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
log() { printf 'build-image: %s\n' "$*" >&2; }

for tool in podman runc; do
  command -v "$tool" >/dev/null || { log "$tool is missing (make install adds it)"; exit 1; }
done

digest() { sha256sum | cut -c1-16; }
exists() { podman image exists "$1"; }
# After a build, the same image's older tags and the layers only they used go (each is gigabytes).
prune() {
  local repo=${1%:*}
  podman images --format '{{.Repository}}:{{.Tag}}' "$repo" | grep -vxF "$1" | xargs -r podman rmi >&2 || true
  podman image prune --force >/dev/null || true
}

base() {
  local ref="localhost/hivecat-base:$SUITE-$(printf '%s %s' "$SUITE" "$BASE_PACKAGES" | digest)"
  if ! exists "$ref"; then
    command -v debootstrap >/dev/null || { log "debootstrap is missing (make install adds it)"; exit 1; }
    local root
    root=$(mktemp -d)
    log "debootstrap $SUITE into $root (a minute or two, once)"
    debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$root" "$MIRROR" >&2
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' - "$ref" >&2
    rm -rf "$root"
  fi
  echo "$ref"
}

hivecat() {
  local from inputs ref
  from=$(base)
  inputs=$(cd "$REPO" && {
    podman image inspect --format '{{.Id}}' "$from"
    find Dockerfile .dockerignore requirements.lock pyproject.toml README.md operator -type f \
      -not -path '*/__pycache__/*' -not -path '*.egg-info/*' | LC_ALL=C sort | xargs sha256sum
  } | digest)
  ref="localhost/hivecat:$inputs"
  if ! exists "$ref"; then
    local secret=()
    [ -s "$CA_BUNDLE" ] && secret=(--secret "id=ca-bundle,src=$CA_BUNDLE")
    log "building $ref from $from (a few minutes, once per change of its inputs)"
    podman build --network=host --build-arg "PYTHON_IMAGE=$from" "${secret[@]}" -t "$ref" "$REPO" >&2
    prune "$ref"
  fi
  echo "$ref"
}

pause() {
  local source="$REPO/tests/kube/node/pause.go" ref work
  ref="localhost/hivecat-pause:$(digest < "$source")"
  if ! exists "$ref"; then
    work=$(mktemp -d)
    cp "$source" "$work/main.go"
    printf 'module hivecat.local/pause\n\ngo 1.26\n' > "$work/go.mod"
    (cd "$work" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags "-s -w" -o rootfs/pause .)
    tar -C "$work/rootfs" -c . | podman import --change 'ENTRYPOINT ["/pause"]' - "$ref" >&2
    rm -rf "$work"
  fi
  echo "$ref"
}

metastore() {
  local from maven context ref inputs
  from=$(base)
  bash "$REPO/scripts/fetch-hive-metastores.sh" hive3 >/dev/null
  maven="${HIVECAT_CACHE:-$HOME/.cache/hivecat}/maven"
  context="$REPO/tests/kube/metastore-image"
  local jars=("$maven/hive-standalone-metastore-3.1.3" "$maven/hive-listener-3.1.3"
              /usr/share/java/mariadb-java-client.jar /usr/share/java/postgresql.jar)
  inputs=$({
    podman image inspect --format '{{.Id}}' "$from"
    (cd "$context" && find . -type f | LC_ALL=C sort | xargs sha256sum)
    find -L "${jars[@]}" -type f -printf '%P %s\n' | LC_ALL=C sort
  } | digest)
  ref="localhost/hivecat-metastore:3.1.3-$inputs"
  if ! exists "$ref"; then
    local work
    work=$(mktemp -d)
    cp -r "$context/." "$work/"
    mkdir -p "$work/jdbc" "$work/hcatalog/share/hcatalog"
    cp -rL "${jars[0]}" "$work/metastore"
    cp -L "${jars[1]}/hive-hcatalog-server-extensions-3.1.3.jar" "$work/hcatalog/share/hcatalog/"
    cp -L "${jars[2]}" "${jars[3]}" "$work/jdbc/"
    log "building $ref from $from"
    podman build --network=host --build-arg "BASE_IMAGE=$from" -t "$ref" "$work" >&2
    rm -rf "$work"
    prune "$ref"
  fi
  echo "$ref"
}

case "${1:-}" in
  base) base ;;
  hivecat) hivecat ;;
  pause) pause ;;
  metastore) metastore ;;
  *) log "usage: $0 base|hivecat|pause|metastore"; exit 2 ;;
esac
