package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/apigateway-operator/certs"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/webhookserver"
	"example.com/apigateway-operator/webhooks"
)

func parse(t *testing.T, args ...string) (*options, error) {
	t.Helper()
	var o options
	fs := flag.NewFlagSet("apigateway-operator", flag.ContinueOnError)
	o.bind(fs)
	require.NoError(t, fs.Parse(args))
	return &o, o.complete()
}

func TestFlagsComplete(t *testing.T) {
	tests := map[string]struct {
		args    []string
		wantErr string
	}{
		"defaults":             {},
		"tls 1.2":              {args: []string{"--tls-min-version=1.2"}},
		"tls 1.1 is refused":   {args: []string{"--tls-min-version=1.1"}, wantErr: `--tls-min-version: want 1.2 or 1.3, got "1.1"`},
		"replicas 0":           {args: []string{"--default-replicas=0"}},
		"replicas 101":         {args: []string{"--default-replicas=101"}, wantErr: "--default-replicas: want 0 to 100, got 101"},
		"negative replicas":    {args: []string{"--default-replicas=-1"}, wantErr: "--default-replicas: want 0 to 100, got -1"},
		"custom default image": {args: []string{"--default-gateway-image=registry.local/nginx:1.27"}},
		"in-flight bound":      {args: []string{"--webhook-max-inflight-bytes=64Mi"}},
		"in-flight bound zero": {args: []string{"--webhook-max-inflight-bytes=0"}, wantErr: `--webhook-max-inflight-bytes: want a positive quantity such as 64Mi, got "0"`},
		"in-flight bound text": {args: []string{"--webhook-max-inflight-bytes=lots"}, wantErr: `--webhook-max-inflight-bytes: want a positive quantity such as 64Mi, got "lots"`},
		"webhook limits":       {args: []string{"--webhook-header-timeout=2s", "--webhook-read-timeout=4s", "--webhook-max-header-bytes=4096", "--webhook-max-connections=64"}},
		"no connections":       {args: []string{"--webhook-max-connections=0"}, wantErr: "--webhook-max-connections: must be positive"},
		"no header timeout":    {args: []string{"--webhook-header-timeout=0s"}, wantErr: "--webhook-header-timeout: must be positive"},
		"read timeout shorter than the header timeout": {args: []string{"--webhook-header-timeout=5s", "--webhook-read-timeout=2s"},
			wantErr: "--webhook-read-timeout, --webhook-header-timeout: webhook server read timeout 2s: must be at least the header timeout (5s), which it includes"},
		"another cluster domain": {args: []string{"--cluster-domain=corp.example"}},
		"short leases":           {args: []string{"--leader-elect-lease-duration=6s", "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s"}},
		"renew deadline past the lease": {args: []string{"--leader-elect-renew-deadline=15s"},
			wantErr: "--leader-elect-lease-duration (15s) must be longer than --leader-elect-renew-deadline (15s)"},
		"retry period too close to the renew deadline": {args: []string{"--leader-elect-retry-period=9s"},
			wantErr: "--leader-elect-renew-deadline (10s) must be longer than 1.2 times --leader-elect-retry-period (9s)"},
		"no retry period": {args: []string{"--leader-elect-retry-period=0s"}, wantErr: "--leader-elect-retry-period: must be positive, got 0s"},
		"cluster domain upper case": {args: []string{"--cluster-domain=Corp.example"},
			wantErr: `--cluster-domain: want a DNS name such as cluster.local, got "Corp.example": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		"trusted proxies": {args: []string{"--gateway-trusted-proxies=10.0.0.0/8, 192.168.1.1"}},
		"a trusted proxy that is no address": {args: []string{"--gateway-trusted-proxies=10.0.0.0/8,ingress-nginx"},
			wantErr: `--gateway-trusted-proxies: trusted proxy "ingress-nginx" is not an IP address or CIDR`},
		"a gateway network policy":   {args: []string{"--gateway-status-from-namespace=apigateway-system"}},
		"a status namespace typo":    {args: []string{"--gateway-status-from-namespace=Ops_NS"}, wantErr: `--gateway-status-from-namespace: a lowercase RFC 1123 label`},
		"metrics open to Prometheus": {args: []string{"--gateway-status-from-namespace=apigateway-system", "--gateway-metrics-from-namespace=monitoring"}},
		"a metrics namespace typo":   {args: []string{"--gateway-status-from-namespace=apigateway-system", "--gateway-metrics-from-namespace=Mon"}, wantErr: `--gateway-metrics-from-namespace: a lowercase RFC 1123 label`},
		"metrics without the policy": {args: []string{"--gateway-metrics-from-namespace=monitoring"}, wantErr: `--gateway-metrics-from-namespace: set --gateway-status-from-namespace too`},
		"inter-namespace hosts":      {args: []string{"--namespace-ownership=InterNamespaceAllowed"}},
		"an unknown ownership":       {args: []string{"--namespace-ownership=loose"}, wantErr: `--namespace-ownership: want Strict or InterNamespaceAllowed, got "loose"`},
		"watched namespaces":         {args: []string{"--watch-namespaces=team-a,team-b"}},
		"a watched namespace typo":   {args: []string{"--watch-namespaces=team-a,Team_B"}, wantErr: `--watch-namespaces: "Team_B" is not a namespace name: `},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := parse(t, tc.args...)
			if tc.wantErr != "" {
				require.Error(t, err)
				require.True(t, strings.HasPrefix(err.Error(), tc.wantErr), "%v", err)
				return
			}
			require.NoError(t, err)
		})
	}
}

// TestTrustedProxiesReachTheWebhook: the validating webhook warns about
// routes' sourceRanges only when no front proxy is trusted.
func TestTrustedProxiesReachTheWebhook(t *testing.T) {
	o, err := parse(t)
	require.NoError(t, err)
	assert.False(t, o.webhooks.TrustsProxies)
	o, err = parse(t, "--gateway-trusted-proxies=10.244.0.0/16")
	require.NoError(t, err)
	assert.True(t, o.webhooks.TrustsProxies)
	assert.Equal(t, []string{"10.244.0.0/16"}, o.controller.TrustedProxies)
}

// TestNamespacedMode: --watch-namespaces restricts the cache of namespaced
// objects to those namespaces; without it the operator watches every one.
func TestNamespacedMode(t *testing.T) {
	o, err := parse(t, "--watch-namespaces=team-a, team-b")
	require.NoError(t, err)
	opts := o.managerOptions(runtime.NewScheme(), func(*tls.Config) {}, nil, nil)
	assert.Len(t, opts.Cache.DefaultNamespaces, 2)
	assert.Contains(t, opts.Cache.DefaultNamespaces, "team-a")
	assert.Contains(t, opts.Cache.DefaultNamespaces, "team-b")
	assert.Equal(t, []string{"team-a", "team-b"}, o.webhooks.Namespaces, "the webhooks' Service cache lists these only")
	o, err = parse(t)
	require.NoError(t, err)
	assert.Empty(t, o.managerOptions(runtime.NewScheme(), func(*tls.Config) {}, nil, nil).Cache.DefaultNamespaces)
	assert.Equal(t, ownership.Strict, o.controller.Policy, "hosts are owned by default")
	assert.Equal(t, ownership.Strict, o.webhooks.Policy)
}

func TestFlagDefaults(t *testing.T) {
	o, err := parse(t)
	require.NoError(t, err)
	assert.Equal(t, int32(1), o.webhooks.DefaultReplicas)
	assert.NotEmpty(t, o.webhooks.DefaultImage)
	assert.Equal(t, o.webhooks.DefaultImage, o.controller.DefaultImage)
	assert.Equal(t, 9443, o.webhookPort)
	assert.Zero(t, o.webhooks.MaxInflightBytes, "the webhooks derive the bound from the memory limit")
	o, err = parse(t, "--webhook-max-inflight-bytes=64Mi")
	require.NoError(t, err)
	assert.Equal(t, int64(64<<20), o.webhooks.MaxInflightBytes)
	assert.False(t, o.leaderElect, "leader election is switched on by the cluster manifests, off for a local run")
	assert.Equal(t, "cluster.local", o.controller.ClusterDomain)
	assert.Equal(t, "cluster.local", o.certs.ClusterDomain)
	assert.False(t, o.controller.NoDisruptionBudget, "gateways of two replicas or more get a PodDisruptionBudget by default")
	o, err = parse(t, "--gateway-disruption-budget=false")
	require.NoError(t, err)
	assert.True(t, o.controller.NoDisruptionBudget)
	o, err = parse(t, "--cluster-domain=corp.example")
	require.NoError(t, err)
	assert.Equal(t, "corp.example", o.controller.ClusterDomain, "the renderer's Service names")
	assert.Equal(t, "corp.example", o.certs.ClusterDomain, "the certificate's Service name")
}

// TestWebhookServerTLS starts the webhook server with the TLS options and
// limits the flags produce and checks what a client can negotiate.
func TestWebhookServerTLS(t *testing.T) {
	tests := map[string]struct {
		args []string
		// client side
		maxVersion uint16
		nextProtos []string
		// what must happen
		wantRefused bool
		wantProto   string
	}{
		"TLS 1.3 by default":             {maxVersion: tls.VersionTLS13, nextProtos: []string{"h2", "http/1.1"}, wantProto: "http/1.1"},
		"TLS 1.2 refused by default":     {maxVersion: tls.VersionTLS12, wantRefused: true},
		"TLS 1.2 when allowed":           {args: []string{"--tls-min-version=1.2"}, maxVersion: tls.VersionTLS12, nextProtos: []string{"http/1.1"}, wantProto: "http/1.1"},
		"TLS 1.1 refused when 1.2 min":   {args: []string{"--tls-min-version=1.2"}, maxVersion: tls.VersionTLS11, wantRefused: true},
		"HTTP/2-only client refused":     {maxVersion: tls.VersionTLS13, nextProtos: []string{"h2"}, wantRefused: true},
		"HTTP/2 negotiated when enabled": {args: []string{"--enable-http2"}, maxVersion: tls.VersionTLS13, nextProtos: []string{"h2", "http/1.1"}, wantProto: "h2"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			require.NoError(t, err)
			addr := startWebhookServer(t, o)

			conn, err := tls.Dial("tcp", addr, &tls.Config{
				// The test checks protocol negotiation, not the certificate.
				InsecureSkipVerify: true,
				MinVersion:         tls.VersionTLS10,
				MaxVersion:         tc.maxVersion,
				NextProtos:         tc.nextProtos,
			})
			if tc.wantRefused {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			defer conn.Close()
			assert.Equal(t, tc.wantProto, conn.ConnectionState().NegotiatedProtocol)
		})
	}
}

func startWebhookServer(t *testing.T, o *options) string {
	t.Helper()
	dir := t.TempDir()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.crt"), certPEM, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tls.key"), keyPEM, 0o600))

	port := ports.For(t)

	srv := inflight.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir, TLSOpts: o.tlsOptions()}, o.webhookLimits)
	webhookserver.Start(t, srv)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// TestWebhookClientCA starts the webhook server main builds from the flags,
// with handlers on the real webhook paths, and checks who gets through:
// with --webhook-client-ca, only callers with a certificate of that CA on
// the admission paths, anyone on /convert; without it, anyone.
func TestWebhookClientCA(t *testing.T) {
	dir := t.TempDir()
	caFile := filepath.Join(dir, "client-ca.crt")
	clientCert := writeClientCA(t, caFile)

	tests := map[string]struct {
		args []string
		cert bool
		path string
		want int
	}{
		"no flag: anyone":                    {path: webhooks.ValidatePath, want: http.StatusOK},
		"no certificate: validate refused":   {args: []string{"--webhook-client-ca=" + caFile}, path: webhooks.ValidatePath, want: http.StatusUnauthorized},
		"no certificate: mutate refused":     {args: []string{"--webhook-client-ca=" + caFile}, path: webhooks.MutatePath, want: http.StatusUnauthorized},
		"no certificate: convert stays open": {args: []string{"--webhook-client-ca=" + caFile}, path: webhooks.ConvertPath, want: http.StatusOK},
		"certificate: validate":              {args: []string{"--webhook-client-ca=" + caFile}, cert: true, path: webhooks.ValidatePath, want: http.StatusOK},
		"certificate: mutate":                {args: []string{"--webhook-client-ca=" + caFile}, cert: true, path: webhooks.MutatePath, want: http.StatusOK},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, err := parse(t, tc.args...)
			require.NoError(t, err)
			auth, err := o.clientAuth()
			require.NoError(t, err)
			addr := startManagerWebhookServer(t, o, auth)

			cfg := &tls.Config{InsecureSkipVerify: true} // the test checks the client side
			if tc.cert {
				cfg.Certificates = []tls.Certificate{clientCert}
			}
			c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 10 * time.Second}
			resp, err := c.Post("https://"+addr+tc.path, "application/json", strings.NewReader("{}"))
			require.NoError(t, err)
			defer resp.Body.Close()
			assert.Equal(t, tc.want, resp.StatusCode)
		})
	}

	o, err := parse(t, "--webhook-client-ca="+filepath.Join(dir, "missing.crt"))
	require.NoError(t, err)
	_, err = o.clientAuth()
	assert.ErrorContains(t, err, "--webhook-client-ca: open ")
}

// startManagerWebhookServer starts the webhook server of o's manager
// options on a reserved port, with a self-signed serving certificate and a
// handler answering 200 on each webhook path.
func startManagerWebhookServer(t *testing.T, o *options, auth *certs.ClientAuth) string {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", []net.IP{net.ParseIP("127.0.0.1")}, nil)
	require.NoError(t, err)
	serving, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	o.webhookPort = ports.For(t)

	srv := o.managerOptions(runtime.NewScheme(), func(c *tls.Config) {
		c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil }
	}, auth, nil).WebhookServer
	for _, path := range []string{webhooks.MutatePath, webhooks.ValidatePath, webhooks.ConvertPath} {
		srv.Register(path, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}
	webhookserver.Start(t, srv)
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(o.webhookPort))
}

// writeClientCA writes a new CA to file and returns a client certificate it
// signed.
func writeClientCA(t *testing.T, file string) tls.Certificate {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test client CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "kube-apiserver"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}
