#!/usr/bin/env bash
# Fails when a generated file is stale, gofmt / go vet complain, or a
# hand-written doc names Go code, a file or a heading that does not exist.
# Regenerates into the work tree and compares with a copy taken first, so it
# works on uncommitted changes as well as in a fresh clone; a stale file is
# left regenerated, ready to commit. The chart is rendered from manifests/ by
# the control plane's kubectl, so on a fresh clone this builds it first
# (`make k8s`, which `make test` needs anyway).
set -euo pipefail
make=${1:-make}
cd "$(dirname "$0")/.."

generated=(api manifests docs charts)
before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
cp -a "${generated[@]}" "$before/"

$make --no-print-directory generate manifests docs chart >/dev/null

status=0
for dir in "${generated[@]}"; do
  if ! diff -ruN "$before/$dir" "$dir"; then
    echo "verify: generated files under $dir/ were stale; they are regenerated now, commit them" >&2
    status=1
  fi
done

unformatted=$(gofmt -l $(git ls-files --cached --others --exclude-standard '*.go'))
if [[ -n $unformatted ]]; then
  echo "verify: gofmt -w these files:" >&2
  echo "$unformatted" >&2
  status=1
fi

go vet ./... || status=1

# Hand-written docs only: docs/api.md is generated from the Go types.
mapfile -t docs < <(git ls-files --cached --others --exclude-standard '*.md' | grep -vx 'docs/api.md')
go run ./hack/docnames "${docs[@]}" || status=1
exit $status
