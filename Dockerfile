# The operator's image: `make docker-build IMG=registry.example.com/apigateway-operator:v1.0.0 VERSION=v1.0.0`.
#
# The build step is the one `make build` runs (CGO_ENABLED=0, -trimpath, the
# version stamped with -ldflags -X main.version); keep the two identical.

FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
WORKDIR /src

# Modules first: this layer is rebuilt only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download

# Only what the binary is built from (see also .dockerignore).
COPY admit/ admit/
COPY api/ api/
COPY basicauth/ basicauth/
COPY certs/ certs/
COPY cmd/ cmd/
COPY controller/ controller/
COPY conversion/ conversion/
COPY endpoints/ endpoints/
COPY inflight/ inflight/
COPY inspect/ inspect/
COPY lease/ lease/
COPY mirror/ mirror/
COPY manifests/crd/ manifests/crd/
COPY manifests/policy/ manifests/policy/
COPY manifests/webhook/ manifests/webhook/
COPY offline/ offline/
COPY ownership/ ownership/
COPY push/ push/
COPY reloader/ reloader/
COPY render/ render/
COPY routeindex/ routeindex/
COPY routepath/ routepath/
COPY services/ services/
COPY tracing/ tracing/
COPY webhooks/ webhooks/

RUN --mount=type=cache,target=/root/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-X main.version=${VERSION}" -o /out/apigateway-operator ./cmd/apigateway-operator && \
    CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/apigateway-reloader ./cmd/apigateway-reloader

# distroless/static: no shell, no package manager, CA certificates and
# tzdata only; the nonroot variant runs as 65532, which the Deployment's
# restricted security context (runAsNonRoot) requires to be numeric.
FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/apigateway-operator /apigateway-operator
# The gateway pods' init container copies this one into each pod.
COPY --from=builder /out/apigateway-reloader /apigateway-reloader
USER 65532:65532
ENTRYPOINT ["/apigateway-operator"]
