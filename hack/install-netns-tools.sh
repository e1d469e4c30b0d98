#!/usr/bin/env bash
# Installs what the data-plane tests and bench row B8 use to give gateway
# pods network namespaces of their own: unshare and nsenter (util-linux) and
# ip (iproute2). Idempotent and silent when they are on PATH; needs root (or
# sudo) and the Debian archive otherwise. The tests themselves need root.
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
if ! command -v unshare >/dev/null 2>&1 || ! command -v nsenter >/dev/null 2>&1; then
	missing+=(util-linux)
fi
if [[ ${#missing[@]} -eq 0 ]]; then
	exit 0
fi

apt_install "${missing[@]}"
