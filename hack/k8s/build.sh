#!/usr/bin/env bash
# Builds the local control plane for the tests from the Go module proxy:
# kube-apiserver, kube-controller-manager, kubectl and etcd, into $1
# (default: <repo>/bin/k8s). The versions are pinned by go.mod beside this file;
# the version strings are stamped in so the API server reports its real version
# (kubectl's skew check and discovery read it). Given Kubernetes commands after
# $1, it builds those instead (and no etcd): hack/node/build.sh builds the
# node's kubelet, kube-scheduler and kube-proxy so, at the API server's
# version.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../bin/k8s}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$here"

k8s_version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes)
etcd_version=$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)
major=${k8s_version#v}; major=${major%%.*}
minor=${k8s_version#v*.}; minor=${minor%%.*}
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

if [[ $# -gt 1 ]]; then
  echo "building Kubernetes $k8s_version ${*:2} into $out"
  go build -trimpath -ldflags "$ldflags" -o "$out/" "${@:2}"
  exit 0
fi
echo "building Kubernetes $k8s_version and etcd $etcd_version into $out"
go build -trimpath -ldflags "$ldflags" -o "$out/" \
  k8s.io/kubernetes/cmd/kube-apiserver \
  k8s.io/kubernetes/cmd/kube-controller-manager \
  k8s.io/kubernetes/cmd/kubectl
go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
