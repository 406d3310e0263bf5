#!/usr/bin/env bash
# make test: vet, the unit tests with -race and the toolchain modules' tests
# beside the suites that do not time anything, then the suites that do.
#
# What runs beside the suites, in their own process groups at the lowest CPU
# and I/O priority, so they take what the suites leave idle (the suites
# mostly wait on clusters):
#
# - the unit tests: go vet, go test -race (and pkg/sensitivity's committed
#   pool replays without it) and the toolchain modules' tests.
#   Cold they take about 10 minutes, nearly all of it compiling with the
#   race detector; run first, in line, they added all of it to make test.
# - the kind spec's images (the kind node image, helm, Karpenter's
#   in-cluster image): about 17 minutes cold. The kind spec's own build
#   waits for them on the build lock of bin/ (tools/toolchain/build.sh).
#
# The suites run in two groups. The first (every suite but the timed ones)
# runs beside that background work. The timed suites (TIMED_SUITES: paired
# timing checks and their smokes) run after it, once the unit tests have
# ended, so that nothing of make test's own compiles beside them; only the
# kind images' build, already at the lowest priority, may still be running.
# The unit tests' result is reported when they end and again at the end;
# make test fails if they failed. This script owns the background work: it
# is stopped when the tests end, fail or are interrupted.
#
#   tools/ci/test.sh   (GO_TEST_FLAGS, SUBMODULES and MAKE from the Makefile)
set -euo pipefail
cd "$(dirname "$0")/../.."
: "${MAKE:=make}"
: "${TIMED_SUITES:=./suites/baseline ./suites/mutants}"
mkdir -p out
prebuild_log=out/kind-prebuild.log
unit_log=out/unit-tests.log
prebuild_pid=
unit_pid=

low=(nice -n 19)
command -v ionice >/dev/null && low+=(ionice -c 3)

stop_group() { # stop_group PID WHAT LOG
	if [[ -n $1 ]] && kill -0 "$1" 2>/dev/null; then
		echo "make test: stopping $2 (log: $3)"
		kill -TERM -- "-$1" 2>/dev/null || true
		wait "$1" 2>/dev/null || true
	fi
}
stop_background() {
	stop_group "$unit_pid" "the unit tests" "$unit_log"
	stop_group "$prebuild_pid" "the kind images' build" "$prebuild_log"
}
trap stop_background EXIT
trap 'exit 130' INT TERM

# Only where the engine answers: without one the kind spec says why it does not run.
if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
	echo "make test: building the kind images beside the tests at the lowest priority (log: $prebuild_log)"
	setsid "${low[@]}" bash -c 'start=$SECONDS; '"$MAKE"' --no-print-directory kind-node helm karpenter-image; rc=$?; echo "kind images: exit $rc after $((SECONDS - start)) s"; exit $rc' >"$prebuild_log" 2>&1 &
	prebuild_pid=$!
else
	echo "make test: no Docker engine answers; the kind images are not built ahead" >"$prebuild_log"
fi

echo "make test: go vet, the unit tests with -race and the toolchain modules' tests beside the untimed suites, at the lowest priority (log: $unit_log)"
# shellcheck disable=SC2016 # expanded by the inner shell
setsid "${low[@]}" env GO_TEST_FLAGS="${GO_TEST_FLAGS:-}" SUBMODULES="${SUBMODULES:?}" bash -c '
	set -euo pipefail
	start=$SECONDS
	trap '\''echo "unit tests: exit $? after $((SECONDS - start)) s"'\'' EXIT
	go vet ./...
	# shellcheck disable=SC2086 # GO_TEST_FLAGS is a list of flags
	go test -race $GO_TEST_FLAGS ./pkg/... ./tools/... ./internal/... ./examples/...
	# The committed sensitivity pools replay without the race detector
	# (pkg/sensitivity/pools_test.go is built !race): 4 minutes less.
	# shellcheck disable=SC2086
	go test $GO_TEST_FLAGS ./pkg/sensitivity/
	for m in $SUBMODULES; do
		echo "go test ($m)"
		(cd "$m" && go vet ./... && go test -count=1 $GO_TEST_FLAGS ./...)
	done' >"$unit_log" 2>&1 &
unit_pid=$!

# The suites' packages, the timed ones apart. A scale-in runs for minutes:
# make test verifies one (the smoke), make e2e and make scale-in every one.
untimed=()
for p in $(go list ./suites/...); do
	rel=./${p#*/nodeprint/nodeprint/}
	[[ " $TIMED_SUITES " == *" $rel "* ]] || untimed+=("$rel")
done
filter="!${SCALE_IN_CATALOG:=scale-in:catalog}"
rc=0
echo "make test: the untimed suites (${untimed[*]}), without the scale-in catalog beyond its smoke (label $SCALE_IN_CATALOG: make e2e, make scale-in)"
"$MAKE" --no-print-directory suites SUITE_PACKAGES="${untimed[*]}" SUITE_LABEL_FILTER="$filter" SUITE_LOG=out/suites-untimed.log || rc=$?

unit_rc=0
if kill -0 "$unit_pid" 2>/dev/null; then
	echo "make test: waiting for the unit tests before the timed suites (log: $unit_log)"
fi
wait "$unit_pid" || unit_rc=$?
unit_pid=
echo "make test: $(tail -n 1 "$unit_log")"
if ((unit_rc != 0)); then
	echo "make test: the unit tests failed; their log ($unit_log) ends:"
	tail -n 40 "$unit_log"
	rc=1
fi

echo "make test: the timed suites ($TIMED_SUITES), alone but for the kind images' build"
# shellcheck disable=SC2086 # TIMED_SUITES is a list of packages
"$MAKE" --no-print-directory suites SUITE_PACKAGES="$TIMED_SUITES" SUITE_LABEL_FILTER="$filter" SUITE_LOG=out/suites-timed.log || rc=$?
cat out/suites-untimed.log out/suites-timed.log >out/suites.log

# Still building when the suites are done: nothing waits for it any more.
if [[ -n $prebuild_pid ]] && kill -0 "$prebuild_pid" 2>/dev/null; then
	stop_group "$prebuild_pid" "the kind images' build" "$prebuild_log"
	echo "make test: the kind images' build had not finished when the suites did; stopped"
else
	echo "make test: the kind images' build beside the tests: $(tail -n 1 "$prebuild_log")"
fi
if ((unit_rc != 0)); then
	echo "make test: FAILED: the unit tests (exit $unit_rc; log: $unit_log)"
fi
exit $rc
