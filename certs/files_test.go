package certs

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// issue makes a CA and a serving certificate for 127.0.0.1 and localhost,
// as any external issuer would.
func issue(t *testing.T) (ca, leaf keyPair) {
	t.Helper()
	now := time.Now()
	ca, err := newCA(now, 24*time.Hour)
	require.NoError(t, err)
	leaf, err = newLeaf(ca, now, time.Hour, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	require.NoError(t, err)
	return ca, leaf
}

// writeCertFiles writes leaf as tls.crt and tls.key into dir.
func writeCertFiles(t *testing.T, dir string, leaf keyPair) {
	t.Helper()
	key, err := encodeKey(leaf.key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, KeyTLSCert), encodeCerts(leaf.cert), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, KeyTLSKey), key, 0o600))
}

// servedSerial dials the webhook server trusting only ca and returns the
// serial number of the certificate it serves.
func servedSerial(port int, ca *x509.Certificate) (string, error) {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12})
	if err != nil {
		return "", err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String(), nil
}

func TestFilesModeServesAndHotReloadsTheDirectory(t *testing.T) {
	dir := t.TempDir()
	ca1, leaf1 := issue(t)
	writeCertFiles(t, dir, leaf1)
	op := startOperator(t, Options{Mode: ModeFiles, CertDir: dir})

	serial, err := servedSerial(op.port, ca1.cert)
	require.NoError(t, err)
	assert.Equal(t, leaf1.cert.SerialNumber.String(), serial)
	require.NoError(t, op.p.ReadyCheck(nil))

	ca2, leaf2 := issue(t)
	writeCertFiles(t, dir, leaf2)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		serial, err := servedSerial(op.port, ca2.cert)
		if assert.NoError(c, err) {
			assert.Equal(c, leaf2.cert.SerialNumber.String(), serial)
		}
	}, time.Minute, 50*time.Millisecond, "the new certificate was never served")
}

func TestNewRejectsBadOptions(t *testing.T) {
	valid := func() Options {
		var o Options
		o.BindFlags(newFlagSet())
		return o
	}
	tests := map[string]struct {
		mutate func(*Options)
		want   string
	}{
		"unknown mode":              {mutate: func(o *Options) { o.Mode = "acme" }, want: `--cert-mode: want self-signed, cert-manager or files, got "acme"`},
		"files without a dir":       {mutate: func(o *Options) { o.Mode = ModeFiles }, want: "needs a certificate directory"},
		"files without the files":   {mutate: func(o *Options) { o.Mode, o.CertDir = ModeFiles, t.TempDir() }, want: "loading the certificate from"},
		"bad certificate reference": {mutate: func(o *Options) { o.Mode, o.CertDir, o.Certificate = ModeCertManager, "/x", "name-only" }, want: "want namespace/name"},
		"renewal not before expiry": {mutate: func(o *Options) { o.CertRenewBefore = o.CertLifetime }, want: "--cert-renew-before (2160h0m0s) must be shorter than --cert-lifetime"},
		"CA renewal too late":       {mutate: func(o *Options) { o.CARenewBefore = time.Hour }, want: "plus --cert-ca-grace-period (1h0m0s) must be shorter than --cert-ca-renew-before"},
		"negative lifetime":         {mutate: func(o *Options) { o.CALifetime = -time.Hour }, want: "--cert-ca-lifetime: must be positive"},
		"bad Secret name":           {mutate: func(o *Options) { o.SecretName = "Bad_Name" }, want: `--cert-secret-name: "Bad_Name"`},
		"bad extra host":            {mutate: func(o *Options) { o.ExtraHosts = []string{"no spaces"} }, want: `"no spaces" is neither an IP address nor a DNS name`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := valid()
			tc.mutate(&o)
			_, err := New(o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	_, err := New(valid())
	assert.NoError(t, err, "the defaults are valid")
}

func TestBindFlagsParsesExtraHosts(t *testing.T) {
	var o Options
	fs := newFlagSet()
	o.BindFlags(fs)
	require.NoError(t, fs.Parse([]string{"--cert-extra-hosts=127.0.0.1, localhost,", "--cert-service-name=wh", "--cert-service-namespace=sys"}))
	p := o.policy()
	assert.Equal(t, []string{"wh", "wh.sys", "wh.sys.svc", "wh.sys.svc.cluster.local", "localhost"}, p.DNSNames)
	require.Len(t, p.IPs, 1)
	assert.Equal(t, "127.0.0.1", p.IPs[0].String())

	o.ClusterDomain = "corp.example"
	assert.Equal(t, []string{"wh", "wh.sys", "wh.sys.svc", "wh.sys.svc.corp.example", "localhost"}, o.policy().DNSNames)
}
