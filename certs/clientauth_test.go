package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/webhookserver"
)

// issueClientCert issues a client certificate (ExtKeyUsageClientAuth, as
// a kube-apiserver's admission kubeconfig holds) signed by ca.
func issueClientCert(ca keyPair, cn string) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	serial, err := newSerial()
	if err != nil {
		return keyPair{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return keyPair{cert: cert, key: key}, err
}

// newClientCert is issueClientCert for a TLS client.
func newClientCert(t testing.TB, ca keyPair, cn string) tls.Certificate {
	t.Helper()
	kp, err := issueClientCert(ca, cn)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{kp.cert.Raw}, PrivateKey: kp.key, Leaf: kp.cert}
}

// newTestCA is a CA for a test, valid for a day.
func newTestCA(t testing.TB) keyPair {
	t.Helper()
	ca, err := newCA(time.Now(), 24*time.Hour)
	require.NoError(t, err)
	return ca
}

// startClientAuthServer runs a webhook server on a reserved port whose handlers all
// answer 200 "ok", with auth in front of every path but /convert, and
// returns its address and the CA of its serving certificate.
func startClientAuthServer(t *testing.T, auth *ClientAuth) (addr string, servingCA *x509.CertPool) {
	t.Helper()
	ca, leaf := issue(t)
	serving := tls.Certificate{Certificate: [][]byte{leaf.cert.Raw}, PrivateKey: leaf.key, Leaf: leaf.cert}
	port := ports.For(t)
	srv := auth.Server(inflight.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, TLSOpts: []func(*tls.Config){
		func(c *tls.Config) {
			c.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &serving, nil }
		},
		auth.TLSConfig,
	}}, inflight.Limits{}))
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	for _, path := range []string{mutatePath, validatePath, convertPath} {
		srv.Register(path, ok)
	}
	webhookserver.Start(t, srv)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	return fmt.Sprintf("127.0.0.1:%d", port), roots
}

// post POSTs body to path over a new connection, trusting roots and
// presenting cert when it is not nil. It returns the status code, or the
// error of a refused handshake.
//
// cert is presented whatever CAs the server names as acceptable: given
// Certificates, crypto/tls sends none whose issuer the server did not
// name, and two test CAs have one name only when made in the same second
// (newCA puts the time in it), so a foreign certificate was sometimes
// sent, refused in the handshake, and sometimes not sent at all.
func post(addr string, roots *x509.CertPool, cert *tls.Certificate, path string, body []byte) (int, error) {
	cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := c.Post("https://"+addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

func writeCA(t *testing.T, file string, cas ...keyPair) {
	t.Helper()
	var pem []byte
	for _, ca := range cas {
		pem = append(pem, encodeCerts(ca.cert)...)
	}
	require.NoError(t, os.WriteFile(file, pem, 0o600))
}

func TestClientAuthRefusesCallersWithoutACertificateOnTheAdmissionPaths(t *testing.T) {
	clientCA := newTestCA(t)
	// Made an hour earlier, so its name differs from clientCA's (see post).
	otherCA, err := newCA(time.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "client-ca.crt")
	writeCA(t, file, clientCA)
	auth, err := NewClientAuth(file, convertPath)
	require.NoError(t, err)
	addr, servingCA := startClientAuthServer(t, auth)

	signed := newClientCert(t, clientCA, "kube-apiserver")
	foreign := newClientCert(t, otherCA, "kube-apiserver")
	tests := map[string]struct {
		cert          *tls.Certificate
		path          string
		want          int
		wantHandshake bool // the TLS handshake itself fails
	}{
		"no certificate, validate":        {path: validatePath, want: http.StatusUnauthorized},
		"no certificate, mutate":          {path: mutatePath, want: http.StatusUnauthorized},
		"no certificate, convert open":    {path: convertPath, want: http.StatusOK},
		"signed certificate, validate":    {cert: &signed, path: validatePath, want: http.StatusOK},
		"signed certificate, mutate":      {cert: &signed, path: mutatePath, want: http.StatusOK},
		"signed certificate, convert":     {cert: &signed, path: convertPath, want: http.StatusOK},
		"other CA's certificate refused":  {cert: &foreign, path: validatePath, wantHandshake: true},
		"other CA's certificate, convert": {cert: &foreign, path: convertPath, wantHandshake: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, err := post(addr, servingCA, tc.cert, tc.path, []byte("{}"))
			if tc.wantHandshake {
				require.Error(t, err, "a certificate from another CA must fail the handshake")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, code)
		})
	}
}

func TestClientAuthReloadsTheCAFile(t *testing.T) {
	oldCA, newCA := newTestCA(t), newTestCA(t)
	file := filepath.Join(t.TempDir(), "client-ca.crt")
	writeCA(t, file, oldCA)
	auth, err := NewClientAuth(file, convertPath)
	require.NoError(t, err)
	auth.interval = 20 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- auth.Start(ctx) }()
	t.Cleanup(cancel)
	stop := func() {
		cancel()
		require.NoError(t, <-done)
	}
	addr, servingCA := startClientAuthServer(t, auth)
	oldCert, newCert := newClientCert(t, oldCA, "old"), newClientCert(t, newCA, "new")

	code, err := post(addr, servingCA, &oldCert, validatePath, []byte("{}"))
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
	_, err = post(addr, servingCA, &newCert, validatePath, []byte("{}"))
	require.Error(t, err, "not trusted yet")

	writeCA(t, file, newCA)
	require.Eventually(t, func() bool {
		code, err := post(addr, servingCA, &newCert, validatePath, []byte("{}"))
		return err == nil && code == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "the new CA was never trusted")
	_, err = post(addr, servingCA, &oldCert, validatePath, []byte("{}"))
	assert.Error(t, err, "the replaced CA is still trusted")

	// A file that does not parse keeps the CA that was loaded.
	stop()
	require.NoError(t, os.WriteFile(file, []byte("not a certificate"), 0o600))
	changed, err := auth.reload()
	assert.False(t, changed)
	assert.ErrorContains(t, err, "holds no PEM certificate")
	code, err = post(addr, servingCA, &newCert, validatePath, []byte("{}"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code)
}

func TestNewClientAuthFailsOnAMissingOrEmptyFile(t *testing.T) {
	dir := t.TempDir()
	_, err := NewClientAuth(filepath.Join(dir, "missing.crt"))
	assert.ErrorContains(t, err, "--webhook-client-ca: ")
	empty := filepath.Join(dir, "empty.crt")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	_, err = NewClientAuth(empty)
	assert.ErrorContains(t, err, "holds no PEM certificate")
}
