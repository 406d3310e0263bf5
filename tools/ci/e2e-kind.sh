#!/usr/bin/env bash
# make e2e PROVIDER=kind: the baseline and fault catalogs on a kind cluster
# nodeprint creates (building its node image if the engine lacks it) and
# deletes, also when a step fails or on Ctrl-C. Reports in out/e2e-kind/.
# Scenarios whose workloads scale with an HPA are left out and named: the
# kind provider serves no pod metrics and refuses them (docs/cluster.md).
set -euo pipefail
bin=${BIN:-bin}
out=${OUT:-out/e2e-kind}
name=e2e-kind-$$
rm -rf "$out" && mkdir -p "$out"
down() { "$bin/nodeprint" cluster down --provider kind --name "$name" >/dev/null 2>&1 || true; }
trap down EXIT
trap 'exit 130' INT TERM
start=$(date +%s)
"$bin/nodeprint" cluster up --provider kind --name "$name" --timeout 20m
faults=()
for f in fixtures/scenarios/faults/*.yaml; do
	if grep -q '^ *hpa:' "$f"; then
		echo "e2e-kind: leaving out $f (an HPA; the kind provider serves no pod metrics)"
	else
		faults+=("$f")
	fi
done
rc=0
"$bin/nodeprint" verify fixtures/scenarios --provider kind --cluster "$name" --report-dir "$out/baselines" || rc=$?
"$bin/nodeprint" run "${faults[@]}" --provider kind --cluster "$name" --report-dir "$out/faults" || { r=$?; [[ $rc -ne 0 ]] || rc=$r; }
for f in "$out"/*/summary.md; do echo; cat "$f"; done
echo; echo "e2e-kind: $(($(date +%s) - start)) s; reports (JSON, JUnit, HTML): $out/<baselines|faults>/"
exit "$rc"
