# nodeprint: `make e2e` runs the suites against the committed fingerprints;
# `make test` runs every test. Both build what is missing first.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

include tools/toolchain/versions.mk
export K8S_VERSION ETCD_VERSION KWOK_VERSION METRICS_SERVER_VERSION KARPENTER_VERSION APPROVED_GOTOOLCHAIN KIND_NODE_SUITE KIND_NODE_MIRROR HELM_VERSION
# Never let the go command fetch a toolchain on its own: the build script
# chooses APPROVED_GOTOOLCHAIN explicitly where a module needs it.
export GOTOOLCHAIN ?= local

BIN := $(CURDIR)/bin
# Go modules of their own (kept out of the main module on purpose).
SUBMODULES := tools/karpenter tools/toolchain/kwok
GO_TEST_FLAGS ?=
SUITE_TIMEOUT ?= 40m

.PHONY: help
help: ## Show this help
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: tools
tools: toolchain nodeprint ## Build the pinned toolchain and the nodeprint CLI into bin/ (skips what is built)

.PHONY: toolchain
toolchain:
	@tools/toolchain/build.sh $(BIN) kubernetes etcd kwok metrics-server karpenter

.PHONY: karpenter-image helm
karpenter-image: ## Build Karpenter for a pod (static) and its image nodeprint/karpenter-kwok:<version>-<digest> into the local Docker engine, with the release's chart (kind --karpenter-in-cluster)
	@tools/toolchain/build.sh $(BIN) karpenter-image
helm: ## Build the helm CLI from its pinned module (installs Karpenter's chart for kind --karpenter-in-cluster)
	@tools/toolchain/build.sh $(BIN) helm

.PHONY: kind-node
kind-node: ## Build the kind node image nodeprint/kind-node:<K8S_VERSION> into the local Docker engine, no registry (debootstrap, Debian's containerd; about 8 min cold after make tools)
	@tools/toolchain/build.sh $(BIN) kubernetes etcd kind-node

.PHONY: nodeprint
nodeprint:
	@go build -o $(BIN)/nodeprint ./tools/nodeprint

.PHONY: test
test: tools ## Run every test: vet, unit tests with -race, the toolchain module's tests, the suites (the kind spec's images build beside them at the lowest priority)
	@GO_TEST_FLAGS='$(GO_TEST_FLAGS)' SUBMODULES='$(SUBMODULES)' MAKE='$(MAKE)' tools/ci/test.sh

# Suites run one package at a time (-p 1): each starts its own cluster, and
# two clusters competing for two cores would distort the timings the
# baseline suite verifies.
# With a label filter a suite that runs no spec fails (-ginkgo.fail-on-empty):
# a scenario directory that does not load is one entry without the scenarios'
# labels, which the filter would otherwise skip in silence.
# The log is long and CI keeps only its tail, so the packages' results,
# every failed spec and each failure's message are repeated at the end
# (tools/ci/suites-summary.awk; the whole log is in out/suites.log).
SUITE_LOG ?= out/suites.log
.PHONY: suites
suites:
	@mkdir -p out
	@rc=0; go test -p 1 -count=1 -v $(GO_TEST_FLAGS) -timeout $(SUITE_TIMEOUT) $(or $(SUITE_PACKAGES),./suites/...) -args -ginkgo.v $(if $(SUITE_LABEL_FILTER),-ginkgo.label-filter='$(SUITE_LABEL_FILTER)' -ginkgo.fail-on-empty) 2>&1 | tee $(SUITE_LOG) || rc=$$?; \
	echo; echo "suites: summary (full log: $(SUITE_LOG))"; \
	awk -f tools/ci/suites-summary.awk $(SUITE_LOG) || true; \
	exit $$rc

.PHONY: e2e
e2e: tools ## Start the local cluster, run the suites against the committed fingerprints, print the verdict tables (PROVIDER=kind: the baseline and fault catalogs on a kind cluster; KARPENTER=in-cluster: Karpenter in it from its chart, the fault catalog)
ifeq ($(PROVIDER),kind)
	@BIN=$(BIN) KARPENTER=$(KARPENTER) tools/ci/e2e-kind.sh
else
	@rm -rf out/suites
	@rc=0; $(MAKE) --no-print-directory suites || rc=$$?; \
	for f in out/suites/*/summary.md; do if [[ -f "$$f" ]]; then echo; cat "$$f"; fi; done; \
	echo; echo "reports (JSON, JUnit, HTML): out/suites/<suite>/"; exit $$rc
endif

.PHONY: scale-in
scale-in: tools ## Verify every committed scale-in baseline, attribute the scale-in fault scenarios and run the drift forecast's check (make test runs one scale-in, the smoke; about 33 min estimated: 20 min measured before the fault entry, which took 160 s alone, multi-node-consolidation, about 100 s a run, multi-node-into-busy-node, about 6 min a run, and single-node-consolidation, about 100 s a run, since)
	@$(MAKE) --no-print-directory suites SUITE_PACKAGES='./suites/baseline ./suites/explain ./suites/faults' SUITE_LABEL_FILTER='phase:scale-in'

.PHONY: accuracy
accuracy: tools ## Run every fault scenario RUNS times (default 3) and print the confusion matrix
	bin/nodeprint attribute --matrix --runs $(or $(RUNS),3) fixtures/scenarios/faults

# Two sets: mutants.yaml (scale-out: the baselines and limit faults, matrix
# in out/mutants/) and scale-in.yaml (the scale-in scenarios, matrix in
# out/mutants-scale-in/). MUTANTS picks mutants of one set: name it with
# MUTANT_SETS.
MUTANT_SETS ?= fixtures/mutants/mutants.yaml fixtures/mutants/scale-in.yaml
.PHONY: mutants
mutants: tools ## Build each mutated Karpenter of fixtures/mutants/ and run its set's scenarios with it (MUTANTS=a,b MUTANT_SETS=<file> for some); matrices in out/mutants/ and out/mutants-scale-in/ (about 45 min + the scale-in set's 3 h, estimated from its cells measured on 2026-12-07, and about 3 h more for slow-disruption's paired timing: 55 min measured on one of its four scenarios)
	@rc=0; for s in $(MUTANT_SETS); do \
		n=$$(basename "$$s" .yaml); out=out/mutants; [[ $$n == mutants ]] || out=out/mutants-$$n; \
		echo "mutants: $$s (matrix in $$out/)"; \
		go run ./tools/mutants -set "$$s" -out "$$out" $(if $(MUTANTS),-mutants $(MUTANTS)) $(MUTANTS_FLAGS) || rc=$$?; \
	done; exit $$rc

# karpenter-mutant builds one mutant by hand; tools/mutants and make
# sensitivity run the same build step through toolchain.BuildMutant:
#   make karpenter-mutant KARPENTER_MUTANT=name KARPENTER_MUTANT_PATCH=file
.PHONY: karpenter-mutant
karpenter-mutant:
	@tools/toolchain/build.sh $(BIN) karpenter-mutant

.PHONY: upgrade-check
upgrade-check: tools ## Run the catalog with Karpenter UPGRADE_TO (e.g. v1.15.0) against the committed baselines; report in out/upgrade/
	@[[ -n "$(UPGRADE_TO)" ]] || { echo "usage: make upgrade-check UPGRADE_TO=vX.Y.Z"; exit 2; }
	bin/nodeprint run fixtures/scenarios fixtures/scenarios/faults --karpenter-version $(UPGRADE_TO) --parallel $(or $(PARALLEL),4) --report-dir out/upgrade

.PHONY: retracted-release
retracted-release: tools ## Karpenter v1.11.1 must pass and v1.11.0 (CPU grows with the NodePools; retracted) must be flagged for Karpenter's CPU, against fingerprints/upgrade/v1.11/ (recorded on v1.11.1); reports in out/retracted/ (about 8 min)
	@rm -rf out/retracted
	KARPENTER_VERSION=v1.11.1 bin/nodeprint verify --fingerprints fingerprints/upgrade/v1.11 --report-dir out/retracted/v1.11.1 fixtures/scenarios/nodepools
	@rc=0; KARPENTER_VERSION=v1.11.1 bin/nodeprint verify --karpenter-version v1.11.0 --fingerprints fingerprints/upgrade/v1.11 --report-dir out/retracted/v1.11.0 fixtures/scenarios/nodepools || rc=$$?; \
	if [ $$rc -ne 1 ]; then echo "retracted-release: verify with v1.11.0 exited $$rc; it must exit 1 (a regression)"; exit 1; fi
	@jq -e '[.scenarios[] | select(.name == "runners-twenty-pools") | .diff.deviations[]? | select(.path == "karpenter.cpuSeconds")] | length > 0' out/retracted/v1.11.0/report.json >/dev/null || \
	{ echo "retracted-release: v1.11.0 was flagged, but not for Karpenter's CPU on runners-twenty-pools (out/retracted/v1.11.0/summary.md)"; exit 1; }
	@echo "retracted-release: v1.11.1 passes; v1.11.0 is flagged for Karpenter's CPU on runners-twenty-pools"

# kubernetes-sigs/karpenter#3006 (v1.14.0) keeps a node inside its own
# consolidateAfter from being a consolidation destination: beside a busy
# node v1.13 consolidates the small node (single-node) and the two quiet
# nodes (multi-node) while the busy node churns, v1.14 does not (#3225).
# The baselines are v1.13.0's; v1.14.1 and v1.15.0 (which keeps the change)
# must be flagged on the scale-in's decisions of every scenario.
CONSOLIDATION_SCENARIO ?= fixtures/scenarios/scale-in/consolidation-into-busy-node.yaml fixtures/scenarios/scale-in/multi-node-into-busy-node.yaml
.PHONY: consolidation-regression
consolidation-regression: tools ## Karpenter v1.13.0 must pass and v1.14.1 and v1.15.0 (a busy node is no consolidation destination, karpenter#3006) must be flagged on the scale-in's decisions of the single- and the multi-node scenario, against fingerprints/upgrade/v1.13/ (recorded on v1.13.0); reports in out/consolidation/ (about 55 min; CONSOLIDATION_SCENARIO=<file> for one)
	@rm -rf out/consolidation
	KARPENTER_VERSION=v1.13.0 bin/nodeprint verify --fingerprints fingerprints/upgrade/v1.13 --report-dir out/consolidation/v1.13.0 $(CONSOLIDATION_SCENARIO)
	@n=$(words $(CONSOLIDATION_SCENARIO)); for v in v1.14.1 v1.15.0; do \
		rc=0; KARPENTER_VERSION=v1.13.0 bin/nodeprint verify --karpenter-version $$v --fingerprints fingerprints/upgrade/v1.13 --report-dir out/consolidation/$$v $(CONSOLIDATION_SCENARIO) || rc=$$?; \
		if [ $$rc -ne 1 ]; then echo "consolidation-regression: verify with $$v exited $$rc; it must exit 1 (a regression)"; exit 1; fi; \
		jq -e --argjson n $$n '(.scenarios | length) == $$n' out/consolidation/$$v/report.json >/dev/null || \
		{ echo "consolidation-regression: $$v's report does not hold all $$n scenarios (out/consolidation/$$v/summary.md)"; exit 1; }; \
		jq -e 'all(.scenarios[]; [.diff.deviations[]? | select(.path | startswith("disruption."))] | length > 0)' out/consolidation/$$v/report.json >/dev/null || \
		{ echo "consolidation-regression: $$v was not flagged on the scale-in of every scenario (out/consolidation/$$v/summary.md)"; exit 1; }; \
		jq -e 'all(.scenarios[]; .verdict.layer == "L2")' out/consolidation/$$v/report.json >/dev/null || \
		{ echo "consolidation-regression: $$v was not attributed to L2 on every scenario (out/consolidation/$$v/summary.md)"; exit 1; }; \
	done
	@echo "consolidation-regression: v1.13.0 passes; v1.14.1 and v1.15.0 are flagged on the scale-in's decisions and attributed to L2"

.PHONY: sop
sop: tools ## Regenerate the runbooks in runbooks/ from the rules and the recorded fingerprints (commit the result)
	bin/nodeprint sop --out runbooks

.PHONY: bench
bench: tools ## Measure start, overhead, scale (100-5,000 pods), the pipeline and the catalog; table + out/bench/bench.json (about 15 min)
	go run ./tools/bench -out out/bench $(BENCH_FLAGS)

.PHONY: sensitivity
sensitivity: tools ## Paired verification's power and false alarms against Karpenter builds made slower or hungrier by a known amount, and A/A idle and loaded (web-service and cpu-heavy, 10 conditions: about 80 min each; SENSITIVITY_FLAGS="-scenarios X -conditions launch:1.25,cpu:1.5", -analyze re-reads out/sensitivity/pools.json, -method recorded measures the recorded-runs fallback)
	go run ./tools/sensitivity -out out/sensitivity $(SENSITIVITY_FLAGS)

.PHONY: soak
soak: tools ## Run the baseline and fault suites RUNS times (default 10, about 20 min each; RESUME=1 keeps finished ones); report every failure and changed verdict
	go run ./tools/soak -runs $(or $(RUNS),10) -out out/soak $(if $(RESUME),-resume) $(or $(SUITES),./suites/baseline ./suites/faults)

# Seeds (the committed scenarios and fingerprints, and testdata/fuzz/)
# run in make test as plain tests; this target searches for new inputs.
.PHONY: fuzz
fuzz: ## Fuzz the scenario and fingerprint decoders for FUZZTIME each (default 1m); new crashers land in testdata/fuzz/
	go test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),1m) ./pkg/scenario
	go test -run '^$$' -fuzz '^FuzzParseBaseline$$' -fuzztime $(or $(FUZZTIME),1m) ./pkg/fingerprint

.PHONY: lint
lint: ## gofmt and go vet on every module
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	@for m in $(SUBMODULES); do (cd $$m && go vet ./...); done

.PHONY: clean
clean: ## Remove bin/ and the harness's work directories (stop clusters first: nodeprint cluster down)
	rm -rf $(BIN) .work
