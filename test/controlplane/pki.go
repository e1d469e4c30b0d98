package controlplane

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/csv"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// renewBefore is how long before its end a kept serving certificate is
// replaced, so no run starts with one about to expire.
const renewBefore = 24 * time.Hour

// preparePKI makes what the API server and its clients need, keeping what
// a kept directory already holds: the serving certificate (a year, made
// again when it nears its end), the service account signing key and the
// users' tokens.
func (c *ControlPlane) preparePKI(now time.Time) error {
	var err error
	if c.ca, err = ensureServingCert(c.path(servingCertFile), c.path(servingKeyFile), now); err != nil {
		return fmt.Errorf("the API server's serving certificate: %w", err)
	}
	if err := ensureFile(c.path(saKeyFile), keyutil.MakeEllipticPrivateKeyPEM); err != nil {
		return fmt.Errorf("the service account signing key: %w", err)
	}
	users := append([]User{{Name: Admin, Groups: []string{"system:masters"}}}, c.opts.Users...)
	if c.tokens, err = ensureTokens(c.path(tokensFile), users); err != nil {
		return fmt.Errorf("the users' tokens: %w", err)
	}
	return nil
}

// ensureServingCert returns the bundle that verifies the serving
// certificate in certFile, after making one (with its own CA, as
// kube-apiserver makes itself one) unless the file holds one valid for
// renewBefore more.
func ensureServingCert(certFile, keyFile string, now time.Time) ([]byte, error) {
	bundle, err := os.ReadFile(certFile)
	if err == nil && servingCertFresh(bundle, now) {
		if _, err := os.Stat(keyFile); err == nil {
			return bundle, nil
		}
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	bundle, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		return nil, err
	}
	return bundle, os.WriteFile(certFile, bundle, 0o600)
}

// servingCertFresh is whether every certificate of a PEM bundle is valid
// for renewBefore more.
func servingCertFresh(bundle []byte, now time.Time) bool {
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return false
	}
	for _, c := range certs {
		if now.Add(renewBefore).After(c.NotAfter) {
			return false
		}
	}
	return true
}

// ensureFile writes generate's content to path unless the file exists.
func ensureFile(path string, generate func() ([]byte, error)) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	data, err := generate()
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// ensureTokens writes kube-apiserver's --token-auth-file for users, keeping
// the tokens the file already gives them, and returns each user's token.
func ensureTokens(path string, users []User) (map[string]string, error) {
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	tokens := parseTokens(old)
	for _, u := range users {
		if tokens[u.Name] == "" {
			b := make([]byte, 24)
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			tokens[u.Name] = hex.EncodeToString(b)
		}
	}
	data, err := formatTokens(users, tokens)
	if err != nil {
		return nil, err
	}
	return tokens, os.WriteFile(path, data, 0o600)
}

// parseTokens reads a token file (token,user,uid,"group,...") into each
// user's token; what does not parse is forgotten, and made again.
func parseTokens(data []byte) map[string]string {
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = -1
	records, _ := r.ReadAll()
	tokens := map[string]string{}
	for _, rec := range records {
		if len(rec) >= 2 && rec[0] != "" && rec[1] != "" {
			tokens[rec[1]] = rec[0]
		}
	}
	return tokens
}

// formatTokens writes a token file of users with their tokens; the uid is
// the user's name.
func formatTokens(users []User, tokens map[string]string) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	for _, u := range users {
		if err := w.Write([]string{tokens[u.Name], u.Name, u.Name, strings.Join(u.Groups, ",")}); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// WebhookClientAuth is what WriteWebhookClientAuth wrote.
type WebhookClientAuth struct {
	// CA signed Cert; a webhook server that trusts it for client
	// certificates admits the API server.
	CA string
	// Cert and Key are the API server's client certificate.
	Cert, Key string
	// Flags, given to the API server (Options.APIServerFlags), make it
	// present Cert to the admission webhooks.
	Flags map[string]string
}

// WriteWebhookClientAuth makes the API server present a client
// certificate to the admission webhooks at host ("127.0.0.1:9443", as the
// webhook URL names it, or "*" for any), as the README's Security section
// tells cluster admins to: it writes into dir a CA, a client certificate
// it signs (CN kube-apiserver), a kubeconfig whose user, named after host,
// holds that certificate, and the admission configuration that gives the
// kubeconfig to both webhook admission plugins. The conversion webhook
// gets no client certificate from kube-apiserver, whatever its
// configuration says.
func WriteWebhookClientAuth(dir, host string, now time.Time) (WebhookClientAuth, error) {
	a := WebhookClientAuth{
		CA:   filepath.Join(dir, "webhook-client-ca.crt"),
		Cert: filepath.Join(dir, "webhook-client.crt"),
		Key:  filepath.Join(dir, "webhook-client.key"),
	}
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	admission := filepath.Join(dir, "admission-config.yaml")
	a.Flags = map[string]string{"admission-control-config-file": admission}
	caPEM, certPEM, keyPEM, err := newClientCert("kube-apiserver", now, 365*24*time.Hour)
	if err != nil {
		return a, err
	}
	files := []struct {
		path string
		data []byte
	}{
		{a.CA, caPEM}, {a.Cert, certPEM}, {a.Key, keyPEM},
		{kubeconfig, fmt.Appendf(nil, "apiVersion: v1\nkind: Config\nusers:\n- name: %q\n  user:\n    client-certificate: %s\n    client-key: %s\n", host, a.Cert, a.Key)},
		{admission, admissionConfig(kubeconfig)},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return a, err
		}
	}
	return a, nil
}

// admissionConfig gives both webhook admission plugins kubeconfig, from
// which kube-apiserver takes the credentials it presents to each webhook
// host.
func admissionConfig(kubeconfig string) []byte {
	out := []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n")
	for _, plugin := range []string{"ValidatingAdmissionWebhook", "MutatingAdmissionWebhook"} {
		out = fmt.Appendf(out, "- name: %s\n  configuration:\n    apiVersion: apiserver.config.k8s.io/v1\n    kind: WebhookAdmissionConfiguration\n    kubeConfigFile: %s\n", plugin, kubeconfig)
	}
	return out
}

// newClientCert makes a CA and a client certificate for cn that it signs,
// both valid from now for lifetime, as PEM. The CA's key is not kept: a
// new CA is made at every start.
func newClientCert(cn string, now time.Time, lifetime time.Duration) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn + " webhook client CA"},
		NotBefore:             now.Add(-time.Hour), // clock skew
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	leaf := &x509.Certificate{
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             ca.NotBefore,
		NotAfter:              ca.NotAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	for _, c := range []*x509.Certificate{ca, leaf} {
		if c.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
			return nil, nil, nil, err
		}
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, caKey.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, nil, nil, err
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
