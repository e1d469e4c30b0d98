# apigateway-operator. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Pinned tools, built from the Go module proxy into ./bin. The version is part
# of the file name so that bumping it here rebuilds the tool.
CONTROLLER_GEN_VERSION ?= v0.23.0
GOLANGCI_LINT_VERSION  ?= v2.15.0
CRD_REF_DOCS_VERSION   ?= v0.3.0
# Prometheus's Go module tags v0.3XX.Y are its releases 3.XX.Y.
PROMTOOL_VERSION       ?= v0.316.0
HELM_VERSION           ?= v3.22.0

BIN            := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)
GOLANGCI_LINT  := $(BIN)/golangci-lint-$(GOLANGCI_LINT_VERSION)
CRD_REF_DOCS   := $(BIN)/crd-ref-docs-$(CRD_REF_DOCS_VERSION)
PROMTOOL       := $(BIN)/promtool-$(PROMTOOL_VERSION)
HELM           := $(BIN)/helm-$(HELM_VERSION)

# The local control plane (etcd, kube-apiserver, kube-controller-manager,
# kubectl) built from hack/k8s. The stamp is keyed on that module's files, so
# a version bump there rebuilds it and nothing else does: the stamp has no
# file prerequisites, whose times (newer in every fresh checkout or
# worktree) would rebuild it for nothing.
K8S_ASSETS := $(BIN)/k8s
K8S_KEY    := $(shell cat hack/k8s/go.mod hack/k8s/go.sum hack/k8s/build.sh | sha256sum | cut -c1-16)
K8S_STAMP  := $(K8S_ASSETS)/.built-$(K8S_KEY)

# Traefik, the Gateway API implementation test/gatewayapi routes requests
# through, built from hack/traefik (its version is pinned there); the stamp
# is keyed on that module's files, as the control plane's is.
TRAEFIK       := $(BIN)/traefik
TRAEFIK_KEY   := $(shell cat hack/traefik/go.mod hack/traefik/go.sum hack/traefik/build.sh hack/traefik/ext/* | sha256sum | cut -c1-16)
TRAEFIK_STAMP := $(BIN)/.traefik-built-$(TRAEFIK_KEY)

# The local node's binaries (kubelet, kube-scheduler, kube-proxy, containerd,
# ctr, the runc shim) built by hack/node/build.sh into ./bin/node: the
# Kubernetes ones from hack/k8s, at the API server's version, so the stamp is
# keyed on both modules' files. Apart from ./bin/k8s, which `make run` and
# the chart need without them.
NODE_BIN   := $(BIN)/node
NODE_KEY   := $(shell cat hack/node/go.mod hack/node/go.sum hack/node/build.sh hack/k8s/go.mod hack/k8s/go.sum hack/k8s/build.sh | sha256sum | cut -c1-16)
NODE_STAMP := $(NODE_BIN)/.built-$(NODE_KEY)

# What envtest needs to find and start the control plane (a loaded 2-core
# machine can take well over envtest's default 20 s to start it), and where
# test/gatewayapi finds Traefik.
TEST_ENV := KUBEBUILDER_ASSETS=$(K8S_ASSETS) \
	KUBEBUILDER_CONTROLPLANE_START_TIMEOUT=$${KUBEBUILDER_CONTROLPLANE_START_TIMEOUT:-60s} \
	KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT=$${KUBEBUILDER_CONTROLPLANE_STOP_TIMEOUT:-60s} \
	TRAEFIK=$(TRAEFIK) \
	NODE_BIN=$(NODE_BIN)

# The real node's suite (a kubelet and containerd, `make node`). `make test`
# names it first, so that its long waits (a pod's start, the kubelet's sync
# of a ConfigMap volume: up to 90 s) overlap the other packages rather than
# trail them; it runs in namespaces of its own (see docs/development.md), so
# it shares no port, mount or folder with them. `make test-node` runs it
# alone.
NODE_PKGS := ./test/node

GO_TEST_FLAGS ?= -race -count=1 -timeout=20m
# Every `make test` fuzzes each target a little; raise it for a longer hunt.
FUZZTIME ?= 15s

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
IMG     ?= apigateway-operator:$(VERSION)

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make \033[36m<target>\033[0m\n"} \
		/^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-14s\033[0m %s\n", $$1, $$2 } \
		/^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Run

# Built rather than `go run`: signals then reach hack/run itself, which
# stops what it started (go run does not pass SIGTERM on). A node runs
# beside the control plane (needs root) unless RUN_NODE=0. It is given
# what this Makefile built (BIN=... included), unless the environment
# names other paths.
RUN_NODE ?= 1
.PHONY: run
run: k8s build $(if $(filter 0,$(RUN_NODE)),,node nginx) ## Run the operator against a local control plane and node (data in ./bin/run; RUN_NODE=0: no node, no root); Ctrl-C stops it. ARGS go to the operator.
	go build -o $(BIN)/run-local ./hack/run
	RUN_NODE=$(RUN_NODE) RUN_DIR="$${RUN_DIR:-$(BIN)/run}" K8S_BIN="$${K8S_BIN:-$(K8S_ASSETS)}" \
		OPERATOR_BIN="$${OPERATOR_BIN:-$(BIN)/apigateway-operator}" NODE_BIN="$${NODE_BIN:-$(NODE_BIN)}" \
		$(BIN)/run-local $(ARGS)

.PHONY: run-clean
run-clean: ## Delete what `make run` keeps between runs (./bin/run): the next run starts with an empty cluster.
	rm -rf $(BIN)/run

##@ Development

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code for the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD, webhook and RBAC YAML, and the defaults policy and matchConditions (api/v1/defaults), into manifests/.
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:dir=manifests/crd/bases
	$(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:dir=manifests/webhook
	go run ./hack/manifestsgen
	$(CONTROLLER_GEN) rbac:roleName=apigateway-operator 'paths={./cmd/...,./certs/...,./controller/...,./webhooks/...}' output:rbac:dir=manifests/rbac

.PHONY: docs
docs: $(CRD_REF_DOCS) diagram ## Generate the API reference (docs/api.md) from the Go types, and the package diagram.
	$(CRD_REF_DOCS) --config hack/crd-ref-docs/config.yaml --source-path ./api --renderer markdown --output-path docs/api.md >/dev/null

# The diagram is written between markers in a hand-written page, so only
# that section is generated; verify (which runs `make docs`) diffs docs/.
.PHONY: diagram
diagram: ## Generate the package diagram of docs/architecture.md from `go list` (part of make docs).
	go run ./hack/pkgdiagram -doc docs/architecture.md

# The chart is generated from the overlays' kustomize output (the kubectl of
# the local control plane renders them), so it cannot drift from them.
.PHONY: chart
chart: k8s ## Generate the Helm chart charts/apigateway-operator from manifests/.
	go run ./charts/gen -kubectl $(K8S_ASSETS)/kubectl

.PHONY: verify
verify: ## Fail when generated files are stale, gofmt/go vet complain, or a doc names code, a file or a heading that does not exist.
	hack/verify.sh "$(MAKE)"

.PHONY: lint
# --allow-serial-runners: a second golangci-lint on the machine (another
# checkout's) waits for the first instead of failing the run with
# "parallel golangci-lint is running" (which ended a green CI run).
lint: $(GOLANGCI_LINT) ## Run golangci-lint (pinned; built into ./bin on first use).
	$(GOLANGCI_LINT) run --allow-serial-runners ./...

##@ Test

.PHONY: test
test: verify k8s nginx netns promtool helm traefik node ## Run every test against a real kube-apiserver and etcd, and the real node's (builds them first), then fuzz briefly.
	$(TEST_ENV) go test $(GO_TEST_FLAGS) $(NODE_PKGS) $$(go list ./... | grep -v '/test/node$$')
	$(MAKE) --no-print-directory fuzz

.PHONY: test-node
test-node: k8s node nginx ## Run the real node's suite (test/node: kubelet, kube-proxy, containerd, gateway pods; needs root).
	$(TEST_ENV) go test $(GO_TEST_FLAGS) $(NODE_PKGS)

.PHONY: fuzz
fuzz: ## Run each fuzz target for FUZZTIME (default 15s).
	go test -run '^$$' -fuzz '^FuzzAdmission$$' -fuzztime=$(FUZZTIME) ./webhooks
	go test -run '^$$' -fuzz '^FuzzOpen$$' -fuzztime=$(FUZZTIME) ./push
	go test -run '^$$' -fuzz '^FuzzParseLine$$' -fuzztime=$(FUZZTIME) ./reloader
	$(TEST_ENV) go test -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime=$(FUZZTIME) ./conversion
	$(TEST_ENV) go test -run '^$$' -fuzz '^FuzzConvertHandler$$' -fuzztime=$(FUZZTIME) ./conversion

# Not part of `make test` or CI: it takes as long as its STRESS_* variables
# say (hack/stress.sh), and is meant to be run before closing a flaky-test
# issue, e.g. STRESS_PKGS="./conversion ./test/e2e" STRESS_ROUNDS=5.
.PHONY: test-stress
test-stress: k8s build nginx netns traefik ## Run the suites that start servers several times, several at once, beside a CPU hog; report failures per test (hack/stress.sh).
	$(TEST_ENV) hack/stress.sh

.PHONY: k8s
k8s: $(K8S_STAMP) ## Build the local control plane into ./bin/k8s (once per hack/k8s version).

$(K8S_STAMP):
	rm -f $(K8S_ASSETS)/.built-*
	hack/k8s/build.sh $(K8S_ASSETS)
	touch $@

.PHONY: node
node: $(NODE_STAMP) netns ## Build and install what a local node needs: kubelet, kube-scheduler, kube-proxy and containerd (./bin/node), runc, the CNI plugins and nft (Debian).
	hack/install-node-tools.sh

$(NODE_STAMP):
	rm -f $(NODE_BIN)/.built-*
	hack/node/build.sh $(NODE_BIN)
	touch $@

.PHONY: promtool
promtool: $(PROMTOOL) ## Build the pinned promtool into ./bin, for the alert tests in manifests/monitoring.

.PHONY: helm
helm: $(HELM) ## Build the pinned helm into ./bin, for the chart's tests in charts/.

.PHONY: traefik
traefik: $(TRAEFIK_STAMP) ## Build Traefik into ./bin (once per hack/traefik version), for the Gateway API tests in test/gatewayapi.

$(TRAEFIK_STAMP):
	rm -f $(BIN)/.traefik-built-*
	hack/traefik/build.sh $(TRAEFIK)
	touch $@

.PHONY: nginx
nginx: ## Install Debian's nginx for the controller's `nginx -t` tests (no-op when present).
	hack/install-nginx.sh

.PHONY: netns
netns: ## Install ip, unshare and nsenter for the gateway pods' network namespaces in tests, B8 and B10 (no-op when present).
	hack/install-netns-tools.sh

##@ Benchmarks

.PHONY: bench
bench: k8s build nginx netns ## Micro-benchmarks and the B1-B10 table (also written to bin/bench.md).
	$(TEST_ENV) go test -run '^$$' -bench . -benchmem ./webhooks ./conversion ./controller ./render ./api/v1/validation
	$(TEST_ENV) go run ./hack/bench -operator $(BIN)/apigateway-operator -out $(BIN)/bench.md

##@ Build

.PHONY: build
build: ## Build the operator's and the reloader's binaries into ./bin (the Dockerfile runs the same commands).
	CGO_ENABLED=0 go build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN)/apigateway-operator ./cmd/apigateway-operator
	CGO_ENABLED=0 go build -trimpath -ldflags "$(RELOADER_LDFLAGS)" -o $(BIN)/apigateway-reloader ./cmd/apigateway-reloader

.PHONY: docker-build
docker-build: ## Build the operator image IMG (needs a Docker engine).
	docker build --build-arg VERSION=$(VERSION) -t $(IMG) .

# The reloader is copied into every gateway pod at each start: no symbol
# table or DWARF (-s -w; stack traces keep their function names and lines).
RELOADER_LDFLAGS := -s -w

# Pinned tools, without symbol tables and DWARF (-s -w): nothing debugs
# them, and the linker's time on each counts in a cold `make test`.
TOOL_LDFLAGS := -s -w

$(CONTROLLER_GEN):
	GOBIN=$(BIN) go install -ldflags '$(TOOL_LDFLAGS)' sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $@

$(CRD_REF_DOCS):
	GOBIN=$(BIN) go install -ldflags '$(TOOL_LDFLAGS)' github.com/elastic/crd-ref-docs@$(CRD_REF_DOCS_VERSION)
	mv $(BIN)/crd-ref-docs $@

$(GOLANGCI_LINT):
	GOBIN=$(BIN) go install -ldflags '$(TOOL_LDFLAGS)' github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)
	mv $(BIN)/golangci-lint $@

# Built from the module proxy like the tools above, rather than downloaded
# from a release page: the same pinning, checksums (go.sum database) and
# proxy as every other tool, no per-platform archive to pick. `go install
# pkg@version` builds it in its own module graph: nothing enters our go.mod.
# remove_all_sd leaves Prometheus's service discovery out (the clouds'
# SDKs), which `promtool check rules` and `test rules` do not use: 340
# CPU seconds to build instead of 771 (a cold cache, go 1.26, this repo's
# 2-core machines).
$(PROMTOOL):
	GOBIN=$(BIN) go install -tags remove_all_sd -ldflags '$(TOOL_LDFLAGS)' github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)
	mv $(BIN)/promtool $@

# Like promtool: `go install pkg@version` builds helm in its own module graph.
# The -X flags are those of helm's release build: without them `helm
# template` and `helm lint` assume Kubernetes 1.20 and refuse the chart's
# kubeVersion. 1.37 is the client-go of helm v3.22 (bump it with HELM_VERSION).
HELM_LDFLAGS := $(TOOL_LDFLAGS) -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37 \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37
$(HELM):
	GOBIN=$(BIN) go install -ldflags '$(HELM_LDFLAGS)' helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)
	mv $(BIN)/helm $@
