package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/certs"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/lease"
	"example.com/apigateway-operator/manifests/policy"
	"example.com/apigateway-operator/mirror"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/render"
	"example.com/apigateway-operator/tracing"
	"example.com/apigateway-operator/webhooks"
)

// options are the operator's command-line flags.
type options struct {
	webhookPort   int
	certDir       string
	tlsMinVersion string
	enableHTTP2   bool
	// webhookClientCA, when set, makes the webhook server demand a client
	// certificate signed by this CA on the admission paths.
	webhookClientCA string
	// webhookMaxInflight is --webhook-max-inflight-bytes as written: a
	// quantity, or empty for the default derived from the memory limit.
	webhookMaxInflight string
	// webhookLimits bound each connection to the webhook server.
	webhookLimits inflight.Limits

	metricsAddr   string
	probeAddr     string
	pprofAddr     string
	leaderElect   bool
	leaderElectNS string
	// leaseDuration, renewDeadline and retryPeriod time the leader
	// election (client-go's LeaderElectionConfig).
	leaseDuration, renewDeadline, retryPeriod time.Duration
	shutdownGrace                             time.Duration

	defaultReplicas int
	clusterDomain   string
	trustedProxies  string
	ownership       string
	// disruptionBudget is --gateway-disruption-budget, which
	// controller.Options holds the other way round (NoDisruptionBudget).
	disruptionBudget bool
	// watchNamespaces is --watch-namespaces as written; namespaces is it
	// split and checked, nil for every namespace.
	watchNamespaces string
	namespaces      []string
	// push and pushSecret are --gateway-push and --gateway-push-secret,
	// which controller.Options holds as PushKeySecret (empty: off).
	push            bool
	pushSecret      string
	policyParams    string
	otlpEndpoint    string
	reloaderImage   string
	policyParamsKey types.NamespacedName // from policyParams; zero when empty
	webhooks        webhooks.Options
	certs           certs.Options
	controller      controller.Options

	zap zap.Options

	printVersion bool
}

// bind registers every flag on fs.
func (o *options) bind(fs *flag.FlagSet) {
	fs.IntVar(&o.webhookPort, "webhook-port", 9443, "Port of the TLS server that serves the admission and conversion webhooks.")
	fs.StringVar(&o.certDir, "cert-dir", "/tmp/k8s-webhook-server/serving-certs", "Directory holding the webhook server's tls.crt and tls.key.")
	fs.StringVar(&o.tlsMinVersion, "tls-min-version", "1.3", "Lowest TLS version the webhook and metrics servers accept: 1.2 or 1.3.")
	fs.StringVar(&o.webhookClientCA, "webhook-client-ca", "", "PEM file of the CA whose client certificates may call the admission webhooks (re-read every 10s); callers without one get 401. The conversion webhook stays open: the API server presents no client certificate to it. Empty: no client authentication.")
	fs.StringVar(&o.webhookMaxInflight, "webhook-max-inflight-bytes", "", "Bound on the bytes all webhook requests in flight hold together, as a quantity such as 64Mi; beyond it a request waits briefly, then gets 429 (413 when it could never fit). Empty: a quarter of GOMEMLIMIT, else of the cgroup memory limit, else 64Mi.")
	fs.DurationVar(&o.webhookLimits.HeaderTimeout, "webhook-header-timeout", inflight.DefaultHeaderTimeout, "How long a connection to the webhook server may take for its TLS handshake, and then for each request's headers.")
	fs.DurationVar(&o.webhookLimits.ReadTimeout, "webhook-read-timeout", inflight.DefaultReadTimeout, "How long a webhook request may take to arrive, headers and body; it holds in-flight bytes only for what arrived. At least --webhook-header-timeout.")
	fs.IntVar(&o.webhookLimits.MaxHeaderBytes, "webhook-max-header-bytes", inflight.DefaultMaxHeaderBytes, "Largest header block of a webhook request (net/http allows 4096 bytes more); larger ones get 431.")
	fs.IntVar(&o.webhookLimits.MaxConnections, "webhook-max-connections", inflight.DefaultMaxConnections, "Most connections open to the webhook server from callers without a client certificate --webhook-client-ca signed; at the cap a new one closes one of the source address that holds the most, the one silent longest.")
	fs.BoolVar(&o.enableHTTP2, "enable-http2", false, "Serve HTTP/2 on the webhook and metrics servers. Off by default: HTTP/2 rapid reset (CVE-2023-44487).")

	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8443", "Address of the HTTPS metrics endpoint, which requires an authenticated and authorized client; \"0\" turns it off.")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz endpoints.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address of Go's /debug/pprof profiles (plain HTTP, no authentication: bind it to localhost and reach it with kubectl port-forward). Empty: off.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader among the operator's replicas so only one reconciles; the webhooks are served by every replica.")
	fs.StringVar(&o.leaderElectNS, "leader-election-namespace", "", "Namespace of the leader-election Lease (default: the namespace the operator runs in).")
	fs.DurationVar(&o.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long the other replicas wait, after they last saw the leader renew its Lease, before they take it over.")
	fs.DurationVar(&o.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long after its last successful renewal the leader stops writing and gives up leadership; shorter than --leader-elect-lease-duration, the difference being what a write in flight has to arrive.")
	fs.DurationVar(&o.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often replicas try to renew or acquire the Lease.")
	fs.DurationVar(&o.shutdownGrace, "graceful-shutdown-timeout", 30*time.Second, "How long in-flight webhook requests and reconciles may take to finish on shutdown.")

	fs.StringVar(&o.webhooks.DefaultImage, "default-gateway-image", defaults.DefaultImage, "Gateway image for APIGateways that set none and whose namespace has no example.com/default-gateway-image annotation.")
	fs.IntVar(&o.defaultReplicas, "default-replicas", int(defaults.DefaultReplicas), "Replicas for APIGateways that set none, from 0 to 100.")
	fs.StringVar(&o.policyParams, "policy-params", policy.ParamsNamespace+"/"+policy.ParamsName, "namespace/name of the ConfigMap the defaults MutatingAdmissionPolicy reads: on start the leader writes --default-gateway-image and --default-replicas there, so the API server gives the same defaults while no replica answers. Empty: leave it alone.")
	fs.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "OTLP/gRPC collector for traces, as host:port (TLS) or http://host:port (no TLS); the webhooks continue the API server's traces and the reconciler traces each reconcile. Empty: off, unless the standard OTEL_EXPORTER_OTLP_ENDPOINT variables name one.")
	fs.StringVar(&o.reloaderImage, "reloader-image", "", "Image whose binary the gateway pods run as the reloader of their nginx (an init container copies it). Empty: the operator's own image, read from its Pod (POD_NAMESPACE, POD_NAME); outside a pod, "+fallbackReloaderImage+".")
	fs.StringVar(&o.clusterDomain, "cluster-domain", render.DefaultClusterDomain, "DNS suffix of the cluster's Services: gateways reach their backends at <service>.<namespace>.svc.<domain>, and the self-signed certificate covers the webhook Service under it.")
	fs.StringVar(&o.trustedProxies, "gateway-trusted-proxies", "", trustedProxiesUsage)
	fs.StringVar(&o.controller.StatusFrom, "gateway-status-from-namespace", "", "Namespace (the operator's) whose pods alone may reach the gateway pods' status port: each APIGateway then gets a NetworkPolicy N that allows that, and the traffic port from anywhere. "+
		"Do not set it where your own NetworkPolicies narrow who reaches the gateway pods: policies add up, so this one would open the traffic port. Empty: no policy.")
	fs.StringVar(&o.controller.MetricsFrom, "gateway-metrics-from-namespace", "", "Namespace (your Prometheus's) whose pods may reach the gateway pods' metrics port (8083) through the NetworkPolicy of --gateway-status-from-namespace, which needs setting too. Empty: that policy keeps the metrics port closed.")
	fs.BoolVar(&o.disruptionBudget, "gateway-disruption-budget", true, "Give each APIGateway of two replicas or more a PodDisruptionBudget N that lets one of its pods at a time be evicted (a node drain then waits for the replacement to be Ready). "+
		"false: none, and the ones made before are deleted; turn it off where you give the gateway pods budgets of your own, since the eviction API refuses pods that two budgets select.")
	fs.BoolVar(&o.push, "gateway-push", true, "Push each new configuration to the gateway pods' reloaders, signed with the operator's Ed25519 key (--gateway-push-secret), so a route change is served within a second instead of at the kubelet's next sync of the ConfigMap volume (up to about a minute and a half). "+
		"false: the pods learn of changes through their volume only, and refuse pushes.")
	fs.StringVar(&o.pushSecret, "gateway-push-secret", defaultPushSecret, "namespace/name of the Secret holding the push key: the operator fills it when empty (empty it to rotate the key) but may not create it, so the manifests ship it empty; the Role names it.")
	fs.StringVar(&o.ownership, "namespace-ownership", string(ownership.Strict), namespaceOwnershipUsage)
	fs.DurationVar(&o.controller.HostReleaseAfter, "host-release-after", controller.DefaultHostReleaseAfter, hostReleaseAfterUsage)
	fs.StringVar(&o.watchNamespaces, "watch-namespaces", "", "Comma-separated namespaces whose APIGateways this operator serves and reconciles (namespaced mode: give its ServiceAccount Roles in these namespaces, and the webhook configurations a namespaceSelector for them; hosts are then owned among these namespaces only). Empty: every namespace.")
	fs.IntVar(&o.controller.MaxConcurrentReconciles, "max-concurrent-reconciles", 4, "How many APIGateways are reconciled at once.")

	fs.BoolVar(&o.printVersion, "version", false, "Print the version and exit.")

	o.certs.BindFlags(fs)
	o.zap.BindFlags(fs)
}

// complete checks the flags that need more than their type and fills in the
// values derived from them.
func (o *options) complete() error {
	if o.defaultReplicas < 0 || o.defaultReplicas > 100 {
		return fmt.Errorf("--default-replicas: want 0 to 100, got %d", o.defaultReplicas)
	}
	o.webhooks.DefaultReplicas = int32(o.defaultReplicas)
	if err := checkClusterDomain(o.clusterDomain); err != nil {
		return err
	}
	o.controller.ClusterDomain = o.clusterDomain
	proxies, err := parseTrustedProxies(o.trustedProxies)
	if err != nil {
		return err
	}
	o.controller.TrustedProxies = proxies
	o.webhooks.TrustsProxies = len(proxies) > 0
	o.controller.NoDisruptionBudget = !o.disruptionBudget
	if err := checkNetworkPolicyFrom(o.controller.StatusFrom, o.controller.MetricsFrom); err != nil {
		return err
	}
	if o.push {
		if o.controller.PushKeySecret, err = parseObjectKey("--gateway-push-secret", "a Secret", o.pushSecret); err != nil {
			return err
		}
	}
	if o.namespaces, err = parseNamespaces(o.watchNamespaces); err != nil {
		return err
	}
	o.controller.Namespaces, o.webhooks.Namespaces = o.namespaces, o.namespaces
	p, err := parseOwnership(o.ownership)
	if err != nil {
		return err
	}
	o.controller.Policy, o.webhooks.Policy = p, p
	o.certs.ClusterDomain = o.clusterDomain
	o.controller.DefaultImage = o.webhooks.DefaultImage
	o.webhooks.Tracing = tracing.Enabled(o.otlpEndpoint)
	o.certs.CertDir = o.certDir
	if o.webhookMaxInflight != "" {
		q, err := resource.ParseQuantity(o.webhookMaxInflight)
		if err != nil || q.Sign() <= 0 {
			return fmt.Errorf("--webhook-max-inflight-bytes: want a positive quantity such as 64Mi, got %q", o.webhookMaxInflight)
		}
		o.webhooks.MaxInflightBytes = q.Value()
	}
	if o.policyParams != "" {
		if o.policyParamsKey, err = parseObjectKey("--policy-params", "a ConfigMap", o.policyParams); err != nil {
			return err
		}
	}
	if _, ok := tlsVersions[o.tlsMinVersion]; !ok {
		return fmt.Errorf("--tls-min-version: want 1.2 or 1.3, got %q", o.tlsMinVersion)
	}
	if err := o.checkLeaderElection(); err != nil {
		return err
	}
	return o.checkWebhookLimits()
}

// checkLeaderElection refuses timings client-go's elector would refuse at
// start, with the flags' names.
func (o *options) checkLeaderElection() error {
	switch {
	case o.retryPeriod <= 0:
		return fmt.Errorf("--leader-elect-retry-period: must be positive, got %s", o.retryPeriod)
	// client-go's JitterFactor: a retry may come 1.2 periods late.
	case o.renewDeadline <= o.retryPeriod*12/10:
		return fmt.Errorf("--leader-elect-renew-deadline (%s) must be longer than 1.2 times --leader-elect-retry-period (%s)", o.renewDeadline, o.retryPeriod)
	case o.leaseDuration <= o.renewDeadline:
		return fmt.Errorf("--leader-elect-lease-duration (%s) must be longer than --leader-elect-renew-deadline (%s)", o.leaseDuration, o.renewDeadline)
	}
	return nil
}

// checkWebhookLimits refuses webhook server limits that are not positive,
// or a read timeout shorter than the header timeout.
func (o *options) checkWebhookLimits() error {
	l := o.webhookLimits
	for flag, v := range map[string]int64{
		"--webhook-header-timeout": int64(l.HeaderTimeout), "--webhook-read-timeout": int64(l.ReadTimeout),
		"--webhook-max-header-bytes": int64(l.MaxHeaderBytes), "--webhook-max-connections": int64(l.MaxConnections),
	} {
		if v <= 0 {
			return fmt.Errorf("%s: must be positive", flag)
		}
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("--webhook-read-timeout, --webhook-header-timeout: %w", err)
	}
	return nil
}

// defaultPushSecret is --gateway-push-secret's default: the Secret
// manifests/rbac ships, in the operator's namespace (the same as the
// policy parameters').
const defaultPushSecret = policy.ParamsNamespace + "/" + controller.DefaultPushKeySecret

// parseObjectKey reads flag's value, namespace/name of what.
func parseObjectKey(flag, what, s string) (types.NamespacedName, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, fmt.Errorf("%s: want namespace/name of %s, got %q", flag, what, s)
	}
	return types.NamespacedName{Namespace: ns, Name: name}, nil
}

// trustedProxiesUsage documents --gateway-trusted-proxies, which the
// operator and the render command take.
const trustedProxiesUsage = "Comma-separated IP addresses or CIDRs of the front proxies (such as the ingress controller's pods) whose X-Forwarded-For the gateways believe: " +
	"their backends then see the client's address in X-Forwarded-For and X-Real-IP, and the proxies' X-Forwarded-Proto and X-Forwarded-Port. Empty: the connecting address and the gateway's own scheme, and a client's own X-Forwarded-* headers are dropped."

// parseTrustedProxies splits and checks --gateway-trusted-proxies.
func parseTrustedProxies(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	proxies := strings.Split(s, ",")
	for i := range proxies {
		proxies[i] = strings.TrimSpace(proxies[i])
	}
	if _, err := render.TrustedProxies(proxies); err != nil {
		return nil, fmt.Errorf("--gateway-trusted-proxies: %w", err)
	}
	return proxies, nil
}

// parseNamespaces splits and checks --watch-namespaces.
func parseNamespaces(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	namespaces := strings.Split(s, ",")
	for i, ns := range namespaces {
		namespaces[i] = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(namespaces[i]); len(errs) > 0 {
			return nil, fmt.Errorf("--watch-namespaces: %q is not a namespace name: %s", namespaces[i], strings.Join(errs, "; "))
		}
	}
	return namespaces, nil
}

// checkClusterDomain refuses a --cluster-domain that is no DNS name; the
// operator and the render command take the flag.
func checkClusterDomain(domain string) error {
	if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
		return fmt.Errorf("--cluster-domain: want a DNS name such as cluster.local, got %q: %s", domain, strings.Join(errs, "; "))
	}
	return nil
}

// tlsVersions maps the accepted --tls-min-version values.
var tlsVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// tlsOptions turns the TLS flags into the servers' tls.Config mutators.
func (o *options) tlsOptions() []func(*tls.Config) {
	minVersion := tlsVersions[o.tlsMinVersion]
	opts := []func(*tls.Config){func(c *tls.Config) { c.MinVersion = minVersion }}
	if !o.enableHTTP2 {
		opts = append(opts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	return opts
}

// clientAuth is the webhook server's client authentication, nil without
// --webhook-client-ca. The API server never presents a client certificate
// to a CRD conversion webhook, so /convert stays open.
func (o *options) clientAuth() (*certs.ClientAuth, error) {
	if o.webhookClientCA == "" {
		return nil, nil
	}
	return certs.NewClientAuth(o.webhookClientCA, webhooks.ConvertPath)
}

// leaderElectionID names the Lease the replicas elect their leader with.
const leaderElectionID = "apigateway-operator.example.com"

// leaseLock is the leader-election lock that fences the leader's writes
// (package lease), nil without --leader-elect.
func (o *options) leaseLock(cfg *rest.Config) (*lease.Lock, error) {
	if !o.leaderElect {
		return nil, nil
	}
	return lease.New(cfg, leaderelection.Options{
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.leaderElectNS,
		RenewDeadline:           o.renewDeadline,
	})
}

// managerOptions builds the manager's options from the flags; serving is
// the certificate provider's TLS hook for the webhook server, auth, when
// not nil, its client authentication, and lock, when not nil, the leader
// election's lock.
func (o *options) managerOptions(scheme *runtime.Scheme, serving func(*tls.Config), auth *certs.ClientAuth, lock *lease.Lock) ctrl.Options {
	tlsOpts := o.tlsOptions()
	webhookTLS := append(slices.Clone(tlsOpts), serving)
	if auth != nil {
		webhookTLS = append(webhookTLS, auth.TLSConfig)
	}
	var webhookServer webhook.Server = inflight.NewServer(webhook.Options{
		Port:    o.webhookPort,
		CertDir: o.certDir,
		TLSOpts: webhookTLS,
	}, o.webhookLimits)
	if auth != nil {
		webhookServer = auth.Server(webhookServer)
	}
	cacheOpts := controller.CacheOptions()
	// Namespaced objects (gateways, children, Services) of these namespaces
	// only (the reconciler's and the webhooks' own caches too, through
	// o.controller.Namespaces and o.webhooks.Namespaces); cluster-scoped
	// ones (Namespaces, IngressClasses, the HTTPRoute CRD) stay
	// cluster-wide.
	cacheOpts.DefaultNamespaces = mirror.Namespaces(o.namespaces)
	opts := ctrl.Options{
		Scheme: scheme,
		Cache:  cacheOpts,
		Metrics: metricsserver.Options{
			BindAddress:    o.metricsAddr,
			SecureServing:  true,
			FilterProvider: filters.WithAuthenticationAndAuthorization,
			TLSOpts:        tlsOpts,
		},
		WebhookServer:           webhookServer,
		HealthProbeBindAddress:  o.probeAddr,
		PprofBindAddress:        o.pprofAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: o.leaderElectNS,
		// The next leader can start at once instead of waiting out the lease.
		LeaderElectionReleaseOnCancel: true,
		LeaseDuration:                 &o.leaseDuration,
		RenewDeadline:                 &o.renewDeadline,
		RetryPeriod:                   &o.retryPeriod,
		GracefulShutdownTimeout:       &o.shutdownGrace,
	}
	if lock != nil {
		opts.LeaderElectionResourceLockInterface = lock
	}
	return opts
}

// namespaceOwnershipUsage is --namespace-ownership's, of the operator and
// of the routes command.
const namespaceOwnershipUsage = "Who may route on a host: Strict, the namespace whose APIGateway claimed it first (a wildcard claims the names it matches), and other namespaces only under the path prefixes it lends them (spec.delegations); " +
	"or InterNamespaceAllowed, every namespace, competing only for identical routes (unsafe among untrusted tenants: a longer path, or an exact host under a wildcard, takes requests from the host's owner)."

// hostReleaseAfterUsage is --host-release-after's.
const hostReleaseAfterUsage = "Under Strict ownership, how long a host's owner may route it (and every name below it) nowhere before its HostClaim ends and another namespace may take the host. Re-creating, renaming or editing the owner's gateways within it keeps the host."

// parseOwnership is --namespace-ownership's value.
func parseOwnership(s string) (ownership.Policy, error) {
	switch p := ownership.Policy(s); p {
	case ownership.Strict, ownership.InterNamespaceAllowed:
		return p, nil
	}
	return "", fmt.Errorf("--namespace-ownership: want %s or %s, got %q", ownership.Strict, ownership.InterNamespaceAllowed, s)
}

// checkNetworkPolicyFrom checks the namespaces the gateways' NetworkPolicy
// lets reach the status and metrics ports: names a namespaceSelector can
// match, and metrics only with the policy that status builds (alone it
// would open nothing, silently).
func checkNetworkPolicyFrom(status, metrics string) error {
	for _, f := range []struct{ flag, ns string }{{"--gateway-status-from-namespace", status}, {"--gateway-metrics-from-namespace", metrics}} {
		if errs := validation.IsDNS1123Label(f.ns); f.ns != "" && len(errs) > 0 {
			return fmt.Errorf("%s: %s", f.flag, strings.Join(errs, "; "))
		}
	}
	if metrics != "" && status == "" {
		return errors.New("--gateway-metrics-from-namespace: set --gateway-status-from-namespace too: only its NetworkPolicy has the metrics port to open")
	}
	return nil
}
