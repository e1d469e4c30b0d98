package certs

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// backdate is how far before its issue time a certificate becomes valid, so
// an API server or replica whose clock lags the issuer's (by minutes, as
// unsynchronised clocks do) accepts it; client-go's self-signed
// certificates take the same hour. Being a constant, it also lets the
// issue time be read back from NotBefore.
const backdate = time.Hour

// keyPair is a certificate with its private key.
type keyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newCA creates a self-signed CA valid from now-backdate for lifetime.
func newCA(now time.Time, lifetime time.Duration) (keyPair, error) {
	return signed(&x509.Certificate{
		Subject:               pkix.Name{CommonName: fmt.Sprintf("apigateway-operator-ca@%d", now.Unix())},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(lifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}, nil)
}

// newLeaf creates a serving certificate for the given names signed by ca.
// It never outlives its CA: a leaf valid past its issuer is rejected anyway.
func newLeaf(ca keyPair, now time.Time, lifetime time.Duration, dnsNames []string, ips []net.IP) (keyPair, error) {
	cn := "apigateway-operator-webhook"
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	return signed(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		NotBefore:   now.Add(-backdate),
		NotAfter:    leafNotAfter(ca.cert, now, lifetime),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    dnsNames,
		IPAddresses: ips,
	}, &ca)
}

// signed gives tmpl a new P-256 key and a random serial and signs it with
// issuer, or with its own key when issuer is nil (a self-signed CA).
func signed(tmpl *x509.Certificate, issuer *keyPair) (keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return keyPair{}, err
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return keyPair{}, err
	}
	parent, signer := tmpl, crypto.Signer(key)
	if issuer != nil {
		parent, signer = issuer.cert, issuer.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		return keyPair{}, err
	}
	cert, err := x509.ParseCertificate(der)
	return keyPair{cert: cert, key: key}, err
}

// leafNotAfter is when a leaf issued by ca at now for lifetime would expire.
func leafNotAfter(ca *x509.Certificate, now time.Time, lifetime time.Duration) time.Time {
	notAfter := now.Add(lifetime)
	if ca.NotAfter.Before(notAfter) {
		return ca.NotAfter
	}
	return notAfter
}

func newSerial() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}

// encodeCerts PEM-encodes certificates in order.
func encodeCerts(certs ...*x509.Certificate) []byte {
	var buf bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return buf.Bytes()
}

// encodeKey PEM-encodes a private key as PKCS#8. The encoding of a given key
// is deterministic, so re-encoding an unchanged key leaves the Secret alone.
func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// parseCerts returns every certificate in data that parses, skipping other
// PEM blocks and garbage: a half-written bundle still yields its good part.
func parseCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if c, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, c)
		}
	}
}

// parseKey parses the first private key in data (PKCS#8, SEC 1 or PKCS#1).
func parseKey(data []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM data")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if s, ok := k.(crypto.Signer); ok {
			return s, nil
		}
		return nil, fmt.Errorf("unsupported key type %T", k)
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("not a PKCS#8, SEC 1 or PKCS#1 private key")
}

// matches reports whether key is the private key of cert.
func matches(cert *x509.Certificate, key crypto.Signer) bool {
	pub, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(cert.PublicKey)
}

// bundleHash identifies a CA bundle in the injection annotation.
func bundleHash(bundle []byte) string {
	sum := sha256.Sum256(bundle)
	return hex.EncodeToString(sum[:8])
}

// verifyLeaf reports whether leaf (with the intermediates that follow it in
// chain) chains to a CA in bundle for server authentication at now.
func verifyLeaf(chain []*x509.Certificate, bundle []byte, now time.Time) error {
	_, err := verifiedRoot(chain, bundle, now)
	return err
}

// verifiedRoot is verifyLeaf that also returns the CA of bundle the chain
// verifies to (the earliest to expire, should several).
func verifiedRoot(chain []*x509.Certificate, bundle []byte, now time.Time) (*x509.Certificate, error) {
	if len(chain) == 0 {
		return nil, errors.New("no serving certificate")
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return nil, errors.New("the CA bundle holds no certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	verified, err := chain[0].Verify(x509.VerifyOptions{
		Roots:         roots,
		Intermediates: inter,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	if err != nil {
		return nil, err
	}
	var root *x509.Certificate
	for _, v := range verified {
		if r := v[len(v)-1]; root == nil || r.NotAfter.Before(root.NotAfter) {
			root = r
		}
	}
	return root, nil
}

// tlsChain returns the parsed chain of a tls.Certificate.
func tlsChain(c *tls.Certificate) []*x509.Certificate {
	if c == nil {
		return nil
	}
	if c.Leaf != nil && len(c.Certificate) == 1 {
		return []*x509.Certificate{c.Leaf}
	}
	var out []*x509.Certificate
	for _, der := range c.Certificate {
		if x, err := x509.ParseCertificate(der); err == nil {
			out = append(out, x)
		}
	}
	return out
}
