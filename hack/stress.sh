#!/usr/bin/env bash
# Runs the suites that start servers (control planes, webhook servers, the
# operator binary, nginx, `make run`) several times, several at once, beside
# a CPU hog, and reports the failures per test: the load under which a race
# for a port, a deadline or a readiness wait shows itself. Not part of CI or
# `make test`; `make test-stress` runs it with the control plane's
# environment.
#
# Each package's test binary is built once, then run ROUNDS times; PARALLEL
# runs go at once (packages and rounds mixed), HOGS busy loops beside them.
# The whole is bounded: no run starts after DEADLINE, and each run is
# bounded by TIMEOUT (go test's -timeout: a run that hangs fails with the
# goroutines' stacks). Every run's `go test -json` output is kept in OUT.
#
# Environment (all optional):
#
#	STRESS_PKGS      packages (go list patterns); default: the packages with
#	                 tests among ./conversion ./certs ./webhooks ./controller
#	                 ./inflight ./cmd/... ./test/...
#	STRESS_RUN       a -run pattern (default: every test)
#	STRESS_ROUNDS    runs of each package (3)
#	STRESS_PARALLEL  runs at once (2)
#	STRESS_HOGS      CPU hogs beside them (1)
#	STRESS_TIMEOUT   each run's go test -timeout (20m)
#	STRESS_DEADLINE  no run starts after this long (60m)
#	STRESS_RACE=1    build with -race, as `make test` does
#	STRESS_OUT       where the binaries and outputs go (a new temporary directory)
#
# It exits 1 when a run failed, and prints every failed test with its count.
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a patterns <<<"${STRESS_PKGS:-./conversion ./certs ./webhooks ./controller ./inflight ./cmd/... ./test/...}"
rounds=${STRESS_ROUNDS:-3}
parallel=${STRESS_PARALLEL:-2}
hogs=${STRESS_HOGS:-1}
timeout=${STRESS_TIMEOUT:-20m}
deadline_after=${STRESS_DEADLINE:-60m}
out=${STRESS_OUT:-$(mktemp -d -t stress-XXXXXX)}
mkdir -p "$out/bin" "$out/runs"

# seconds turns a Go-style duration of whole hours, minutes or seconds
# ("90s", "20m", "1h") into seconds.
seconds() {
  local d=$1
  case $d in
    *h) echo $((${d%h} * 3600)) ;;
    *m) echo $((${d%m} * 60)) ;;
    *s) echo "${d%s}" ;;
    *) echo "$d" ;;
  esac
}
deadline=$(($(date +%s) + $(seconds "$deadline_after")))

race=()
[[ ${STRESS_RACE:-} == 1 ]] && race=(-race)

# The packages with tests, as "import-path dir" lines; not the real node's
# suite (test/node), which is not part of `make test` yet.
mapfile -t pkgs < <(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}} {{.Dir}}{{end}}' "${patterns[@]}" | grep -v '/test/node ')
if [[ ${#pkgs[@]} -eq 0 ]]; then
  echo "stress: no packages with tests in ${patterns[*]}" >&2
  exit 2
fi

# Built once, before the hogs start: the runs measure the tests, not the
# compiler.
echo "stress: building ${#pkgs[@]} test binaries into $out/bin"
for p in "${pkgs[@]}"; do
  read -r path dir <<<"$p"
  go test -c "${race[@]}" -o "$out/bin/${path//\//_}.test" "$path"
done

hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  hog_pids=()
}
trap stop_hogs EXIT
for ((i = 0; i < hogs; i++)); do
  bash -c 'while :; do :; done' &
  hog_pids+=($!)
done

# run runs one package's binary once, in its directory as go test would,
# its JSON events in $out/runs/<package>.<round>.json.
run() {
  local path=$1 dir=$2 round=$3
  local bin=$out/bin/${path//\//_}.test json=$out/runs/${path//\//_}.$round.json
  local args=(-test.v=test2json -test.count=1 -test.timeout="$timeout")
  [[ -n ${STRESS_RUN:-} ]] && args+=(-test.run="$STRESS_RUN")
  (cd "$dir" && go tool test2json -t -p "$path" "$bin" "${args[@]}") >"$json" 2>&1 || true
}

echo "stress: ${#pkgs[@]} packages x $rounds rounds, $parallel at once, $hogs CPU hog(s), each run within $timeout, none started after $deadline_after"
started=0 skipped=0
for ((round = 1; round <= rounds; round++)); do
  for p in "${pkgs[@]}"; do
    read -r path dir <<<"$p"
    if (($(date +%s) >= deadline)); then
      skipped=$((skipped + 1))
      continue
    fi
    while (($(jobs -rp | wc -l) >= parallel + hogs)); do
      wait -n || true
    done
    echo "stress: round $round: $path"
    run "$path" "$dir" "$round" &
    started=$((started + 1))
  done
done
stop_hogs
wait

echo
echo "stress: $started runs ($skipped not started: the deadline passed); outputs in $out/runs"
report=$(hack/stress-report.awk "$out"/runs/*.json | sort -k2)
echo "$report"
grep -q '^FAIL' <<<"$report" && exit 1
exit 0
