#!/usr/bin/env bash
# Kueue admits a pending workload beyond its cohort's quota in the first scheduling cycle after its
# manager restarts (docs/findings/kueue-over-admission-after-restart.md). This script makes the state
# (state.yaml, jobs.yaml), then stops and starts Kueue's manager up to RUNS times, and after each start
# looks for WATCH_SECONDS whether the pending gang was admitted: the cohort then holds 10 GPUs of 8.
#
# Needs only kubectl, pointed at a cluster where Kueue (the v1beta2 API) runs as a Deployment. No node
# needs a GPU. Exit status: 0 when no restart over-admitted, 1 at the first that did (the state is kept
# for inspection; the command that removes it is printed), 2 on a setup error.
#
#   RUNS=100 ./reproduce.sh
#   KUEUE_NAMESPACE=kueue-system KUEUE_DEPLOYMENT=kueue-controller-manager ./reproduce.sh
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
runs=${RUNS:-100}
watch_seconds=${WATCH_SECONDS:-5}
kueue_ns=${KUEUE_NAMESPACE:-kueue-system}
deployment=${KUEUE_DEPLOYMENT:-kueue-controller-manager}
selector=${KUEUE_SELECTOR:-control-plane=controller-manager}
ns=kueue-restart-race

fail() { echo "reproduce.sh: $*" >&2; exit 2; }

# The Workloads of $ns that hold a quota reservation: "name clusterQueue", one a line.
admitted() {
  kubectl get workloads.kueue.x-k8s.io -n "$ns" -o \
    jsonpath='{range .items[?(@.status.admission)]}{.metadata.name}{" "}{.status.admission.clusterQueue}{"\n"}{end}'
}

# Each ClusterQueue's GPUs in use and borrowed, as Kueue's status has them.
usage() {
  kubectl get clusterqueues.kueue.x-k8s.io restart-race-lender restart-race-borrower -o jsonpath='{range .items[*]}{.metadata.name}{": "}{.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].total}{" GPUs in use, "}{.status.flavorsUsage[0].resources[?(@.name=="nvidia.com/gpu")].borrowed}{" borrowed\n"}{end}'
}

# Wait (up to 60 s) until exactly $1 Workloads of $ns are admitted and $2 exist.
until_admitted() {
  local want=$1 made=$2 deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    local got total
    got=$(admitted | grep -c . || true)
    total=$(kubectl get workloads.kueue.x-k8s.io -n "$ns" -o name | grep -c . || true)
    if ((got == want && total == made)); then return 0; fi
    sleep 0.5
  done
  kubectl get workloads.kueue.x-k8s.io -n "$ns" -o wide >&2 || true
  fail "expected $want of $made Workloads admitted in $ns within 60 s; Kueue's answer is above"
}

replicas=$(kubectl -n "$kueue_ns" get deployment "$deployment" -o jsonpath='{.spec.replicas}') ||
  fail "no Deployment $kueue_ns/$deployment: set KUEUE_NAMESPACE and KUEUE_DEPLOYMENT to where Kueue runs"
((replicas == 1)) || fail "$kueue_ns/$deployment runs $replicas replicas; the race is that of one manager starting"

cleanup() {
  # Whatever happened, Kueue runs again as it did before this script.
  kubectl -n "$kueue_ns" scale deployment "$deployment" --replicas="$replicas" >/dev/null || true
}
trap cleanup EXIT

echo "making the state in namespace $ns (a cohort of 8 GPUs, all in use, and a 2-GPU gang pending)"
kubectl apply -f "$here/state.yaml" >/dev/null
kubectl apply -f "$here/jobs.yaml" -l restart-race/job=borrows >/dev/null
until_admitted 1 1
kubectl apply -f "$here/jobs.yaml" -l restart-race/job=lends >/dev/null
until_admitted 2 2
kubectl apply -f "$here/jobs.yaml" -l restart-race/job=gang >/dev/null
until_admitted 2 3
usage

for ((run = 1; run <= runs; run++)); do
  kubectl -n "$kueue_ns" scale deployment "$deployment" --replicas=0 >/dev/null
  # SIGTERM, and the manager releases its lease: the next one starts at once, as after an upgrade.
  while [[ -n $(kubectl -n "$kueue_ns" get pods -l "$selector" -o name) ]]; do sleep 0.5; done
  kubectl -n "$kueue_ns" scale deployment "$deployment" --replicas=1 >/dev/null
  kubectl -n "$kueue_ns" rollout status deployment "$deployment" --timeout=180s >/dev/null
  # Kueue's first cycles come within a second of its start, and an admission, once made, stays.
  deadline=$((SECONDS + watch_seconds))
  while ((SECONDS < deadline)); do
    if admitted | grep -q '^job-gang-'; then
      echo "restart $run: OVER-ADMITTED: the gang was admitted while the cohort's 8 GPUs were in use"
      admitted
      usage
      echo "Kueue's start-up to its third cycle, from its log (which ClusterQueues its cache held when which cycle admitted what):"
      kubectl -n "$kueue_ns" logs "deployment/$deployment" |
        grep -E 'Scheduling cycle starts|ClusterQueue create event|Workload assumed in the cache' |
        awk '/"schedulingCycle":4[,}]/ { exit } { print }' || true
      echo "remove the state: kubectl delete namespace $ns; kubectl delete clusterqueue restart-race-lender" \
        "restart-race-borrower; kubectl delete resourceflavor restart-race-gpu"
      exit 1
    fi
    sleep 0.2
  done
  echo "restart $run: within quota"
done

echo "$runs restarts, none over-admitted; removing the state"
kubectl delete namespace "$ns" --wait=true >/dev/null
kubectl delete clusterqueues.kueue.x-k8s.io restart-race-lender restart-race-borrower >/dev/null
kubectl delete resourceflavors.kueue.x-k8s.io restart-race-gpu >/dev/null
