#!/usr/bin/env bash
# Builds nodeprint's toolchain from pinned Go module sources into BIN_DIR.
#
#   tools/toolchain/build.sh BIN_DIR COMPONENT...
#   COMPONENT: kubernetes etcd kwok metrics-server karpenter karpenter-mutant
#   (karpenter-mutant builds the pinned Karpenter with the patch
#   $KARPENTER_MUTANT_PATCH as mutant $KARPENTER_MUTANT: `make mutants`)
#
# Versions come from the environment (the Makefile exports them from
# tools/toolchain/versions.mk). The committed go.mod/go.sum of each build
# module pins the default version; another version is built in a scratch copy
# of that module (BIN_DIR/.build/) so the committed files never change.
# A stamp in BIN_DIR/.stamps/ records what was built; a component whose stamp
# and outputs are present is skipped.
#
# The build modules (tools/toolchain/NAME, tools/karpenter) are the
# checkout's, or those under $NODEPRINT_BUILD_MODULES/NAME: an installed
# nodeprint has no checkout and fetches them at its own version
# (pkg/toolchain).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$(mkdir -p "$1" && cd "$1" && pwd)
shift
stamps="$bin/.stamps"
mkdir -p "$stamps"
# One build into a bin/ at a time: two write the same outputs (seen: two
# karpenter-image builds at once, one removing the chart the other was
# copying). The lock goes with the process.
exec 9>>"$bin/.build.lock"
if ! flock -n 9; then
	printf '[toolchain] waiting for another build into %s to finish\n' "$bin" >&2
	flock 9
fi

: "${K8S_VERSION:?}" "${ETCD_VERSION:?}" "${KWOK_VERSION:?}" "${METRICS_SERVER_VERSION:?}" "${KARPENTER_VERSION:?}" "${APPROVED_GOTOOLCHAIN:?}"
: "${KIND_NODE_SUITE:?}" "${KIND_NODE_MIRROR:?}" "${HELM_VERSION:?}"

log() { printf '[toolchain] %s\n' "$*" >&2; }
die() { printf '[toolchain] error: %s\n' "$*" >&2; exit 1; }

local_go=$(GOTOOLCHAIN=local go env GOVERSION) # e.g. go1.26.8

# src_of NAME prints the directory of build module NAME.
src_of() {
	if [[ -n ${NODEPRINT_BUILD_MODULES:-} ]]; then
		echo "$NODEPRINT_BUILD_MODULES/$1"
	elif [[ $1 == karpenter ]]; then
		echo "$root/tools/karpenter"
	else
		echo "$here/$1"
	fi
}

# gotoolchain MODULE VERSION prints the GOTOOLCHAIN to build MODULE@VERSION
# with: "local" when the machine's Go is new enough, else the approved newer Go.
gotoolchain() {
	local out gomod need
	out=$(GOTOOLCHAIN=local GOFLAGS=-mod=mod go mod download -json "$1@$2" 2>&1 || true)
	if grep -q 'requires go' <<<"$out"; then
		# The machine's Go refuses the module outright.
		# (the JSON escapes ">" as \u003e: take the first dotted version after it)
		need=$(grep -o 'requires go [^(]*' <<<"$out" | grep -o '[0-9][0-9]*\.[0-9][0-9]*\(\.[0-9][0-9]*\)\{0,1\}' | head -1)
	else
		gomod=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' <<<"$out")
		[[ -n $gomod ]] || die "cannot download $1@$2 from the Go module proxy (is the version right?): $out"
		need=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$gomod" | head -1)
	fi
	if [[ -n $need && $(printf '%s\n%s\n' "${local_go#go}" "$need" | sort -V | tail -1) != "${local_go#go}" ]]; then
		log "$1@$2 needs go $need (machine has ${local_go}): using GOTOOLCHAIN=$APPROVED_GOTOOLCHAIN"
		echo "$APPROVED_GOTOOLCHAIN"
	else
		echo local
	fi
}

# module_dir NAME MODULE VERSION [EXTRA go mod edit ARGS...] prints the build
# module to use: the committed one when it already pins VERSION, else a
# scratch copy moved to VERSION.
module_dir() {
	local name=$1 module=$2 version=$3
	shift 3
	local src
	src=$(src_of "$name")
	if grep -qE "^[[:space:]]*(require )?$module $version( |$)" "$src/go.mod"; then
		echo "$src"
		return
	fi
	local dst="$bin/.build/$name-$version"
	log "preparing a build module for $module@$version in $dst"
	rm -rf "$dst" && mkdir -p "$dst" && cp -r "$src/." "$dst/"
	(cd "$dst" && GOTOOLCHAIN=$tc go mod edit -require="$module@$version" "$@" && GOTOOLCHAIN=$tc GOFLAGS=-mod=mod go mod tidy >&2) ||
		die "cannot resolve $module@$version; see the messages above"
	echo "$dst"
}

# copy_yaml SRC DST DIR... copies only the YAML files of SRC/DIR to DST/DIR:
# Go files among them would join the main module's ./... pattern.
copy_yaml() {
	local src=$1 dst=$2 d f
	shift 2
	for d in "$@"; do
		(cd "$src" && find "$d" -name '*.yaml' -not -path '*/testdata/*') | while read -r f; do
			mkdir -p "$dst/$(dirname "$f")"
			cp "$src/$f" "$dst/$f"
		done
	done
	chmod -R u+w "$dst"
}

stamp_ok() { # stamp_ok FILE CONTENT OUTPUT...
	local f=$1 want=$2
	shift 2
	[[ -f $f && $(cat "$f") == "$want" ]] || return 1
	local o
	for o in "$@"; do [[ -e $o ]] || return 1; done
}

# kubernetes_module PRINTS the build module of k8s.io/kubernetes@$K8S_VERSION
# (k8s.io/kubernetes replaces its staging modules with local paths; the
# build module replaces each with its published version instead) and sets
# tc and kube_ldflags for building from it.
kubernetes_module() {
	local v=$K8S_VERSION minor patch staging
	minor=$(echo "$v" | cut -d. -f2)
	patch=$(echo "$v" | cut -d. -f3)
	staging="v0.$minor.$patch"
	tc=$(gotoolchain k8s.io/kubernetes "$v")
	local reps=() m
	for m in $(sed -n 's/^[[:space:]]*\(k8s.io\/[a-z0-9-]*\) => \(k8s.io\/[a-z0-9-]*\) v0.*/\1/p' "$(src_of kubernetes)/go.mod"); do
		reps+=("-replace=$m=$m@$staging")
	done
	local V=k8s.io/component-base/version
	kube_ldflags="-s -w -X $V.gitVersion=$v -X $V.gitMajor=1 -X $V.gitMinor=$minor -X $V.gitTreeState=clean -X $V.buildDate=1970-01-01T00:00:00Z"
	kube_dir=$(module_dir kubernetes k8s.io/kubernetes "$v" "${reps[@]}")
}

# Kubernetes binaries are static (CGO_ENABLED=0), as upstream releases them:
# the same build serves the local provider and the kind node image's
# control-plane images, which have no C library.
build_kubernetes() {
	local v=$K8S_VERSION
	local outs=("$bin/kube-apiserver" "$bin/kube-controller-manager" "$bin/kube-scheduler" "$bin/kubectl")
	local want="kubernetes $v static"
	stamp_ok "$stamps/kubernetes" "$want" "${outs[@]}" && { log "kubernetes $v: up to date"; return; }
	kubernetes_module
	log "building kube-apiserver, kube-controller-manager, kube-scheduler, kubectl $v (the longest step: about 5 minutes with an empty build cache on an idle 2-core machine, longer when the cores are shared)"
	(cd "$kube_dir" && CGO_ENABLED=0 GOTOOLCHAIN=$tc go build -trimpath -ldflags "$kube_ldflags" \
		-o "$bin/" k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubectl)
	echo "$want" >"$stamps/kubernetes"
}

build_etcd() {
	local v=$ETCD_VERSION want="etcd $ETCD_VERSION static"
	stamp_ok "$stamps/etcd" "$want" "$bin/etcd" && { log "etcd $v: up to date"; return; }
	tc=$(gotoolchain go.etcd.io/etcd/server/v3 "$v")
	local dir
	dir=$(module_dir etcd go.etcd.io/etcd/server/v3 "$v")
	log "building etcd $v"
	(cd "$dir" && CGO_ENABLED=0 GOTOOLCHAIN=$tc go build -trimpath -ldflags "-s -w" -o "$bin/etcd" .)
	echo "$want" >"$stamps/etcd"
}

build_kwok() {
	local v=$KWOK_VERSION want="kwok $KWOK_VERSION"
	stamp_ok "$stamps/kwok" "$want" "$bin/kwok" "$bin/kwokctl" "$bin/kwok-kustomize/stage" "$bin/kwok-kustomize/crd" && { log "kwok $v: up to date"; return; }
	tc=$(gotoolchain sigs.k8s.io/kwok "$v")
	local dir
	dir=$(module_dir kwok sigs.k8s.io/kwok "$v")
	log "building kwok and kwokctl $v"
	(cd "$dir" && GOTOOLCHAIN=$tc go build -trimpath -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${v#v}" \
		-o "$bin/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
	# KWOK's own stages and metrics configs, taken from the same module, so the
	# harness can pass them to kwokctl next to the project's own stages; its
	# CRDs for the kind provider, where no kwokctl installs them.
	local src
	src=$(cd "$dir" && GOTOOLCHAIN=$tc go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
	rm -rf "$bin/kwok-kustomize" && mkdir -p "$bin/kwok-kustomize"
	copy_yaml "$src/kustomize" "$bin/kwok-kustomize" stage metrics crd
	chmod -R u+w "$bin/kwok-kustomize"
	echo "$want" >"$stamps/kwok"
}

build_metrics_server() {
	local v=$METRICS_SERVER_VERSION want="metrics-server $METRICS_SERVER_VERSION"
	stamp_ok "$stamps/metrics-server" "$want" "$bin/metrics-server" "$bin/metrics-server-manifests/base" && { log "metrics-server $v: up to date"; return; }
	tc=$(gotoolchain sigs.k8s.io/metrics-server "$v")
	local dir
	dir=$(module_dir metrics-server sigs.k8s.io/metrics-server "$v")
	log "building metrics-server $v"
	(cd "$dir" && GOTOOLCHAIN=$tc go build -trimpath -ldflags "-s -w" -o "$bin/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server)
	local src
	src=$(cd "$dir" && GOTOOLCHAIN=$tc go list -m -f '{{.Dir}}' sigs.k8s.io/metrics-server)
	rm -rf "$bin/metrics-server-manifests" && mkdir -p "$bin/metrics-server-manifests"
	copy_yaml "$src/manifests" "$bin/metrics-server-manifests" base
	chmod -R u+w "$bin/metrics-server-manifests"
	echo "$want" >"$stamps/metrics-server"
}

# karpenter_tags VERSION selects the controller wiring in tools/karpenter
# (controllers_v114.go or controllers_v115.go) for that release line; the
# v1.14 wiring is also kwok/main.go's from v1.11.0 to v1.14.x (compared).
karpenter_tags() {
	if [[ $(printf '%s\n%s\n' "${1#v}" "1.15.0" | sort -V | head -1) == "1.15.0" ]]; then
		echo karpenter_v115
	fi
}

# karpenter_sources_digest: the project's own sources are part of the
# stamp: a change to the capacity decorator must rebuild the binary.
karpenter_sources_digest() {
	(cd "$(src_of karpenter)" && find . -name '*.go' -o -name 'go.mod' -o -name 'go.sum' | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)
}

# karpenter_compile NAME [PATCH] [BIND]: copies the pinned module of
# $KARPENTER_VERSION to bin/.build/karpenter-src-NAME, binds its servers to
# loopback (BIND "pod": leaves upstream's binding, every interface, and
# builds static, for the in-cluster image), applies PATCH (a unified diff
# against the module, -p1) when given, and builds tools/karpenter against it
# into $out/karpenter-kwok. Sets $src to the module's directory in the
# module cache.
karpenter_compile() {
	local name=$1 patch=${2:-} bind=${3:-loopback} v=$KARPENTER_VERSION cgo=${CGO_ENABLED:-}
	tc=$(gotoolchain sigs.k8s.io/karpenter "$v")
	# Another release is built with its own dependencies: the committed
	# go.mod pins the pinned release's, and minimal version selection would
	# keep the newer of each (an older release then does not compile:
	# v1.11.0 against the operatorpkg of v1.14.1). go mod tidy adds back
	# what tools/karpenter imports, at the versions the release requires.
	local drops=() m
	for m in $(sed -n '/^require (/,/^)/{/^require (/d;/^)/d;p}' "$(src_of karpenter)/go.mod" | awk '{print $1}'); do
		[[ $m == sigs.k8s.io/karpenter ]] || drops+=("-droprequire=$m")
	done
	local dir
	dir=$(module_dir karpenter sigs.k8s.io/karpenter "$v" "${drops[@]}")
	mkdir -p "$out" "$bin/.build"
	src=$(cd "$dir" && GOTOOLCHAIN=$tc go list -m -f '{{.Dir}}' sigs.k8s.io/karpenter)
	# Karpenter binds its metrics and health servers to ":port", every
	# interface. The local cluster listens on loopback only, so Karpenter is
	# built from a copy of its module whose operator.go binds 127.0.0.1
	# (go build -overlay may not replace files in the module cache).
	# (CheckKarpenterBinary accepts only a build against karpenter-src-*:
	# the pod's build, bound as upstream binds, is named apart.)
	local patched="$bin/.build/karpenter-src-$name" build="$bin/.build/karpenter-main-$name"
	[[ $bind == loopback ]] || patched="$bin/.build/karpenter-pod-src-$name"
	rm -rf "$patched" "$build" && mkdir -p "$patched" "$build"
	cp -r "$src/." "$patched/" && chmod -R u+w "$patched"
	local op="$patched/pkg/operator/operator.go"
	if [[ $bind == loopback ]]; then
		[[ $(grep -c 'fmt.Sprintf(":%d"' "$op") -ge 2 ]] ||
			die "karpenter $v: pkg/operator/operator.go no longer binds with fmt.Sprintf(\":%d\", ...); update the loopback patch in $0"
		sed -i 's/fmt.Sprintf(":%d"/fmt.Sprintf("127.0.0.1:%d"/g' "$op"
	else
		# In a pod: the kubelet probes the pod's address, and the image has
		# no C library.
		cgo=0
	fi
	if [[ -n $patch ]]; then
		# --dry-run first: a patch that no longer applies (another
		# release) changes nothing and says which hunk failed.
		(cd "$patched" && patch -p1 --batch --forward --dry-run --quiet <"$patch" >/dev/null) ||
			die "karpenter $v: $patch does not apply to sigs.k8s.io/karpenter@$v: $(cd "$patched" && patch -p1 --batch --forward --dry-run <"$patch" 2>&1 | grep -i 'fail\|can.t find\|reversed' | head -3)"
		(cd "$patched" && patch -p1 --batch --forward --quiet <"$patch")
	fi
	cp -r "$dir/." "$build/"
	# -o names the file: `go install sigs.k8s.io/karpenter/kwok` would call it
	# kwok and overwrite the KWOK controller.
	# A relative replace path: the binary's build info records it, and an
	# absolute one would make every checkout's binary differ, while the
	# baselines record the binary's digest (a changed digest reads as a
	# changed Karpenter). -trimpath removes the rest of the paths.
	(cd "$build" && GOTOOLCHAIN=$tc go mod edit -replace "sigs.k8s.io/karpenter=../$(basename "$patched")" &&
		CGO_ENABLED=$cgo GOTOOLCHAIN=$tc go build -trimpath -tags "$(karpenter_tags "$v")" -ldflags "-s -w" -o "$out/karpenter-kwok" .) ||
		if [[ -n $patch ]]; then
			die "karpenter $v with $patch does not compile (the compiler's error is above): fix the patch"
		else
			die "karpenter $v did not build with tools/karpenter/main.go; its kwok/main.go may have changed (compare with the module's kwok/main.go)"
		fi
}

build_karpenter() {
	local v=$KARPENTER_VERSION out="$bin/karpenter/$KARPENTER_VERSION"
	# recipe: bump it when the build itself changes, so that every checkout
	# rebuilds (2: the patched module is replaced by a relative path).
	local want
	want="karpenter $KARPENTER_VERSION sources $(karpenter_sources_digest) recipe 2"
	stamp_ok "$stamps/karpenter-$v" "$want" "$out/karpenter-kwok" "$out/crds" "$out/instance_types.json" && { log "karpenter $v: up to date"; return; }
	log "building karpenter $v with the KWOK provider and nodeprint's capacity decorator"
	karpenter_compile "$v"
	rm -rf "$out/crds" && mkdir -p "$out/crds"
	cp "$src"/kwok/charts/crds/*.yaml "$src"/kwok/apis/crds/*.yaml "$out/crds/"
	cp "$src/kwok/cloudprovider/instance_types.json" "$out/instance_types.json"
	cp "$src/kwok/examples/aws_instance_types.json" "$out/aws_instance_types.json" 2>/dev/null || true
	chmod -R u+w "$out"
	echo "$want" >"$stamps/karpenter-$v"
}

# build_karpenter_mutant: the pinned Karpenter with one more patch
# ($KARPENTER_MUTANT_PATCH), as bin/karpenter/VERSION/mutants/NAME/karpenter-kwok
# (`make mutants`, fixtures/mutants/). The release's CRDs and catalog serve it.
build_karpenter_mutant() {
	local v=$KARPENTER_VERSION name=${KARPENTER_MUTANT:?set KARPENTER_MUTANT to the mutant\'s name}
	local patch=${KARPENTER_MUTANT_PATCH:?set KARPENTER_MUTANT_PATCH to the mutant\'s patch file}
	[[ $name =~ ^[a-z0-9][a-z0-9-]*$ ]] || die "KARPENTER_MUTANT=$name: want lower-case letters, digits and dashes"
	[[ -f $patch ]] || die "KARPENTER_MUTANT_PATCH=$patch: no such file"
	patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
	local out="$bin/karpenter/$v/mutants/$name" want
	want="karpenter-mutant $v $name sources $(karpenter_sources_digest) patch $(sha256sum <"$patch" | cut -c1-16) recipe 2"
	stamp_ok "$stamps/karpenter-$v-mutant-$name" "$want" "$out/karpenter-kwok" && { log "karpenter $v mutant $name: up to date"; return; }
	log "building karpenter $v mutant $name ($(basename "$patch"))"
	karpenter_compile "$v-mutant-$name" "$patch"
	echo "$want" >"$stamps/karpenter-$v-mutant-$name"
}

# build_karpenter_image: Karpenter as its chart runs it in a cluster (the
# kind provider's --karpenter-in-cluster, as Karpenter's own CI runs it):
# the pinned release with the capacity decorator, static and bound as
# upstream binds it, in the image nodeprint/karpenter-kwok:VERSION-DIGEST
# (FROM scratch, as ko builds upstream's: nothing to pull), and the release's
# chart (kwok/charts, without its CRDs: nodeprint applies those) beside it
# in bin/karpenter/VERSION/in-cluster.
build_karpenter_image() {
	local v=$KARPENTER_VERSION out="$bin/karpenter/$KARPENTER_VERSION/in-cluster" want image
	command -v docker >/dev/null || die "karpenter-image: no docker command (the image is built into a Docker engine)"
	want="karpenter-image $v sources $(karpenter_sources_digest) recipe 1"
	if stamp_ok "$stamps/karpenter-image-$v" "$want" "$out/karpenter-kwok" "$out/image" "$out/chart/Chart.yaml" &&
		docker image inspect "$(cat "$out/image")" >/dev/null 2>&1; then
		log "karpenter $v image: up to date"
		return
	fi
	log "building karpenter $v for a pod (static, upstream's binding) and its image"
	karpenter_compile "$v-in-cluster" "" pod
	rm -rf "$out/chart" && cp -r "$src/kwok/charts" "$out/chart" && chmod -R u+w "$out/chart" && rm -rf "$out/chart/crds"
	image="nodeprint/karpenter-kwok:$v-$(sha256sum "$out/karpenter-kwok" | cut -c1-12)"
	local ctx="$bin/.build/karpenter-image"
	rm -rf "$ctx" && mkdir -p "$ctx" && cp "$out/karpenter-kwok" "$ctx/karpenter"
	printf 'FROM scratch\nCOPY karpenter /ko-app/karpenter\nENTRYPOINT ["/ko-app/karpenter"]\n' >"$ctx/Dockerfile"
	docker build -q -t "$image" "$ctx" >/dev/null 2>"$ctx/build.log" || die "karpenter-image: docker build of $image failed; see $ctx/build.log"
	echo "$image" >"$out/image"
	echo "$want" >"$stamps/karpenter-image-$v"
	log "karpenter $v image: $image"
}

# build_helm: the helm CLI at $HELM_VERSION from its module (the kind
# provider installs Karpenter's chart with it); tools/toolchain/helm pins it.
build_helm() {
	local v=$HELM_VERSION want="helm $HELM_VERSION static"
	stamp_ok "$stamps/helm" "$want" "$bin/helm" && { log "helm $v: up to date"; return; }
	tc=$(gotoolchain helm.sh/helm/v4 "$v")
	local dir
	dir=$(module_dir helm helm.sh/helm/v4 "$v")
	log "building helm $v"
	(cd "$dir" && CGO_ENABLED=0 GOTOOLCHAIN=$tc go build -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$v" -o "$bin/helm" helm.sh/helm/v4/cmd/helm)
	echo "$want" >"$stamps/helm"
}

# shellcheck source=kind-node/build.sh
source "$here/kind-node/build.sh"

[[ $# -gt 0 ]] || set -- kubernetes etcd kwok metrics-server karpenter
for c in "$@"; do
	tc=local
	case $c in
	kubernetes) build_kubernetes ;;
	etcd) build_etcd ;;
	kwok) build_kwok ;;
	metrics-server) build_metrics_server ;;
	karpenter) build_karpenter ;;
	karpenter-mutant) build_karpenter_mutant ;;
	kind-node) build_kind_node ;;
	karpenter-image) build_karpenter_image ;;
	helm) build_helm ;;
	*) die "unknown component $c (want kubernetes, etcd, kwok, metrics-server, karpenter, karpenter-mutant, kind-node, karpenter-image or helm)" ;;
	esac
done
