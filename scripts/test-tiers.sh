#!/usr/bin/env bash
# `make test`: the three tiers as pytest processes at once (the integration tier as two). The integration
# and operator tiers spend much of their time waiting on JVMs, HDFS and the control plane, so running them
# side by side cuts the wall time; each fixture starts its own services on free ports and unique database names,
# so the tiers do not share state. Each tier's output is printed whole when it ends, in a block, with its 15
# slowest tests (on 2 CPUs the run is CPU-bound: a test's time there is also the other tiers' load).
# Usage: scripts/test-tiers.sh PYTHON [pytest args...]; fails when any tier fails (pytest's 5 too).
set -uo pipefail
python=$1; shift
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

declare -A pids
start_tier() {  # name, niceness, then the paths it runs
    local name=$1 niceness=$2; shift 2
    ( s=$(date +%s); nice -n "$niceness" "$python" -m pytest --durations=15 "$@" "${EXTRA[@]}" >"$logs/$name.log" 2>&1; rc=$?
      echo $(( $(date +%s) - s )) >"$logs/$name.secs"; exit $rc ) &
    pids[$name]=$!
}
EXTRA=("$@")
began=$(date +%s)
# The integration tier is the largest: its files run as two processes. Two files take minutes each (every
# benchmark in --small mode; the demo, run twice): one goes to each half, then the rest alternate in name order.
# (Both in one half made that half run five minutes longer than the other.)
long=(tests/integration/test_benchmarks_small.py tests/integration/test_demo.py)
mapfile -t integration < <(printf '%s\n' "${long[@]}"; ls tests/integration/test_*.py | sort | grep -vxF -f <(printf '%s\n' "${long[@]}"))
half_a=() half_b=()
for i in "${!integration[@]}"; do
    if (( i % 2 == 0 )); then half_a+=("${integration[$i]}"); else half_b+=("${integration[$i]}"); fi
done
# The operator tier is the longest, and most of its time is latency (the operator reacting, JVMs starting, its
# control plane), not CPU: the other tiers (and every process they start) yield the CPUs to it when both want
# them, so it is not kept waiting behind their work and they fill the CPUs it leaves.
start_tier operator 0 tests/operator
start_tier integration-a 10 "${half_a[@]}"
start_tier integration-b 10 "${half_b[@]}"
start_tier unit 10 tests/unit

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
start_tier e2e 10 e2e
for name in integration-a integration-b operator e2e; do
    report "$name"
done
if [ "${#failed[@]}" -gt 0 ]; then
    echo "===== failed tiers: ${failed[*]}"
    exit 1
fi
echo "===== all tiers passed in $(( $(date +%s) - began )) s"
