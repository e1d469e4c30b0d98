#!/usr/bin/env bash
# Builds the local node's container runtime from the Go module proxy into $1
# (default: <repo>/bin/node): containerd, its ctr client (which imports the
# project's images) and containerd-shim-runc-v2. The version is pinned by
# go.mod beside this file and stamped in. Static (CGO_ENABLED=0), without the
# btrfs snapshotter (cgo only); the shim serves ttrpc alone (no_grpc), as
# containerd's own release builds it. The kubelet and kube-scheduler come
# from hack/k8s, with the API server's version; runc and the CNI plugins
# from Debian (hack/install-node-tools.sh).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../bin/node}
mkdir -p "$out"
out=$(cd "$out" && pwd)
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
