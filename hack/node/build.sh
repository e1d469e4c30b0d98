#!/usr/bin/env bash
# Builds the local node's binaries from the Go module proxy into $1 (default:
# <repo>/bin/node): the kubelet, kube-scheduler and kube-proxy from hack/k8s's
# module, at the API server's version; containerd, its ctr client (which
# imports the project's images) and containerd-shim-runc-v2, pinned by go.mod
# beside this file and stamped in. containerd is static (CGO_ENABLED=0),
# without the btrfs snapshotter (cgo only); the shim serves ttrpc alone
# (no_grpc), as containerd's own release builds it. runc and the CNI plugins
# come from Debian (hack/install-node-tools.sh), as does nft, which kube-proxy
# runs.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../bin/node}
mkdir -p "$out"
out=$(cd "$out" && pwd)
"$here/../k8s/build.sh" "$out" k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler \
  k8s.io/kubernetes/cmd/kube-proxy
cd "$here"

version=$(go list -m -f '{{.Version}}' github.com/containerd/containerd/v2)
ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=$version"
echo "building containerd $version into $out"
export CGO_ENABLED=0
go build -trimpath -tags no_btrfs -ldflags "$ldflags" -o "$out/" \
  github.com/containerd/containerd/v2/cmd/containerd \
  github.com/containerd/containerd/v2/cmd/ctr
go build -trimpath -tags no_btrfs,no_grpc -ldflags "$ldflags" -o "$out/" \
  github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2
