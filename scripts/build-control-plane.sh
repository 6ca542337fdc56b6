#!/usr/bin/env bash
# Builds the Kubernetes control plane the operator tier runs against, from Go modules only:
# kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes), etcd and kwok.
# With `node`, the real node's binaries instead (tests/kube/node.py): kubelet and kube-proxy
# (k8s.io/kubernetes) and CoreDNS, the cluster DNS.
# Binaries go to a cache outside the checkout keyed by versions; a second run only checks them.
# A binary already in $KUBEBUILDER_ASSETS (envtest's convention) is used as it is and not built.
# Prints the bin directory on its last line (tests read it from $HIVECAT_K8S_BIN or rerun this).
# Usage: build-control-plane.sh [node]
set -euo pipefail

K8S_VERSION=v1.35.4      # one patch release; kubectl from the npm layer is v1.35 too
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
COREDNS_VERSION=v1.12.4

ROOT="${HIVECAT_CACHE:-$HOME/.cache/hivecat}/k8s"
if [ "${1:-}" = node ]; then
  BINARIES=(kubelet kube-proxy coredns)
  CACHE="$ROOT/node-${K8S_VERSION}-coredns${COREDNS_VERSION}"
else
  BINARIES=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
  CACHE="$ROOT/${K8S_VERSION}-etcd${ETCD_VERSION}-kwok${KWOK_VERSION}"
fi
BIN="$CACHE/bin"
log() { printf 'control-plane: %s\n' "$*" >&2; }

# Where each binary comes from: KUBEBUILDER_ASSETS when it holds it, else our cache.
missing=()
mkdir -p "$BIN"
for name in "${BINARIES[@]}"; do
  if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/$name" ]; then
    ln -sf "$KUBEBUILDER_ASSETS/$name" "$BIN/$name"
  elif [ ! -x "$BIN/$name" ] || [ -L "$BIN/$name" ]; then
    rm -f "$BIN/$name"
    missing+=("$name")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$BIN"
  exit 0
fi

command -v go >/dev/null || { log "Go is needed to build ${missing[*]} (apt-get install golang, or set KUBEBUILDER_ASSETS)"; exit 1; }
export CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-mod=mod
want() { local n; for n in "${missing[@]}"; do [ "$n" = "$1" ] && return 0; done; return 1; }
timed() { local start=$SECONDS; "$@"; log "$1 … took $((SECONDS - start)) s"; }

# --- k8s.io/kubernetes ------------------------------------------------------------------------
# `go install k8s.io/kubernetes/cmd/...@vX` is refused because the module replaces its staging
# modules with local paths; a wrapper module requires it and points each k8s.io/* staging module
# at its published v0.N.P release instead.
build_kubernetes() {
  local work="$CACHE/src/kubernetes" minor="${K8S_VERSION#v1.}"
  local staging="v0.${minor}"
  minor="${minor%%.*}"
  mkdir -p "$work"
  cd "$work"
  local kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  {
    echo "module hivecat.local/control-plane"
    echo
    echo "go $(sed -n 's/^go //p' "$kmod")"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    echo "replace ("
    sed -n 's#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/src/.*#\t\1 => \1 '"$staging"'#p' "$kmod"
    echo ")"
  } > go.mod
  cat > tools.go <<'GO'
//go:build tools

// Package tools pins the commands this module builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
GO
  go mod tidy >/dev/null
  local pkg=k8s.io/component-base/version
  local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  local name
  for name in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    want "$name" || continue
    log "building $name $K8S_VERSION"
    go build -trimpath -ldflags "$ldflags" -o "$BIN/$name.tmp" "k8s.io/kubernetes/cmd/$name"
    mv "$BIN/$name.tmp" "$BIN/$name"
  done
}

# --- etcd -------------------------------------------------------------------------------------
# etcd's own main module has replace directives as well; a wrapper main calls etcdmain.
build_etcd() {
  local work="$CACHE/src/etcd"
  mkdir -p "$work"
  cd "$work"
  printf 'module hivecat.local/etcd\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > go.mod
  cat > main.go <<'GO'
// Command etcd is etcd's server main, built from the published server module.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  go mod tidy >/dev/null
  log "building etcd $ETCD_VERSION"
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.tmp" .
  mv "$BIN/etcd.tmp" "$BIN/etcd"
}

# --- CoreDNS ----------------------------------------------------------------------------------
build_coredns() {
  log "building coredns $COREDNS_VERSION"
  local gobin="$CACHE/src/coredns-bin"
  mkdir -p "$gobin"
  GOBIN="$gobin" GOFLAGS= go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
  mv "$gobin/coredns" "$BIN/coredns"
}

# --- kwok -------------------------------------------------------------------------------------
build_kwok() {
  log "building kwok $KWOK_VERSION"
  local gobin="$CACHE/src/kwok-bin"
  mkdir -p "$gobin"
  GOBIN="$gobin" GOFLAGS= go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  mv "$gobin/kwok" "$BIN/kwok"
}

log "building ${missing[*]} into $BIN (first time only; Go's module and build caches are reused)"
if want kube-apiserver || want kube-controller-manager || want kube-scheduler || want kubelet || want kube-proxy; then
  timed build_kubernetes
fi
if want coredns; then timed build_coredns; fi
if want etcd; then timed build_etcd; fi
if want kwok; then timed build_kwok; fi
for name in "${BINARIES[@]}"; do [ -x "$BIN/$name" ] || { log "$name was not built"; exit 1; }; done
echo "$BIN"
