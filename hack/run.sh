#!/usr/bin/env bash
# hack/run.sh — what `make run` runs: the operator against a control plane on
# this machine, for someone with no cluster.
#
# It starts etcd, kube-apiserver and kube-controller-manager (the ./bin/k8s
# binaries `make k8s` builds, the same ones the tests use) on 127.0.0.1 with
# their data in $RUN_DIR, writes an admin kubeconfig, installs
# manifests/local (CRD, webhook configurations pointed at 127.0.0.1, RBAC,
# the empty certificate Secret) and runs the real operator binary in
# self-signed certificate mode, as the operator's ServiceAccount so the
# generated least-privilege RBAC is what applies, as in a cluster. The
# kube-apiserver presents a client certificate to the admission webhooks
# (its admission configuration), and the operator accepts no other caller
# there (--webhook-client-ca). Ctrl-C (or SIGTERM/SIGHUP) stops everything,
# operator first; the data stays in $RUN_DIR, so the next run starts where
# this one stopped.
#
# Arguments are passed on to the operator (e.g. `hack/run.sh --zap-log-level=debug`).
#
# Environment (all optional):
#   RUN_DIR         scratch directory: data, certificates, kubeconfigs, logs (bin/run)
#   RUN_FRESH=1     delete RUN_DIR first: start from an empty cluster
#   K8S_BIN         etcd, kube-apiserver, kube-controller-manager, kubectl (bin/k8s)
#   OPERATOR_BIN    the operator binary (bin/apigateway-operator)
#   ETCD_PORT, APISERVER_PORT, WEBHOOK_PORT, PROBE_PORT, METRICS_PORT
#                   loopback ports (12379, 16443, 9443, 18081, 18443)
#   START_TIMEOUT   seconds each component may take to become ready (90)
#   STOP_TIMEOUT    seconds each component may take to stop before SIGKILL (20)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Paths given relative are taken from where the script was started.
abspath() { case $1 in /*) printf '%s\n' "$1" ;; *) printf '%s\n' "$PWD/$1" ;; esac; }
RUN_DIR=$(abspath "${RUN_DIR:-$root/bin/run}")
K8S_BIN=$(abspath "${K8S_BIN:-$root/bin/k8s}")
OPERATOR_BIN=$(abspath "${OPERATOR_BIN:-$root/bin/apigateway-operator}")
ETCD_PORT=${ETCD_PORT:-12379}
APISERVER_PORT=${APISERVER_PORT:-16443}
WEBHOOK_PORT=${WEBHOOK_PORT:-9443}
PROBE_PORT=${PROBE_PORT:-18081}
METRICS_PORT=${METRICS_PORT:-18443}
START_TIMEOUT=${START_TIMEOUT:-90}
STOP_TIMEOUT=${STOP_TIMEOUT:-20}

# The namespace of the operator's Secret and namespaced RBAC (manifests/local).
readonly operator_ns=apigateway-operator-system
readonly operator_sa=apigateway-operator
# Stop order: the operator first, so it finishes in-flight webhook requests
# while the API server is still there; etcd last.
readonly components=(apigateway-operator kube-controller-manager kube-apiserver etcd)

kubectl=$K8S_BIN/kubectl
declare -A pid=()

# Bold headings on a terminal only, so logs and tests read plain text.
bold='' plain=''
if [[ -t 1 ]]; then bold=$'\033[1m' plain=$'\033[0m'; fi
log() { printf '%s==> %s%s\n' "$bold" "$*" "$plain"; }
die() { printf 'hack/run.sh: %s\n' "$*" >&2; exit 1; }

# show prints a path relative to the repository when it is inside it, since
# `make run` is started from there.
show() { case $1 in "$root"/*) printf './%s\n' "${1#"$root"/}" ;; *) printf '%s\n' "$1" ;; esac; }

# --- stopping ----------------------------------------------------------------

# running is true while process $1 exists and is not a zombie.
running() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) } # the state follows the command name, in parentheses
	[[ ${stat%% *} != [ZX] ]]
}

# ours is true when process $1 runs a component of this RUN_DIR: each one's
# command line names a path inside it. This guards against a pid recycled
# since an earlier run wrote its pid file.
ours() {
	running "$1" && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$RUN_DIR/"
}

# stop_pid sends SIGTERM to $2 (named $1) and waits up to STOP_TIMEOUT
# seconds, then sends SIGKILL. A second Ctrl-C skips the wait.
stop_pid() {
	local name=$1 p=$2 deadline=$((SECONDS + STOP_TIMEOUT))
	running "$p" || return 0
	kill -TERM "$p" 2>/dev/null || return 0
	while running "$p"; do
		if ((SECONDS >= deadline)) || [[ ${hurry:-} ]]; then
			printf '%s did not stop in time: killing it\n' "$name" >&2
			kill -KILL "$p" 2>/dev/null || true
			break
		fi
		sleep 0.1
	done
	wait "$p" 2>/dev/null || true
}

stopped=
stop_all() {
	[[ $stopped ]] && return
	stopped=1
	# A second signal while stopping means "hurry up", not "abandon".
	trap 'hurry=1' INT TERM HUP
	local name
	for name in "${components[@]}"; do
		if [[ ${pid[$name]:-} ]]; then
			stop_pid "$name" "${pid[$name]}"
		fi
		rm -f "$RUN_DIR/pids/$name.pid"
	done
	if [[ $(cat "$RUN_DIR/pids/run.pid" 2>/dev/null) == "$$" ]]; then
		rm -f "$RUN_DIR/pids/run.pid"
	fi
}

on_signal() {
	printf '\n'
	log "Stopping (SIG$1)"
	stop_all
	log "Stopped. The cluster's data stays in $(show "$RUN_DIR"); run again to continue, RUN_FRESH=1 to start empty."
	exit 0
}

# stop_leftovers ends the components of an earlier run on the same RUN_DIR
# that was killed before it could clean up (SIGKILL, a crash), so ports and
# etcd's data directory are free again. A run that is still going is left
# alone: the user gets told instead.
stop_leftovers() {
	local f p
	if [[ -r $RUN_DIR/pids/run.pid ]]; then
		p=$(<"$RUN_DIR/pids/run.pid")
		if [[ $p != "$$" && -r /proc/$p/cmdline ]] && tr '\0' ' ' <"/proc/$p/cmdline" | grep -qF run.sh; then
			die "another run is using $(show "$RUN_DIR") (pid $p): stop it first, or set RUN_DIR"
		fi
	fi
	local name
	for name in "${components[@]}"; do
		f=$RUN_DIR/pids/$name.pid
		[[ -r $f ]] || continue
		p=$(<"$f")
		if [[ $p =~ ^[0-9]+$ ]] && ours "$p"; then
			log "Stopping $name (pid $p) left over from an earlier run"
			stop_pid "$name" "$p"
		fi
		rm -f "$f"
	done
}

# --- starting ----------------------------------------------------------------

# start runs a component in the background in its own process group (set -m),
# so the terminal's Ctrl-C reaches only this script, which then stops the
# components in order. Output goes to $RUN_DIR/logs/<name>.log, or to the
# console for the operator.
start() {
	local name=$1 out=$2
	shift 2
	set -m
	if [[ $out == console ]]; then
		"$@" </dev/null &
	else
		"$@" </dev/null >"$out" 2>&1 &
	fi
	pid[$name]=$!
	set +m
	echo "${pid[$name]}" >"$RUN_DIR/pids/$name.pid"
}

# wait_until polls "$@" every 0.2 s until it succeeds, for at most
# START_TIMEOUT seconds, failing early when component $1 has exited.
wait_until() {
	local name=$1 what=$2 deadline=$((SECONDS + START_TIMEOUT))
	shift 2
	until "$@" >/dev/null 2>&1; do
		if ! running "${pid[$name]}"; then
			failed "$name exited while $what"
		fi
		if ((SECONDS >= deadline)); then
			failed "$name: timed out after ${START_TIMEOUT}s $what"
		fi
		sleep 0.2
	done
}

# failed reports a component that did not come up, with the end of its log.
failed() {
	local name=${1%%[: ]*}
	printf 'hack/run.sh: %s\n' "$1" >&2
	if [[ -s $RUN_DIR/logs/$name.log ]]; then
		printf -- '--- last lines of %s:\n' "$(show "$RUN_DIR/logs/$name.log")" >&2
		tail -n 20 "$RUN_DIR/logs/$name.log" >&2
	fi
	exit 1
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

check_tools() {
	local f
	for f in etcd kube-apiserver kube-controller-manager kubectl; do
		[[ -x $K8S_BIN/$f ]] || die "$(show "$K8S_BIN/$f") is missing: run \`make k8s\` (or \`make run\`, which builds it)"
	done
	[[ -x $OPERATOR_BIN ]] || die "$(show "$OPERATOR_BIN") is missing: run \`make build\` (or \`make run\`, which builds it)"
	for f in openssl curl; do
		command -v "$f" >/dev/null || die "$f is needed (Debian/Ubuntu: apt-get install $f)"
	done
}

# check_ports runs after stop_leftovers, so only a stranger's port counts.
check_ports() {
	local var
	for var in ETCD_PORT APISERVER_PORT WEBHOOK_PORT PROBE_PORT METRICS_PORT; do
		[[ ${!var} =~ ^[0-9]+$ ]] || die "$var must be a port number, not \"${!var}\""
		if port_in_use "${!var}"; then
			die "127.0.0.1:${!var} is in use; pick another port with $var=..."
		fi
	done
}

# prepare creates what survives between runs once: the service-account
# signing key and the static tokens. Kubeconfigs are rewritten every run, so
# changed ports take effect.
prepare() {
	if [[ ${RUN_FRESH:-} == 1 && -d $RUN_DIR ]]; then
		log "RUN_FRESH=1: deleting $(show "$RUN_DIR")"
		rm -rf "$RUN_DIR"
	fi
	mkdir -p "$RUN_DIR"/{etcd,pki,logs,pids}
	chmod 700 "$RUN_DIR"
	stop_leftovers
	echo "$$" >"$RUN_DIR/pids/run.pid"
	check_ports

	# kube-apiserver makes itself a serving certificate for a year and
	# reuses it after; past that, it makes a new one when this is gone.
	if [[ -s $RUN_DIR/pki/apiserver.crt ]] &&
		! openssl x509 -checkend 86400 -noout -in "$RUN_DIR/pki/apiserver.crt" >/dev/null 2>&1; then
		rm -f "$RUN_DIR/pki/apiserver.crt" "$RUN_DIR/pki/apiserver.key"
	fi
	# kube-apiserver signs ServiceAccount tokens (needed for Pods) with it.
	if [[ ! -s $RUN_DIR/pki/sa.key ]]; then
		openssl genrsa -out "$RUN_DIR/pki/sa.key" 2048 2>/dev/null
	fi
	# Static bearer tokens: one for you and kube-controller-manager
	# (system:masters), one that authenticates the operator as its
	# ServiceAccount, so manifests/rbac decides what it may do.
	if [[ ! -s $RUN_DIR/pki/tokens.csv ]]; then
		(
			umask 077
			printf '%s,admin,admin,system:masters\n' "$(openssl rand -hex 24)"
			printf '%s,system:serviceaccount:%s:%s,%s,"system:serviceaccounts,system:serviceaccounts:%s"\n' \
				"$(openssl rand -hex 24)" "$operator_ns" "$operator_sa" "$operator_sa" "$operator_ns"
		) >"$RUN_DIR/pki/tokens.csv"
	fi
	admin_token=$(sed -n '1s/,.*//p' "$RUN_DIR/pki/tokens.csv")
	operator_token=$(sed -n '2s/,.*//p' "$RUN_DIR/pki/tokens.csv")
	write_webhook_client_auth
}

# write_webhook_client_auth makes, at every start, a client CA and a
# certificate it signs for kube-apiserver to present to the admission
# webhooks, and the admission configuration that says so: a kubeconfig
# whose user is named after the webhooks' host and port, as the README's
# Security section describes for a cluster. The operator trusts the CA
# (--webhook-client-ca). The conversion webhook gets no client certificate
# from kube-apiserver, whatever its configuration; the operator leaves
# /convert open.
write_webhook_client_auth() {
	local pki=$RUN_DIR/pki dir=$RUN_DIR/admission plugin
	mkdir -p "$dir"
	(
		umask 077
		openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
			-keyout "$pki/webhook-client-ca.key" -out "$pki/webhook-client-ca.crt" -days 365 \
			-subj "/CN=make run webhook client CA" \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign 2>/dev/null
		openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
			-keyout "$pki/webhook-client.key" -subj "/CN=kube-apiserver" 2>/dev/null |
			openssl x509 -req -CA "$pki/webhook-client-ca.crt" -CAkey "$pki/webhook-client-ca.key" \
				-set_serial "0x$(openssl rand -hex 16)" -days 365 -out "$pki/webhook-client.crt" \
				-extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n') 2>/dev/null
		cat >"$dir/webhook-kubeconfig.yaml" <<EOF
apiVersion: v1
kind: Config
users:
- name: "127.0.0.1:$WEBHOOK_PORT"
  user:
    client-certificate: $pki/webhook-client.crt
    client-key: $pki/webhook-client.key
EOF
		{
			printf 'apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n'
			for plugin in ValidatingAdmissionWebhook MutatingAdmissionWebhook; do
				cat <<EOF
- name: $plugin
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $dir/webhook-kubeconfig.yaml
EOF
			done
		} >"$dir/admission-config.yaml"
	) || die "making the webhook client certificate failed"
}

# write_kubeconfig FILE USER TOKEN: the API server's certificate file holds
# the self-signed CA it generated, which is what clients must trust.
write_kubeconfig() {
	(
		umask 077
		cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority: $RUN_DIR/pki/apiserver.crt
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@local
  context: {cluster: local, user: $2}
current-context: $2@local
EOF
	)
}

start_etcd() {
	log "Starting etcd on 127.0.0.1:$ETCD_PORT"
	# No fsync: this is a scratch cluster, and a 2-core laptop thanks us.
	start etcd "$RUN_DIR/logs/etcd.log" "$K8S_BIN/etcd" \
		--data-dir="$RUN_DIR/etcd" \
		--listen-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
		--listen-peer-urls=http://127.0.0.1:0 \
		--unsafe-no-fsync
	wait_until etcd "starting" curl -fsS "http://127.0.0.1:$ETCD_PORT/health"
}

start_apiserver() {
	log "Starting kube-apiserver on https://127.0.0.1:$APISERVER_PORT"
	# The flags envtest uses, plus authentication by token and RBAC: the
	# admin token is in system:masters, and the operator runs under its own
	# identity so its RBAC is checked as in a cluster. The admission
	# configuration gives it a client certificate for the webhooks. No
	# endpoint reconciler: the "kubernetes" Service may not point at a
	# loopback address, and nothing here needs it.
	start kube-apiserver "$RUN_DIR/logs/kube-apiserver.log" "$K8S_BIN/kube-apiserver" \
		--etcd-servers="http://127.0.0.1:$ETCD_PORT" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--secure-port="$APISERVER_PORT" \
		--cert-dir="$RUN_DIR/pki" \
		--token-auth-file="$RUN_DIR/pki/tokens.csv" \
		--authorization-mode=RBAC \
		--service-account-issuer="https://127.0.0.1:$APISERVER_PORT" \
		--service-account-key-file="$RUN_DIR/pki/sa.key" \
		--service-account-signing-key-file="$RUN_DIR/pki/sa.key" \
		--service-cluster-ip-range=10.0.0.0/24 \
		--admission-control-config-file="$RUN_DIR/admission/admission-config.yaml" \
		--endpoint-reconciler-type=none
	wait_until kube-apiserver "starting" test -s "$RUN_DIR/pki/apiserver.crt"
	write_kubeconfig "$RUN_DIR/kubeconfig" admin "$admin_token"
	write_kubeconfig "$RUN_DIR/operator.kubeconfig" "$operator_sa" "$operator_token"
	wait_until kube-apiserver "becoming ready" \
		curl -fsS --cacert "$RUN_DIR/pki/apiserver.crt" -H "Authorization: Bearer $admin_token" \
		"https://127.0.0.1:$APISERVER_PORT/readyz"
}

start_controller_manager() {
	log "Starting kube-controller-manager (garbage collection, Deployments, ReplicaSets, namespaces, service accounts)"
	# No scheduler and no kubelet: the gateways' Pods are created and stay
	# Pending, which is enough to see rollouts and owner references at work.
	start kube-controller-manager "$RUN_DIR/logs/kube-controller-manager.log" "$K8S_BIN/kube-controller-manager" \
		--kubeconfig="$RUN_DIR/kubeconfig" \
		--controllers=garbage-collector-controller,deployment-controller,replicaset-controller,namespace-controller,serviceaccount-controller \
		--leader-elect=false \
		--use-service-account-credentials=false \
		--secure-port=0
}

install_manifests() {
	log "Installing manifests/local (CRD, webhook configurations -> https://127.0.0.1:$WEBHOOK_PORT, RBAC, certificate Secret)"
	# The overlay names port 9443, the operator's default; another port is
	# substituted in the rendered YAML.
	"$kubectl" kustomize "$root/manifests/local" |
		sed "s|https://127.0.0.1:9443/|https://127.0.0.1:$WEBHOOK_PORT/|" |
		"$kubectl" --kubeconfig="$RUN_DIR/kubeconfig" apply --server-side --force-conflicts -f - >"$RUN_DIR/logs/install.log" 2>&1 ||
		{ cat "$RUN_DIR/logs/install.log" >&2; die "installing manifests/local failed"; }
	"$kubectl" --kubeconfig="$RUN_DIR/kubeconfig" wait --for=condition=Established \
		--timeout="${START_TIMEOUT}s" crd/apigateways.example.com >/dev/null
}

start_operator() {
	log "Starting $(show "$OPERATOR_BIN") (webhooks on https://127.0.0.1:$WEBHOOK_PORT for kube-apiserver's client certificate, probes on 127.0.0.1:$PROBE_PORT)"
	start apigateway-operator console "$OPERATOR_BIN" \
		--kubeconfig="$RUN_DIR/operator.kubeconfig" \
		--webhook-client-ca="$RUN_DIR/pki/webhook-client-ca.crt" \
		--cert-mode=self-signed \
		--cert-extra-hosts=127.0.0.1,localhost \
		--cert-secret-namespace="$operator_ns" \
		--webhook-port="$WEBHOOK_PORT" \
		--health-probe-bind-address="127.0.0.1:$PROBE_PORT" \
		--metrics-bind-address="127.0.0.1:$METRICS_PORT" \
		--graceful-shutdown-timeout=10s \
		--zap-encoder=console \
		"$@"
	# Ready once its certificate is trusted by all three CA bundles.
	wait_until apigateway-operator "becoming ready" curl -fsS "http://127.0.0.1:$PROBE_PORT/readyz"
}

print_ready() {
	local k
	k=$(show "$kubectl")
	local samples=$root/manifests/samples
	cat <<EOF

$(log "Ready: apigateway-operator is running against a local control plane.")

  export KUBECONFIG=$RUN_DIR/kubeconfig

  # the seed sample, and the four children the operator makes for it
  $k apply -f $(show "$samples/apigateway_v1.yaml")
  $k get apigateways
  $k get configmaps,deployments,services,ingresses -l app.kubernetes.io/instance=my-app-gateway
EOF
	if compgen -G "$samples/invalid/*.yaml" >/dev/null; then
		cat <<EOF

  # invalid samples: each is refused with the field at fault
  $k apply -f $(show "$samples/invalid")/
EOF
	else
		cat <<EOF

  # an invalid gateway is refused with the field at fault
  $k apply -f - <<'YAML'
  {apiVersion: example.com/v1, kind: APIGateway, metadata: {name: bad-tls},
   spec: {routes: [{host: api.example.com, backendService: {name: svc, port: 80}}],
          tls: [{hosts: [www.example.com], secretName: tls}]}}
YAML
EOF
	fi
	cat <<EOF

  # the same gateway as the older v1alpha1 API sees it (converted by the webhook)
  $k get apigateways.v1alpha1.example.com my-app-gateway -o yaml

Pods stay Pending: there is no scheduler or kubelet. Control plane logs are in
$(show "$RUN_DIR/logs")/; the operator logs below. Ctrl-C stops everything.

EOF
}

main() {
	check_tools
	trap 'on_signal INT' INT
	trap 'on_signal TERM' TERM
	trap 'on_signal HUP' HUP
	# Whatever the way out (an error, a failed start), nothing is left running.
	trap stop_all EXIT
	prepare
	start_etcd
	start_apiserver
	start_controller_manager
	install_manifests
	start_operator "$@"
	print_ready

	# Run until a signal arrives (the traps exit) or a component dies.
	local name
	while :; do
		wait -n || true
		for name in "${components[@]}"; do
			if ! running "${pid[$name]}"; then
				failed "$name exited unexpectedly"
			fi
		done
	done
}

main "$@"
