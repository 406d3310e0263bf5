# The one place where the toolchain's versions are pinned. Override any of
# them from the environment or the make command line, for instance
#   KARPENTER_VERSION=v1.15.0 make tools
# The Go harness reads this file too (pkg/toolchain), so it finds the same
# binaries the Makefile builds.
K8S_VERSION ?= v1.36.3
ETCD_VERSION ?= v3.6.8
KWOK_VERSION ?= v0.8.0
METRICS_SERVER_VERSION ?= v0.8.0
KARPENTER_VERSION ?= v1.14.1
# The only newer Go this project may fetch, used when a pinned module needs a
# newer Go than the machine's (Karpenter v1.14.3 and later do).
APPROVED_GOTOOLCHAIN ?= go1.27.3
# The kind node image (`make kind-node`): its Debian root filesystem's suite
# and the mirror debootstrap reads it from (containerd, runc and the CNI
# plugins are that suite's packages).
KIND_NODE_SUITE ?= bookworm
KIND_NODE_MIRROR ?= http://deb.debian.org/debian
# helm, which installs Karpenter's chart when the kind provider runs it in
# the cluster (--karpenter-in-cluster; `make karpenter-image helm`).
HELM_VERSION ?= v4.3.2
