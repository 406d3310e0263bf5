#!/usr/bin/env bash
# make test: vet, the unit tests with -race, the toolchain modules' tests and
# the suites, in that order, with the kind spec's images built beside them.
#
# The lifecycle suite's kind spec needs the kind node image, helm and
# Karpenter's in-cluster image. Cold, those builds take about 17 minutes, and
# built in the spec they would add all of it to make test. Here they start
# first, in their own process group at the lowest CPU and I/O priority, so
# they take what the tests leave idle (the suites mostly wait on clusters);
# the kind spec's own build waits for them on the build lock of bin/
# (tools/toolchain/build.sh) and finds them built. This script owns that
# build: it is stopped when the tests end, fail or are interrupted.
#
#   tools/ci/test.sh   (GO_TEST_FLAGS, SUBMODULES and MAKE from the Makefile)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${MAKE:=make}"
mkdir -p out
prebuild_log=out/kind-prebuild.log
prebuild_pid=

stop_prebuild() {
	if [[ -n $prebuild_pid ]] && kill -0 "$prebuild_pid" 2>/dev/null; then
		echo "make test: stopping the kind images' build (log: $prebuild_log)"
		kill -TERM -- "-$prebuild_pid" 2>/dev/null || true
		wait "$prebuild_pid" 2>/dev/null || true
	fi
}
trap stop_prebuild EXIT
trap 'exit 130' INT TERM

# Only where the engine answers: without one the kind spec says why it does not run.
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	echo "make test: building the kind images beside the tests at the lowest priority (log: $prebuild_log)"
	low=(nice -n 19)
	command -v ionice >/dev/null && low+=(ionice -c 3)
	setsid "${low[@]}" bash -c 'start=$SECONDS; '"$MAKE"' --no-print-directory kind-node helm karpenter-image; rc=$?; echo "kind images: exit $rc after $((SECONDS - start)) s"; exit $rc' >"$prebuild_log" 2>&1 &
	prebuild_pid=$!
else
	echo "make test: no Docker engine answers; the kind images are not built ahead" >"$prebuild_log"
fi

go vet ./...
# shellcheck disable=SC2086 # GO_TEST_FLAGS is a list of flags
go test -race ${GO_TEST_FLAGS:-} ./pkg/... ./tools/... ./internal/... ./examples/...
for m in ${SUBMODULES:?}; do
	echo "go test ($m)"
	# shellcheck disable=SC2086
	(cd "$m" && go vet ./... && go test -count=1 ${GO_TEST_FLAGS:-} ./...)
done
rc=0
# A scale-in runs for minutes: make test verifies one (the smoke), make e2e
# and make scale-in every one.
echo "make test: the suites, without the scale-in catalog beyond its smoke (label ${SCALE_IN_CATALOG:=scale-in:catalog}: make e2e, make scale-in)"
"$MAKE" --no-print-directory suites SUITE_LABEL_FILTER="!$SCALE_IN_CATALOG" || rc=$?
# Still building when the suites are done: nothing waits for it any more.
if [[ -n $prebuild_pid ]] && kill -0 "$prebuild_pid" 2>/dev/null; then
	stop_prebuild
	echo "make test: the kind images' build had not finished when the suites did; stopped"
else
	echo "make test: the kind images' build beside the tests: $(tail -n 1 "$prebuild_log")"
fi
exit $rc
