package certs

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"time"
)

// Keys of the self-signed Secret. tls.crt and tls.key follow the
// kubernetes.io/tls convention; ca.crt is the bundle every webhook client
// must trust, newest CA first.
const (
	KeyCABundle = "ca.crt"
	KeyCAKey    = "ca.key"
	// KeyNextCAKey holds the key of a CA that is already in the bundle but
	// signs nothing yet: it is promoted once the bundle is injected.
	KeyNextCAKey = "ca-next.key"
	KeyTLSCert   = "tls.crt"
	KeyTLSKey    = "tls.key"

	// AnnotationInjected records which bundle was seen in every injection
	// target, and since when: "<bundle hash> <RFC 3339 time>".
	AnnotationInjected = "apigateway.example.com/ca-bundle-injected"
)

// rotationPolicy is what the self-signed Secret must satisfy.
type rotationPolicy struct {
	CALifetime, CARenewBefore     time.Duration
	CertLifetime, CertRenewBefore time.Duration
	// Propagation is how long a new bundle must have been in every
	// injection target before a certificate signed by the new CA is served:
	// the API servers pick up webhook configuration changes from a watch.
	Propagation time.Duration
	// Grace is how long the old CA stays in the bundle after the first
	// certificate of the new CA was issued: every replica must have picked
	// up the new certificate before clients stop trusting the old one.
	Grace    time.Duration
	DNSNames []string
	IPs      []net.IP
}

// secretContent is the part of the Secret the plan reads and writes.
type secretContent struct {
	Data        map[string][]byte
	Annotations map[string]string
}

// decision is what plan concluded.
type decision struct {
	// Secret is the wanted content (a copy; the input is not modified).
	Secret secretContent
	// Reasons say why the Secret changes; empty when it does not.
	Reasons []string
	// Next is when the Secret must be looked at again even if nothing
	// else happens (a renewal or promotion becomes due).
	Next time.Time
}

// Changed reports whether the Secret must be written.
func (d decision) Changed() bool { return len(d.Reasons) > 0 }

// state is the parsed, repaired view of a Secret at one instant.
type state struct {
	bundle []*x509.Certificate // valid CAs, in Secret order, deduplicated
	active *keyPair            // the CA that signs the leaf
	next   *keyPair            // staged CA: in the bundle, not yet signing
	leaf   *keyPair            // the serving certificate, if usable
}

// plan computes what the Secret should hold at now. It is a pure function of
// its inputs except for the randomness of new keys.
//
// The CA rotation runs in three steps so that no client ever sees a serving
// certificate it does not trust:
//  1. a new CA is generated and added to the bundle, its key kept aside as
//     ca-next.key; the old CA keeps signing;
//  2. once the bundle is recorded as injected everywhere (AnnotationInjected)
//     for rotationPolicy.Propagation, the new CA is promoted and a new leaf issued;
//  3. rotationPolicy.Grace after that leaf was issued, the old CA leaves the bundle.
func plan(in secretContent, now time.Time, p rotationPolicy) (decision, error) {
	s := parse(in.Data, now)
	var reasons []string
	add := func(format string, args ...any) { reasons = append(reasons, fmt.Sprintf(format, args...)) }
	issuer := s.leafIssuer(now)

	switch {
	case s.active == nil && s.next == nil && issuer != nil:
		// The CA key is lost but clients still trust the served
		// certificate: rotate the CA gracefully instead of breaking them.
		if err := s.stage(now, p); err != nil {
			return decision{}, err
		}
		add("the CA key is missing or does not match the bundle: staged a new CA")
	case s.active == nil && issuer == nil:
		if s.next != nil {
			s.active, s.next = s.next, nil
			add("no usable CA or serving certificate: promoted the staged CA")
		} else {
			ca, err := newCA(now, p.CALifetime)
			if err != nil {
				return decision{}, err
			}
			s.active = &ca
			s.bundle = append([]*x509.Certificate{ca.cert}, s.bundle...)
			add("no usable CA: created one")
		}
	}

	if s.active != nil && s.next == nil && !now.Before(s.active.cert.NotAfter.Add(-p.CARenewBefore)) {
		if err := s.stage(now, p); err != nil {
			return decision{}, err
		}
		add("the CA expires at %s: staged its successor", s.active.cert.NotAfter.UTC().Format(time.RFC3339))
	}

	injectedAt, injected := injectedSince(in.Annotations, encodeCerts(s.bundle...))
	if s.next != nil && injected && !now.Before(injectedAt.Add(p.Propagation)) {
		s.active, s.next = s.next, nil
		add("the bundle with the staged CA is injected since %s: promoted it", injectedAt.UTC().Format(time.RFC3339))
	}

	if s.active != nil {
		if why := s.leafRenewal(now, p); why != "" {
			leaf, err := newLeaf(*s.active, now, p.CertLifetime, p.DNSNames, p.IPs)
			if err != nil {
				return decision{}, err
			}
			s.leaf = &leaf
			add("%s: issued a new serving certificate", why)
		}
	}

	if old := s.retired(now, p); len(old) > 0 {
		s.bundle = slices.DeleteFunc(s.bundle, func(c *x509.Certificate) bool { return slices.Contains(old, c) })
		add("dropped %d old CA(s) from the bundle", len(old))
	}

	out, err := s.encode(in)
	if err != nil {
		return decision{}, err
	}
	if len(reasons) == 0 && !sameData(in.Data, out.Data) {
		add("repaired malformed or extra data")
	}
	return decision{Secret: out, Reasons: reasons, Next: s.nextCheck(now, p, in.Annotations)}, nil
}

// parse reads the Secret's data, keeping only what is usable at now.
func parse(data map[string][]byte, now time.Time) *state {
	s := &state{}
	for _, c := range parseCerts(data[KeyCABundle]) {
		if c.IsCA && now.Before(c.NotAfter) && !slices.ContainsFunc(s.bundle, c.Equal) {
			s.bundle = append(s.bundle, c)
		}
	}
	s.active = s.pairFromBundle(data[KeyCAKey], now)
	s.next = s.pairFromBundle(data[KeyNextCAKey], now)
	if s.next != nil && s.active != nil && s.next.cert.Equal(s.active.cert) {
		s.next = nil
	}
	if chain := parseCerts(data[KeyTLSCert]); len(chain) > 0 {
		if key, err := parseKey(data[KeyTLSKey]); err == nil && matches(chain[0], key) {
			s.leaf = &keyPair{cert: chain[0], key: key}
		}
	}
	return s
}

// pairFromBundle pairs a key with the bundle CA it belongs to, if any and
// if that CA is valid at now. A CA from the future (issued by a replica
// whose clock is ahead of this one's by more than the backdate) signs
// nothing here: every leaf it signed would fail verification at now, and
// be issued again, in a loop of Secret writes. It stays in the bundle.
func (s *state) pairFromBundle(keyPEM []byte, now time.Time) *keyPair {
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil
	}
	for _, c := range s.bundle {
		if matches(c, key) && !now.Before(c.NotBefore) {
			return &keyPair{cert: c, key: key}
		}
	}
	return nil
}

// leafIssuer is the bundle CA the leaf verifies against at now, or nil when
// the leaf is missing, expired, not yet valid or trusted by no bundle CA.
func (s *state) leafIssuer(now time.Time) *x509.Certificate {
	if s.leaf == nil {
		return nil
	}
	for _, c := range s.bundle {
		if verifyLeaf([]*x509.Certificate{s.leaf.cert}, encodeCerts(c), now) == nil {
			return c
		}
	}
	return nil
}

// stage generates the next CA and puts it first in the bundle.
func (s *state) stage(now time.Time, p rotationPolicy) error {
	ca, err := newCA(now, p.CALifetime)
	if err != nil {
		return err
	}
	s.next = &ca
	s.bundle = append([]*x509.Certificate{ca.cert}, s.bundle...)
	return nil
}

// leafRenewal says why the leaf must be reissued by the active CA, or "".
func (s *state) leafRenewal(now time.Time, p rotationPolicy) string {
	issuer := s.leafIssuer(now)
	switch {
	case s.leaf == nil:
		return "the serving certificate or its key is missing or malformed"
	case issuer == nil:
		return "the serving certificate is expired or not trusted by the bundle"
	case !issuer.Equal(s.active.cert):
		return "the serving certificate is not signed by the current CA"
	case !sameNames(s.leaf.cert, p):
		return "the serving certificate's names differ from the configured ones"
	}
	due := !now.Before(s.leaf.cert.NotAfter.Add(-p.CertRenewBefore))
	// A leaf capped at its CA's expiry is not improved by reissuing it from
	// the same CA; it waits for the CA's successor instead of churning.
	if due && leafNotAfter(s.active.cert, now, p.CertLifetime).After(s.leaf.cert.NotAfter) {
		return fmt.Sprintf("the serving certificate expires at %s", s.leaf.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return ""
}

// retired lists the bundle CAs that may go: neither active nor staged, once
// the active CA's leaf has been served for rotationPolicy.Grace.
func (s *state) retired(now time.Time, p rotationPolicy) []*x509.Certificate {
	if s.active == nil || s.leaf == nil || !issuedBy(s.leaf.cert, s.active.cert) {
		return nil
	}
	if now.Before(issuedAt(s.leaf.cert).Add(p.Grace)) {
		return nil
	}
	var old []*x509.Certificate
	for _, c := range s.bundle {
		if !c.Equal(s.active.cert) && (s.next == nil || !c.Equal(s.next.cert)) {
			old = append(old, c)
		}
	}
	return old
}

// encode writes the state back into a copy of in, keeping foreign keys.
func (s *state) encode(in secretContent) (secretContent, error) {
	out := secretContent{Data: maps.Clone(in.Data), Annotations: maps.Clone(in.Annotations)}
	if out.Data == nil {
		out.Data = map[string][]byte{}
	}
	// The staged CA goes first so the newest CA leads the bundle.
	order := slices.Clone(s.bundle)
	if s.next != nil {
		order = slices.DeleteFunc(order, s.next.cert.Equal)
		order = append([]*x509.Certificate{s.next.cert}, order...)
	}
	out.Data[KeyCABundle] = encodeCerts(order...)
	delete(out.Data, KeyNextCAKey)
	for key, pair := range map[string]*keyPair{KeyCAKey: s.active, KeyNextCAKey: s.next} {
		if pair == nil {
			delete(out.Data, key)
			continue
		}
		pem, err := encodeKey(pair.key)
		if err != nil {
			return secretContent{}, err
		}
		out.Data[key] = pem
	}
	if s.leaf != nil {
		pem, err := encodeKey(s.leaf.key)
		if err != nil {
			return secretContent{}, err
		}
		out.Data[KeyTLSCert], out.Data[KeyTLSKey] = encodeCerts(s.leaf.cert), pem
	}
	return out, nil
}

// nextCheck is the earliest instant at which plan would decide differently.
func (s *state) nextCheck(now time.Time, p rotationPolicy, annotations map[string]string) time.Time {
	var times []time.Time
	if s.active != nil {
		times = append(times, s.active.cert.NotAfter.Add(-p.CARenewBefore))
	}
	if s.leaf != nil {
		times = append(times, s.leaf.cert.NotAfter.Add(-p.CertRenewBefore), s.leaf.cert.NotAfter)
		if len(s.bundle) > 1 {
			times = append(times, issuedAt(s.leaf.cert).Add(p.Grace))
		}
	}
	if s.next != nil {
		if at, ok := injectedSince(annotations, encodeCerts(s.bundle...)); ok {
			times = append(times, at.Add(p.Propagation))
		}
	}
	for _, c := range s.bundle {
		times = append(times, c.NotAfter)
	}
	next := time.Time{}
	for _, t := range times {
		if t.After(now) && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}

// markInjected returns the annotations recording that bundle is in every
// injection target at now, and whether they changed. An annotation already
// naming this bundle keeps its earlier time.
func markInjected(annotations map[string]string, bundle []byte, now time.Time) (map[string]string, bool) {
	if _, ok := injectedSince(annotations, bundle); ok {
		return annotations, false
	}
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[AnnotationInjected] = bundleHash(bundle) + " " + now.UTC().Format(time.RFC3339)
	return out, true
}

// injectedSince reads AnnotationInjected for bundle, as encoded in the
// Secret: any change to the bundle resets the clock.
func injectedSince(annotations map[string]string, bundle []byte) (time.Time, bool) {
	hash, at, ok := strings.Cut(annotations[AnnotationInjected], " ")
	if !ok || hash != bundleHash(bundle) {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, at)
	return t, err == nil
}

// issuedBy reports whether ca signed leaf.
func issuedBy(leaf, ca *x509.Certificate) bool {
	return leaf.CheckSignatureFrom(ca) == nil
}

// issuedAt is when a certificate made by this package was issued.
func issuedAt(c *x509.Certificate) time.Time { return c.NotBefore.Add(backdate) }

// sameNames reports whether the leaf covers exactly the configured names.
func sameNames(leaf *x509.Certificate, p rotationPolicy) bool {
	if !slices.Equal(leaf.DNSNames, p.DNSNames) || len(leaf.IPAddresses) != len(p.IPs) {
		return false
	}
	for i, ip := range leaf.IPAddresses {
		if !ip.Equal(p.IPs[i]) {
			return false
		}
	}
	return true
}

func sameData(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}
