package gatewayapi

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"example.com/apigateway-operator/test/dataplane"
)

// Traefik's entry points, one per port the Gateway's listeners use: its
// Gateway API provider serves a listener on the entry point of its port.
const (
	httpPort  = 80
	httpsPort = 443
	// pingAddr serves Traefik's /ping, its readiness.
	pingAddr = "127.0.0.1:8082"
)

// The Gateway the tests' APIGateways attach to, as a platform team would
// run it: Traefik's GatewayClass, and in namespace infra the Gateway
// public with three listeners.
const (
	gatewayClass     = "traefik"
	traefikControler = "traefik.io/gateway-controller"
	infraNamespace   = "infra"
	gatewayName      = "public"
	// listenerHTTPS terminates TLS for *.example.com with the Secret
	// tlsSecret; routes of every namespace may attach.
	listenerHTTPS = "https"
	// listenerHTTP serves plain HTTP; routes of every namespace.
	listenerHTTP = "http"
	// listenerRestricted serves *.restricted.example.com to the
	// namespaces labelled accessLabel=granted only.
	listenerRestricted = "restricted"
	accessLabel        = "gateway-access"
	tlsSecret          = "example-com-tls"
)

// traefikBinary is $TRAEFIK (the Makefile sets it), else bin/traefik.
func traefikBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TRAEFIK")
	if bin == "" {
		bin = filepath.Join(env.Root, "bin", "traefik")
	}
	_, err := os.Stat(bin)
	require.NoError(t, err, "Traefik is built by `make traefik` (or `make test`)")
	return bin
}

// startTraefik runs Traefik, with its Gateway API provider reading the
// test's API server through the admin kubeconfig, until the test ends.
// Its HTTP and HTTPS entry points listen on every address of the
// namespace; the Gateways it programs report traefikAddr. Its log is
// printed when the test fails.
func startTraefik(t *testing.T) {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "traefik.log")
	logFile, err := os.Create(logPath)
	require.NoError(t, err)
	defer logFile.Close()
	cmd := exec.Command(traefikBinary(t),
		"--entryPoints.web.address=:"+strconv.Itoa(httpPort),
		"--entryPoints.websecure.address=:"+strconv.Itoa(httpsPort),
		"--entryPoints.ping.address="+pingAddr,
		"--ping=true", "--ping.entryPoint=ping",
		// Stop at once: the test's requests are over when it stops.
		"--entryPoints.web.transport.lifeCycle.graceTimeOut=0s",
		"--entryPoints.websecure.transport.lifeCycle.graceTimeOut=0s",
		"--providers.kubernetesGateway=true",
		"--providers.kubernetesGateway.statusAddress.ip="+traefikAddr.String(),
		"--log.level=DEBUG",
		"--global.checkNewVersion=false", "--global.sendAnonymousUsage=false",
	)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	var exitErr error
	go func() {
		exitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(waitFor):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("Traefik did not stop within %s", waitFor)
		}
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("Traefik's log (it exited: %v):\n%s", exitErr, tail(out, 200))
		}
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		select {
		case <-exited:
			out, _ := os.ReadFile(logPath)
			require.FailNow(c, "Traefik exited", "%v\n%s", exitErr, tail(out, 50))
		default:
		}
		status, _, err := dataplaneGet(pingAddr, "/ping", "localhost")
		require.NoError(c, err)
		assert.Equal(c, 200, status)
	}, waitFor, tick, "Traefik's /ping")
}

// tail is the last n lines of out.
func tail(out []byte, n int) []byte {
	lines := bytes.Split(out, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}

// createGateway creates Traefik's GatewayClass and the Gateway public, with
// the listeners' certificate, and waits until Traefik has programmed it.
// It returns the roots a client trusts the certificate with.
func createGateway(t *testing.T) *x509.CertPool {
	t.Helper()
	ctx := t.Context()
	certPEM, keyPEM, roots := selfSignedCertificate(t, "*.example.com")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: infraNamespace}}
	require.NoError(t, client.IgnoreAlreadyExists(env.Client.Create(ctx, ns)))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: tlsSecret},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM},
	}))
	require.NoError(t, env.Client.Create(ctx, &gatewayv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayClass},
		Spec:       gatewayv1.GatewayClassSpec{ControllerName: traefikControler},
	}))
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: infraNamespace, Name: gatewayName},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayClass,
			Listeners: []gatewayv1.Listener{
				{
					Name: listenerHTTPS, Protocol: gatewayv1.HTTPSProtocolType, Port: httpsPort,
					Hostname: ptr.To(gatewayv1.Hostname("*.example.com")),
					TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
						CertificateRefs: []gatewayv1.SecretObjectReference{{Name: tlsSecret}}},
					AllowedRoutes: all,
				},
				{Name: listenerHTTP, Protocol: gatewayv1.HTTPProtocolType, Port: httpPort, AllowedRoutes: all},
				{
					Name: listenerRestricted, Protocol: gatewayv1.HTTPProtocolType, Port: httpPort,
					Hostname: ptr.To(gatewayv1.Hostname("*.restricted.example.com")),
					AllowedRoutes: &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{
						From:     ptr.To(gatewayv1.NamespacesFromSelector),
						Selector: &metav1.LabelSelector{MatchLabels: map[string]string{accessLabel: "granted"}},
					}},
				},
			},
		},
	}
	require.NoError(t, env.Client.Create(ctx, gw))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cur := &gatewayv1.Gateway{}
		require.NoError(c, env.Client.Get(context.Background(), client.ObjectKeyFromObject(gw), cur))
		assert.True(c, meta.IsStatusConditionTrue(cur.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed)),
			"Gateway conditions: %+v", cur.Status.Conditions)
		for _, l := range cur.Status.Listeners {
			assert.True(c, meta.IsStatusConditionTrue(l.Conditions, string(gatewayv1.ListenerConditionProgrammed)),
				"listener %s: %+v", l.Name, l.Conditions)
		}
	}, waitFor, tick, "Traefik did not program Gateway %s/%s", infraNamespace, gatewayName)
	return roots
}

// selfSignedCertificate is a certificate for host, its key and the pool
// that trusts it.
func selfSignedCertificate(t *testing.T, host string) (certPEM, keyPEM []byte, roots *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	roots = x509.NewCertPool()
	roots.AddCert(cert)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), roots
}

// client is how the tests reach the Gateway: Traefik's address, plain or
// over TLS with SNI and the listener's certificate trusted.
type gatewayClient struct {
	roots *x509.CertPool
}

// send sends method target for host, with headers ("Name: value"), to
// the Gateway's listener for scheme ("http" or "https") and returns the
// status and body.
func (g gatewayClient) send(scheme, method, host, target string, headers ...string) (int, string, error) {
	line := method + " " + target + " HTTP/1.1"
	if scheme == "https" {
		return dataplane.RawRequestTLS(net.JoinHostPort(traefikAddr.String(), strconv.Itoa(httpsPort)),
			&tls.Config{ServerName: host, RootCAs: g.roots, MinVersion: tls.VersionTLS12}, line, host, headers...)
	}
	return dataplane.RawRequest(net.JoinHostPort(traefikAddr.String(), strconv.Itoa(httpPort)), line, host, headers...)
}

func dataplaneGet(addr, target, host string) (int, string, error) {
	return dataplane.RawRequest(addr, "GET "+target+" HTTP/1.1", host)
}
