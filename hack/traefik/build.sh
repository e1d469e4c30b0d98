#!/usr/bin/env bash
# Builds Traefik, the Gateway API implementation of test/gatewayapi, from the
# Go module proxy into $1 (default: <repo>/bin/traefik). The version is pinned
# by go.mod beside this file and stamped in, so `traefik version` and its
# logs name it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../bin/traefik}
mkdir -p "$(dirname "$out")"
cd "$here"

version=$(go list -m -f '{{.Version}}' github.com/traefik/traefik/v3)
echo "building Traefik $version into $out"
go build -trimpath \
  -ldflags "-s -w -X github.com/traefik/traefik/v3/pkg/version.Version=$version" \
  -o "$out" github.com/traefik/traefik/v3/cmd/traefik
