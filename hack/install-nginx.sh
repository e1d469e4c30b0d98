#!/usr/bin/env bash
# Installs Debian's nginx, whose real `nginx -t` checks the configuration the
# operator renders (controller tests). Idempotent and silent when nginx is
# already on PATH; needs root (or sudo) and the Debian archive otherwise.
set -euo pipefail
source "$(dirname "$0")/lib/apt.sh"

if command -v nginx >/dev/null 2>&1; then
	exit 0
fi

apt_update
# Newer Debian releases dropped nginx-light; nginx is the same binary there.
for pkg in nginx-light nginx; do
	if [[ -n $(apt-cache policy "$pkg" 2>/dev/null | awk '/Candidate:/ && $2 != "(none)"') ]]; then
		apt_install "$pkg"
		break
	fi
done

if ! command -v nginx >/dev/null 2>&1; then
	echo "install-nginx: no nginx package could be installed from apt" >&2
	exit 1
fi
