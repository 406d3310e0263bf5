# Sourced by tools/toolchain/build.sh: build_kind_node builds the kind node
# image nodeprint/kind-node:$K8S_VERSION into the local Docker engine, with
# no registry (docs/cluster.md#the-node-image says what each part is built
# from and why):
#   - the root filesystem: Debian $KIND_NODE_SUITE by debootstrap, with
#     kind's own package list where Debian has it, and containerd, runc and
#     the CNI plugins from Debian's packages of that suite;
#   - kind's base files (entrypoint, units, containerd config, /kind/bin)
#     from the pinned kind module (go.mod), adjusted for Debian's paths;
#   - kubelet, kubeadm, kubectl and every control-plane image from the
#     pinned Kubernetes module, static as upstream builds them; etcd from
#     the pinned etcd module; pause from the Kubernetes module's pause.c;
#   - the images preloaded into the node's containerd under exactly the
#     names kubeadm lists for $K8S_VERSION, as `kind build node-image` does.
# A stamp of every input makes a second build a no-op.

kind_node_image() { echo "nodeprint/kind-node:$K8S_VERSION"; }

# kind_node_packages: kind's base image packages that Debian has, minus the
# storage clients nodeprint never uses (nfs-common, open-iscsi), plus the
# runtime kind builds itself (containerd, runc, CNI plugins) and dbus.
kind_node_packages() {
	echo systemd,systemd-sysv,dbus,conntrack,iptables,nftables,iproute2,ethtool,util-linux,mount,kmod,libseccomp2,pigz,fuse-overlayfs,e2fsprogs,bash,ca-certificates,curl,jq,procps,containerd,runc,containernetworking-plugins
}

kind_module_dir() {
	(cd "$root" && go list -m -f '{{.Dir}}' sigs.k8s.io/kind)
}

build_kind_node() {
	command -v docker >/dev/null || die "kind-node: no docker command (the node image is built into a Docker engine)"
	command -v debootstrap >/dev/null || die "kind-node: no debootstrap (apt-get install debootstrap)"
	local work="$bin/.build/kind-node" kindsrc image
	image=$(kind_node_image)
	kindsrc=$(kind_module_dir) || die "kind-node: cannot find the kind module"
	local inputs want
	inputs=$(cd "$here/kind-node" && find . -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
	want="kind-node $K8S_VERSION etcd $ETCD_VERSION suite $KIND_NODE_SUITE kind $(basename "$kindsrc") recipe $inputs"
	if stamp_ok "$stamps/kind-node" "$want" && docker image inspect "$image" >/dev/null 2>&1; then
		log "kind node image $image: up to date"
		return
	fi
	mkdir -p "$work"
	kind_node_binaries "$work/bin"
	kind_node_rootfs "$work" "$kindsrc"
	kind_node_images "$work"
	kind_node_assemble "$work" "$image"
	echo "$want" >"$stamps/kind-node"
}

# kind_node_binaries DIR: the node's kubelet, kubeadm, kubectl and the
# control-plane images' binaries, static; etcd as the toolchain builds it;
# pause from the Kubernetes module's C source, static.
kind_node_binaries() {
	local out=$1
	mkdir -p "$out"
	kubernetes_module
	log "kind-node: building kubelet, kubeadm, kube-proxy $K8S_VERSION (static; shares the build cache with the toolchain's Kubernetes build)"
	(cd "$kube_dir" && CGO_ENABLED=0 GOTOOLCHAIN=$tc go build -trimpath -ldflags "$kube_ldflags" \
		-o "$out/" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kubeadm k8s.io/kubernetes/cmd/kube-proxy)
	local b
	for b in kube-apiserver kube-controller-manager kube-scheduler kubectl etcd; do
		cp "$bin/$b" "$out/$b"
	done
	local src
	src=$(cd "$kube_dir" && GOTOOLCHAIN=$tc go list -m -f '{{.Dir}}' k8s.io/kubernetes)
	command -v gcc >/dev/null || die "kind-node: no gcc (the pause container is C)"
	gcc -Os -Wall -Werror -static -DVERSION="v$(kind_node_pause_tag)-nodeprint" -o "$out/pause" "$src/build/pause/linux/pause.c"
	strip "$out/pause"
}

# kind_node_pause_tag: the sandbox image's tag in kind's containerd config.
kind_node_pause_tag() {
	sed -n 's/^[[:space:]]*sandbox_image = "registry.k8s.io\/pause:\([^"]*\)".*/\1/p' "$(kind_module_dir)/images/base/files/etc/containerd/config.toml"
}

# kind_node_rootfs WORK KINDSRC: WORK/rootfs, Debian by debootstrap (kept
# between builds while the package list and suite are unchanged) with
# kind's base files on top.
kind_node_rootfs() {
	local work=$1 kindsrc=$2 pkgs want
	pkgs=$(kind_node_packages)
	want="$KIND_NODE_SUITE $pkgs"
	if [[ ! -f $work/debootstrap.stamp || $(cat "$work/debootstrap.stamp") != "$want" ]]; then
		log "kind-node: debootstrap of Debian $KIND_NODE_SUITE (about 2 minutes; Debian's package mirror)"
		rm -rf "$work/debian" && mkdir -p "$work"
		debootstrap --variant=minbase --include="$pkgs" "$KIND_NODE_SUITE" "$work/debian" "$KIND_NODE_MIRROR" >"$work/debootstrap.log" 2>&1 ||
			die "kind-node: debootstrap failed; see $work/debootstrap.log"
		echo "$want" >"$work/debootstrap.stamp"
	fi
	log "kind-node: adding kind's base files from $(basename "$kindsrc")"
	rm -rf "$work/rootfs" && cp -a "$work/debian" "$work/rootfs"
	local r=$work/rootfs f=$kindsrc/images/base/files
	# kind's Dockerfile: its files, then the same systemd trimming.
	install -m 0755 "$f/usr/local/bin/"* "$r/usr/local/bin/"
	mkdir -p "$r/kind/bin" "$r/etc/kubernetes/manifests" "$r/etc/cni/net.d"
	install -m 0755 "$f/kind/bin/"* "$r/kind/bin/"
	install -m 0644 "$f/kind/README.txt" "$r/kind/" 2>/dev/null || true
	cp -r "$f/etc/." "$r/etc/"
	chmod -R u+w,go-w "$r/etc"
	rm -f "$r/lib/systemd/system/sysinit.target.wants/systemd-tmpfiles-setup.service" \
		"$r/lib/systemd/system/multi-user.target.wants/"* "$r/etc/systemd/system/"*.wants/* \
		"$r/lib/systemd/system/local-fs.target.wants/"* "$r/lib/systemd/system/sockets.target.wants/"*udev* \
		"$r/lib/systemd/system/sockets.target.wants/"*initctl* "$r/lib/systemd/system/basic.target.wants/"*
	echo "ReadKMsg=no" >>"$r/etc/systemd/journald.conf"
	# Debian's paths, where kind builds its own runtime into /usr/local and
	# /opt: containerd is /usr/bin/containerd, the CNI plugins /usr/lib/cni.
	sed -i 's#/usr/local/bin/containerd#/usr/bin/containerd#' "$r/etc/systemd/system/containerd.service"
	mkdir -p "$r/opt/cni" && ln -sfn /usr/lib/cni "$r/opt/cni/bin"
	# Only the overlayfs snapshotter: no fuse-overlayfs gRPC plugin is built.
	sed -i '/^\[proxy_plugins/,/^$/d' "$r/etc/containerd/config.toml"
	rm -f "$r/etc/systemd/system/containerd-fuse-overlayfs.service"
	# cri-base.json as kind makes it: ctr's default spec, the product-file
	# hook, no rlimits.
	chroot "$r" ctr oci spec | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' |
		jq 'del(.process.rlimits)' >"$r/etc/containerd/cri-base.json"
	local u
	for u in kubelet.service containerd.service undo-mount-hacks.service; do
		chroot "$r" systemctl enable "$u" >/dev/null 2>&1 || die "kind-node: systemctl enable $u failed"
	done
	chroot "$r" systemctl mask systemd-binfmt.service >/dev/null 2>&1
	# nodeprint's additions (kind-node/files): the entrypoint that makes
	# cgroup v1 writable before kind's, and the CNI configuration.
	cp -r "$here/kind-node/files/." "$r/"
	chmod 0755 "$r/usr/local/bin/nodeprint-entrypoint"
	local b
	for b in kubelet kubeadm kubectl; do install -m 0755 "$work/bin/$b" "$r/usr/bin/$b"; done
	printf '%s' "$K8S_VERSION" >"$r/kind/version"
	rm -rf "$r/var/lib/apt/lists/"* "$r/var/cache/apt/"* "$r/usr/share/doc" "$r/usr/share/man" "$r/var/log/"*
}

# kind_node_images WORK: WORK/images.tar, every image kubeadm lists for
# $K8S_VERSION (the sandbox image kind's containerd config names in place of
# kubeadm's pause), each made here from the binary built above.
kind_node_images() {
	local work=$1 name ctx base
	base="nodeprint/kind-node-base:$K8S_VERSION"
	log "kind-node: importing the root filesystem as $base"
	tar -C "$work/rootfs" -c . | docker import - "$base" >/dev/null
	local names=() sandbox
	sandbox="registry.k8s.io/pause:$(kind_node_pause_tag)"
	while read -r name; do
		[[ $name == *pause* ]] && name=$sandbox
		names+=("$name")
	done < <("$work/bin/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
	[[ ${#names[@]} -gt 0 ]] || die "kind-node: kubeadm config images list printed nothing"
	local built=()
	for name in "${names[@]}"; do
		ctx="$work/images/$(basename "${name%%:*}")"
		rm -rf "$ctx" && mkdir -p "$ctx"
		if ! kind_node_dockerfile "$work" "$name" "$base" "$ctx" >"$ctx/Dockerfile"; then
			log "kind-node: no image made for $name (see docs/cluster.md#the-node-image)"
			continue
		fi
		log "kind-node: image $name"
		docker build -q -t "$name" "$ctx" >/dev/null 2>"$ctx/build.log" || die "kind-node: docker build of $name failed; see $ctx/build.log"
		built+=("$name")
	done
	docker save -o "$work/images.tar" "${built[@]}"
}

# kind_node_dockerfile WORK NAME BASE CTX prints the Dockerfile of image
# NAME (copying what it needs into CTX), or fails for an image nodeprint does
# not make. The binary sits where kubeadm's manifests call it: on PATH for
# the static pods (command: [kube-apiserver, ...]), /usr/local/bin/kube-proxy
# for kube-proxy's DaemonSet, /pause for the sandbox. No CoreDNS: the
# kind configuration skips kubeadm's DNS addon (kind-config/cluster.yaml).
kind_node_dockerfile() {
	local work=$1 name=$2 base=$3 ctx=$4 b
	b=$(basename "${name%%:*}")
	case $b in
	kube-apiserver | kube-controller-manager | kube-scheduler | etcd)
		cp "$work/bin/$b" "$ctx/"
		printf 'FROM scratch\nCOPY %s /usr/local/bin/%s\nENV PATH=/usr/local/bin:/usr/bin:/bin\n' "$b" "$b"
		;;
	kube-proxy)
		# kube-proxy programs iptables: the node's Debian layer has it.
		cp "$work/bin/$b" "$ctx/"
		printf 'FROM %s\nCOPY %s /usr/local/bin/%s\n' "$base" "$b" "$b"
		;;
	pause)
		cp "$work/bin/pause" "$ctx/"
		printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n'
		;;
	*) return 1 ;;
	esac
}

# kind_node_assemble WORK IMAGE: the base with the images preloaded into its
# containerd (namespace k8s.io, not unpacked: the CRI unpacks on first use),
# committed as IMAGE with nodeprint's entrypoint before kind's.
kind_node_assemble() {
	local work=$1 image=$2 base="nodeprint/kind-node-base:$K8S_VERSION" c
	c="nodeprint-kind-node-build-$$"
	docker rm -f "$c" >/dev/null 2>&1 || true
	docker run -d --name "$c" --entrypoint sleep --security-opt seccomp=unconfined "$base" infinity >/dev/null
	# Removed however the build ends (die exits the script).
	trap 'docker rm -f '"$c"' >/dev/null 2>&1 || true' EXIT
	docker cp "$work/images.tar" "$c:/images.tar"
	log "kind-node: preloading the images into the node's containerd"
	docker exec "$c" bash -c 'nohup containerd >/dev/null 2>&1 & for i in $(seq 100); do [[ -S /run/containerd/containerd.sock ]] && break; sleep 0.1; done; ctr version >/dev/null' ||
		die "kind-node: containerd did not start in the build container"
	docker exec "$c" ctr --namespace=k8s.io images import --all-platforms --no-unpack --digests /images.tar >/dev/null ||
		die "kind-node: ctr images import failed"
	# sleep, the container's first process, reaps nothing: a stopped
	# containerd stays a zombie (state Z), which counts as stopped.
	docker exec "$c" bash -c 'pkill -x containerd; for i in $(seq 100); do ps -o stat= -C containerd | grep -qv Z || exit 0; sleep 0.1; done; exit 1' ||
		die "kind-node: containerd did not stop in the build container"
	docker exec "$c" rm -f /images.tar
	docker commit --change 'ENTRYPOINT ["/usr/local/bin/nodeprint-entrypoint", "/usr/local/bin/entrypoint", "/sbin/init"]' \
		--change 'ENV container=docker' "$c" "$image-commit" >/dev/null
	printf 'FROM %s\nSTOPSIGNAL SIGRTMIN+3\n' "$image-commit" | docker build -q -t "$image" - >/dev/null
	docker rmi "$image-commit" >/dev/null
	docker rm -f "$c" >/dev/null
	trap - EXIT
	log "kind-node: $image built ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
}
