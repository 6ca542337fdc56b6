#!/usr/bin/env bash
# End to end on kind with the built image: docker build -> kind load -> CRDs -> helm install -> the operator pod
# Ready -> the examples applied and each one taken up (status.observedGeneration) -> deleted, finalizers released
# by the running pod -> helm uninstall. Needs a Docker engine, kind, kubectl and helm; run by e2e/test_kind.py.
# (e2e/test_here.py runs the replicate/failover flow on the test control plane, where no image can run.)
set -euo pipefail
cd "$(dirname "$0")/.."
CLUSTER=${HIVECAT_E2E_CLUSTER:-hivecat-e2e}
NS=${HIVECAT_E2E_NAMESPACE:-hivecat-e2e}
IMAGE=hivecat:e2e
log() { printf 'e2e: %s\n' "$*"; }

cleanup() {
  kubectl logs -n hivecat-system deployment/hivecat --tail=200 >e2e-operator.log 2>&1 || true
  kind delete cluster --name "$CLUSTER" >/dev/null 2>&1 || true
}
trap cleanup EXIT

log "building $IMAGE"
docker build -t "$IMAGE" .
log "creating kind cluster $CLUSTER"
kind create cluster --name "$CLUSTER" --wait 120s
export KUBECONFIG
KUBECONFIG=$(mktemp)
kind get kubeconfig --name "$CLUSTER" >"$KUBECONFIG"
kind load docker-image "$IMAGE" --name "$CLUSTER"

log "applying CRDs, installing the chart"
kubectl apply --server-side -f crds/
kubectl wait --for=condition=Established --timeout=60s -f crds/
kubectl create namespace "$NS"
helm install hivecat charts/hivecat -n hivecat-system --create-namespace --wait --timeout 180s \
  --set image.repository=hivecat --set image.tag=e2e --set image.pullPolicy=Never \
  --set "watchNamespaces={$NS}" --set 'allowedImages={registry.example.com/data/*}' \
  --set 'allowedServiceAccounts={hivecat-copy,spark}'
kubectl wait -n hivecat-system deployment/hivecat --for=condition=Available --timeout=120s

log "applying the examples"
kubectl apply -n "$NS" -k examples/
for kind in hivecatalogs clusterstorages tablereplicas; do
  for name in $(kubectl get "$kind" -n "$NS" -o name); do
    # Every resource is taken up by the operator in the pod: status.observedGeneration == metadata.generation.
    kubectl wait -n "$NS" "$name" --timeout=120s \
      --for=jsonpath='{.status.observedGeneration}'="$(kubectl get -n "$NS" "$name" -o jsonpath='{.metadata.generation}')"
  done
done

log "deleting the examples (the operator releases their finalizers), uninstalling"
kubectl delete -n "$NS" -k examples/ --wait --timeout=120s
helm uninstall hivecat -n hivecat-system --wait --timeout 120s
log "ok"
