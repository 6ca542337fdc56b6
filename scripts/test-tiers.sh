#!/usr/bin/env bash
# `make test`: the three tiers as pytest processes at once (the integration and operator tiers as two each). The
# integration and operator tiers spend much of their time waiting on JVMs, HDFS and the control plane, so running
# them side by side cuts the wall time; each fixture starts its own services on free ports and unique database names,
# so the tiers do not share state. Each tier's output is printed whole when it ends, in a block.
# Usage: scripts/test-tiers.sh PYTHON [pytest args...]; fails when any tier fails (pytest's 5 too).
set -uo pipefail
python=$1; shift
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

declare -A pids
start_tier() {  # name, then the paths it runs
    local name=$1; shift
    ( s=$(date +%s)
      # the operator tier's processes leave their API audit logs for test_zz_rbac_audit.py, which runs after them
      if [[ $name == operator* ]]; then export HIVECAT_AUDIT_SHARE="$logs/audit"; fi
      "$python" -m pytest "$@" "${EXTRA[@]}" >"$logs/$name.log" 2>&1; rc=$?
      echo $(( $(date +%s) - s )) >"$logs/$name.secs"; exit $rc ) &
    pids[$name]=$!
}
EXTRA=("$@")
began=$(date +%s)
# The integration and operator tiers are the longest (about 40 and 30 minutes of test time in a run, much of it
# waiting on JVMs, HDFS, databases and the control plane while the CPUs idle): each runs as two processes, their files split by
# the time each took before (tests/tier-weights, scripts/split-tier.py). Each operator process has a control
# plane of its own; the RBAC audit, which compares every request of the whole tier with the chart, runs after both.
mapfile -t integration < <("$python" scripts/split-tier.py 2 tests/integration/test_*.py)
mapfile -t operator < <("$python" scripts/split-tier.py 2 $(ls tests/operator/test_*.py | grep -v test_zz_rbac_audit))
read -ra integration_a <<<"${integration[0]}"
read -ra integration_b <<<"${integration[1]}"
read -ra operator_a <<<"${operator[0]}"
read -ra operator_b <<<"${operator[1]}"
start_tier operator-a "${operator_a[@]}"
start_tier operator-b "${operator_b[@]}"
start_tier integration-a "${integration_a[@]}"
start_tier integration-b "${integration_b[@]}"
start_tier unit tests/unit

failed=()
report() {
    wait "${pids[$1]}"; rc=$?
    echo "===== tier $1: exit $rc in $(cat "$logs/$1.secs") s"
    cat "$logs/$1.log"
    [ "$rc" -eq 0 ] || failed+=("$1")
}
# e2e/ starts its own control plane, HDFS and metastore: it takes the unit tier's slot once that is done, so
# no more than four tiers load the machine at once.
report unit
start_tier e2e e2e
for name in operator-a operator-b; do
    report "$name"
done
start_tier operator-rbac-audit tests/operator/test_zz_rbac_audit.py
for name in integration-a integration-b operator-rbac-audit e2e; do
    report "$name"
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "===== failed tiers: ${failed[*]}"
    exit 1
fi
echo "===== all tiers passed in $(( $(date +%s) - began )) s"
