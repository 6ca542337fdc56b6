#!/usr/bin/env bash
# End-to-end on a real Kubernetes: kind cluster -> CRDs Established -> operator -> examples -> status.
# Needs a Docker engine and the kind and kubectl binaries; run by e2e/test_kind.py (pytest -m kind).
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${HIVECAT_E2E_CLUSTER:-hivecat-e2e}
NS=${HIVECAT_E2E_NAMESPACE:-hivecat-e2e}
HIVECAT=${HIVECAT:-.venv/bin/hivecat}
log() { printf 'e2e: %s\n' "$*"; }

cleanup() {
  [ -n "${OPERATOR_PID:-}" ] && kill "$OPERATOR_PID" 2>/dev/null || true
  kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "creating kind cluster $CLUSTER"
kind create cluster --name "$CLUSTER" --wait 120s
export KUBECONFIG
KUBECONFIG=$(mktemp)
kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"

log "applying CRDs"
kubectl apply -f crds/
kubectl wait --for=condition=Established --timeout=60s -f crds/

kubectl create namespace "$NS"
log "starting the operator (namespace $NS)"
"$HIVECAT" run --standalone --namespace "$NS" --verbose >e2e-operator.log 2>&1 &
OPERATOR_PID=$!
sleep 5
kill -0 "$OPERATOR_PID" || { cat e2e-operator.log; exit 1; }

log "applying examples"
kubectl apply -n "$NS" -f examples/
for kind in hivecatalogs clusterstorages tablereplicas; do
  for name in $(kubectl get "$kind" -n "$NS" -o name); do
    # Every resource must be observed by the operator: status.observedGeneration == metadata.generation.
    kubectl wait -n "$NS" "$name" --timeout=120s \
      --for=jsonpath='{.status.observedGeneration}'="$(kubectl get -n "$NS" "$name" -o jsonpath='{.metadata.generation}')"
  done
done

log "deleting examples"
kubectl delete -n "$NS" -f examples/ --wait --timeout=120s
log "ok"
