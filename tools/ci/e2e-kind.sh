#!/usr/bin/env bash
# make e2e PROVIDER=kind: the baseline and fault catalogs on a kind cluster
# nodeprint creates (building its node image if the engine lacks it) and
# deletes, also when a step fails or on Ctrl-C. Reports in out/e2e-kind/.
# Scenarios whose workloads scale with an HPA are left out and named: the
# kind provider serves no pod metrics and refuses them (docs/cluster.md).
# KARPENTER=in-cluster runs Karpenter in the cluster from its chart: the
# fault catalog only (the committed baselines were recorded with Karpenter
# as a process, another binary), apiserver-degraded left out and named.
set -euo pipefail
bin=${BIN:-bin}
out=${OUT:-out/e2e-kind}
name=e2e-kind-$$
placement=()
case ${KARPENTER:=process} in
process) ;;
in-cluster) placement=(--karpenter-in-cluster) ;;
*) echo "e2e-kind: KARPENTER=$KARPENTER: want process or in-cluster" >&2; exit 2 ;;
esac
rm -rf "$out" && mkdir -p "$out"
down() { "$bin/nodeprint" cluster down --provider kind --name "$name" >/dev/null 2>&1 || true; }
trap down EXIT
trap 'exit 130' INT TERM
start=$(date +%s)
"$bin/nodeprint" cluster up --provider kind "${placement[@]}" --name "$name" --timeout 20m
faults=()
for f in fixtures/scenarios/faults/*.yaml; do
	if grep -q '^ *hpa:' "$f"; then
		echo "e2e-kind: leaving out $f (an HPA; the kind provider serves no pod metrics)"
	elif [[ ${#placement[@]} -gt 0 && $f == */apiserver-degraded.yaml ]]; then
		echo "e2e-kind: leaving out $f (it needs Karpenter as a process of this machine)"
	else
		faults+=("$f")
	fi
done
rc=0
if [[ ${#placement[@]} -eq 0 ]]; then
	"$bin/nodeprint" verify fixtures/scenarios --provider kind --cluster "$name" --report-dir "$out/baselines" || rc=$?
else
	echo "e2e-kind: baselines not verified: the committed ones were recorded with Karpenter as a process, another binary than the in-cluster image's"
fi
"$bin/nodeprint" run "${faults[@]}" --provider kind --cluster "$name" --report-dir "$out/faults" || { r=$?; [[ $rc -ne 0 ]] || rc=$r; }
for f in "$out"/*/summary.md; do echo; cat "$f"; done
echo; echo "e2e-kind: $(($(date +%s) - start)) s; reports (JSON, JUnit, HTML): $out/<baselines|faults>/"
exit "$rc"
