#!/usr/bin/env bash
# Installs what the local node (test/controlplane's Options.Node) takes from
# Debian rather than the Go module proxy: runc, which containerd's shim runs
# the containers with, the CNI plugins (bridge, host-local, loopback in
# /usr/lib/cni) that give pods their network, and nft (nftables), through
# which kube-proxy (nftables mode) writes the Services' rules into the
# node's network namespace. Idempotent and silent when they are present;
# needs root (or sudo) and the Debian archive otherwise.
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

missing=()
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
for plugin in bridge host-local loopback; do
	if [[ ! -x /usr/lib/cni/$plugin ]]; then
		missing+=(containernetworking-plugins)
		break
	fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

apt_install "${missing[@]}"
