package certs

import (
	"crypto/x509"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"
)

var t0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func testPolicy() rotationPolicy {
	return rotationPolicy{
		CALifetime: 365 * 24 * time.Hour, CARenewBefore: 30 * 24 * time.Hour,
		CertLifetime: 90 * 24 * time.Hour, CertRenewBefore: 30 * 24 * time.Hour,
		Propagation: time.Minute, Grace: time.Hour,
		DNSNames: []string{"svc", "svc.ns", "svc.ns.svc", "svc.ns.svc.cluster.local", "localhost"},
		IPs:      []net.IP{net.ParseIP("127.0.0.1")},
	}
}

// mustPlan plans and fails the test on error.
func mustPlan(t *testing.T, in secretContent, now time.Time, p rotationPolicy) decision {
	t.Helper()
	d, err := plan(in, now, p)
	require.NoError(t, err)
	return d
}

// requireSettled asserts that s is healthy at now: its leaf chains to its
// bundle and planning again changes nothing.
func requireSettled(t *testing.T, s secretContent, now time.Time, p rotationPolicy) {
	t.Helper()
	require.NoError(t, verifyLeaf(parseCerts(s.Data[KeyTLSCert]), s.Data[KeyCABundle], now))
	again := mustPlan(t, s, now, p)
	require.False(t, again.Changed(), "planning again changed the Secret: %v", again.Reasons)
}

func leafOf(t *testing.T, s secretContent) *x509.Certificate {
	t.Helper()
	certs := parseCerts(s.Data[KeyTLSCert])
	require.Len(t, certs, 1)
	return certs[0]
}

func TestPlanCreatesCAAndServingCertificate(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	p := testPolicy()

	d := mustPlan(t, secretContent{}, clock.Now(), p)

	require.True(t, d.Changed())
	requireSettled(t, d.Secret, clock.Now(), p)
	assert.Len(t, parseCerts(d.Secret.Data[KeyCABundle]), 1)
	assert.NotContains(t, d.Secret.Data, KeyNextCAKey)
	leaf := leafOf(t, d.Secret)
	assert.Equal(t, p.DNSNames, leaf.DNSNames)
	assert.True(t, leaf.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))
	assert.Equal(t, clock.Now().Add(p.CertLifetime), leaf.NotAfter)
	assert.Equal(t, leaf.NotAfter.Add(-p.CertRenewBefore), d.Next, "the next look is when the leaf becomes due")
}

func TestPlanRenewsTheServingCertificateInsideTheMargin(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	p := testPolicy()
	s := mustPlan(t, secretContent{}, clock.Now(), p).Secret
	oldLeaf := leafOf(t, s)

	clock.Step(p.CertLifetime - p.CertRenewBefore - time.Second)
	assert.False(t, mustPlan(t, s, clock.Now(), p).Changed(), "renewed before the margin")

	clock.Step(time.Second)
	d := mustPlan(t, s, clock.Now(), p)
	require.True(t, d.Changed())
	assert.Equal(t, s.Data[KeyCABundle], d.Secret.Data[KeyCABundle], "a leaf renewal keeps the CA bundle")
	assert.Equal(t, s.Data[KeyCAKey], d.Secret.Data[KeyCAKey])
	newLeaf := leafOf(t, d.Secret)
	assert.NotEqual(t, oldLeaf.SerialNumber, newLeaf.SerialNumber)
	assert.Equal(t, clock.Now().Add(p.CertLifetime), newLeaf.NotAfter)
	requireSettled(t, d.Secret, clock.Now(), p)
}

func TestPlanRotatesTheCAKeepingBothInTheBundle(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	p := testPolicy()
	s := mustPlan(t, secretContent{}, clock.Now(), p).Secret
	oldCA := parseCerts(s.Data[KeyCABundle])[0]

	// Step 1: the CA enters its margin; its successor is staged.
	clock.SetTime(oldCA.NotAfter.Add(-p.CARenewBefore))
	d := mustPlan(t, s, clock.Now(), p)
	require.True(t, d.Changed())
	staged := d.Secret
	bundle := parseCerts(staged.Data[KeyCABundle])
	require.Len(t, bundle, 2)
	assert.True(t, bundle[1].Equal(oldCA), "the old CA stays in the bundle")
	assert.Contains(t, staged.Data, KeyNextCAKey)
	assert.Equal(t, s.Data[KeyCAKey], staged.Data[KeyCAKey], "the old CA keeps signing until the bundle is injected")
	requireSettled(t, staged, clock.Now(), p)

	// Without the injection record, the staged CA waits however long.
	clock.Step(p.Propagation * 10)
	assert.False(t, mustPlan(t, staged, clock.Now(), p).Changed())

	// Step 2: injected, then promoted after the propagation delay.
	var changed bool
	staged.Annotations, changed = markInjected(staged.Annotations, staged.Data[KeyCABundle], clock.Now())
	require.True(t, changed)
	clock.Step(p.Propagation - time.Second)
	assert.False(t, mustPlan(t, staged, clock.Now(), p).Changed(), "promoted before the propagation delay")
	clock.Step(time.Second)
	d = mustPlan(t, staged, clock.Now(), p)
	require.True(t, d.Changed())
	promoted := d.Secret
	assert.NotContains(t, promoted.Data, KeyNextCAKey)
	assert.Equal(t, staged.Data[KeyCABundle], promoted.Data[KeyCABundle], "promotion keeps both CAs")
	newLeaf := leafOf(t, promoted)
	assert.True(t, issuedBy(newLeaf, bundle[0]), "the new leaf is signed by the new CA")
	// Replicas still serving the old leaf stay trusted by the new bundle,
	// and the new leaf is trusted by the bundle injected before promotion.
	require.NoError(t, verifyLeaf(parseCerts(staged.Data[KeyTLSCert]), promoted.Data[KeyCABundle], clock.Now()))
	require.NoError(t, verifyLeaf([]*x509.Certificate{newLeaf}, staged.Data[KeyCABundle], clock.Now()))
	requireSettled(t, promoted, clock.Now(), p)

	// Step 3: the old CA leaves the bundle after the grace period.
	clock.Step(p.Grace - time.Second)
	assert.False(t, mustPlan(t, promoted, clock.Now(), p).Changed(), "dropped the old CA within the grace period")
	clock.Step(time.Second)
	d = mustPlan(t, promoted, clock.Now(), p)
	require.True(t, d.Changed())
	final := parseCerts(d.Secret.Data[KeyCABundle])
	require.Len(t, final, 1)
	assert.True(t, final[0].Equal(bundle[0]))
	requireSettled(t, d.Secret, clock.Now(), p)
}

// TestPlanNeverServesAnUntrustedCertificate runs the plan over two CA
// lifetimes with short durations. At every step the API server still holds
// the bundle injected at the previous step, replicas switch to the new leaf
// at once, and a lagging replica still serves the previous leaf: both
// leaves must verify against both bundles.
func TestPlanNeverServesAnUntrustedCertificate(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	p := rotationPolicy{
		CALifetime: 10 * 24 * time.Hour, CARenewBefore: 3 * 24 * time.Hour,
		CertLifetime: 2 * 24 * time.Hour, CertRenewBefore: 24 * time.Hour,
		Propagation: 5 * time.Minute, Grace: time.Hour,
		DNSNames: []string{"svc.ns.svc"},
	}
	s := mustPlan(t, secretContent{}, clock.Now(), p).Secret
	injected := s.Data[KeyCABundle]
	cas, leaves := map[string]bool{}, map[string]bool{}
	for range 20 * 24 * 2 {
		clock.Step(30 * time.Minute)
		now := clock.Now()
		prevLeaf := s.Data[KeyTLSCert]
		s = mustPlan(t, s, now, p).Secret
		for _, leaf := range [][]byte{prevLeaf, s.Data[KeyTLSCert]} {
			for _, bundle := range [][]byte{injected, s.Data[KeyCABundle]} {
				require.NoError(t, verifyLeaf(parseCerts(leaf), bundle, now), "at %s", now)
			}
		}
		injected = s.Data[KeyCABundle]
		s.Annotations, _ = markInjected(s.Annotations, injected, now)
		for _, c := range parseCerts(injected) {
			cas[string(c.Raw)] = true
		}
		leaves[string(s.Data[KeyTLSCert])] = true
	}
	assert.GreaterOrEqual(t, len(cas), 3, "the CA rotated about every 7 days")
	assert.GreaterOrEqual(t, len(leaves), 18, "the leaf rotated about daily")
}

func TestPlanRepairsCorruptedOrHalfWrittenData(t *testing.T) {
	p := testPolicy()
	good := mustPlan(t, secretContent{}, t0, p).Secret
	other := mustPlan(t, secretContent{}, t0, p).Secret
	half := func(b []byte) []byte { return b[:len(b)/2] }

	tests := map[string]struct {
		mutate func(map[string][]byte)
		// keepsCA: the repair reuses the CA clients already trust.
		keepsCA bool
		// staged: the CA key was lost; a successor is staged while the
		// served leaf stays.
		staged bool
	}{
		"tls.key missing":                {mutate: func(d map[string][]byte) { delete(d, KeyTLSKey) }, keepsCA: true},
		"tls.crt half written":           {mutate: func(d map[string][]byte) { d[KeyTLSCert] = half(d[KeyTLSCert]) }, keepsCA: true},
		"tls.key of another certificate": {mutate: func(d map[string][]byte) { d[KeyTLSKey] = other.Data[KeyTLSKey] }, keepsCA: true},
		"leaf signed by a foreign CA": {mutate: func(d map[string][]byte) {
			d[KeyTLSCert], d[KeyTLSKey] = other.Data[KeyTLSCert], other.Data[KeyTLSKey]
		}, keepsCA: true},
		"garbage after the bundle": {mutate: func(d map[string][]byte) { d[KeyCABundle] = append(d[KeyCABundle], "\x00garbage"...) }, keepsCA: true},
		"ca.key garbage":           {mutate: func(d map[string][]byte) { d[KeyCAKey] = []byte("not a key") }, staged: true},
		"ca.key of another CA":     {mutate: func(d map[string][]byte) { d[KeyCAKey] = other.Data[KeyCAKey] }, staged: true},
		"ca.crt half written":      {mutate: func(d map[string][]byte) { d[KeyCABundle] = half(d[KeyCABundle]) }},
		"everything empty": {mutate: func(d map[string][]byte) {
			for k := range d {
				d[k] = nil
			}
		}},
		"ca-next.key without its CA": {mutate: func(d map[string][]byte) { d[KeyNextCAKey] = other.Data[KeyCAKey] }, keepsCA: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			data := map[string][]byte{}
			for k, v := range good.Data {
				data[k] = append([]byte(nil), v...)
			}
			tc.mutate(data)

			d := mustPlan(t, secretContent{Data: data}, t0, p)

			require.True(t, d.Changed())
			require.NotEmpty(t, d.Reasons)
			requireSettled(t, d.Secret, t0, p)
			oldCA := parseCerts(good.Data[KeyCABundle])[0]
			bundle := parseCerts(d.Secret.Data[KeyCABundle])
			if tc.keepsCA {
				assert.Equal(t, good.Data[KeyCABundle], d.Secret.Data[KeyCABundle])
				assert.Equal(t, good.Data[KeyCAKey], d.Secret.Data[KeyCAKey])
			}
			if tc.staged {
				require.Len(t, bundle, 2)
				assert.True(t, bundle[1].Equal(oldCA))
				assert.Contains(t, d.Secret.Data, KeyNextCAKey)
				assert.Equal(t, good.Data[KeyTLSCert], d.Secret.Data[KeyTLSCert], "the trusted leaf keeps being served")
			}
		})
	}
}

func TestPlanBootstrapsAfterEverythingExpired(t *testing.T) {
	clock := clocktesting.NewFakeClock(t0)
	p := testPolicy()
	s := mustPlan(t, secretContent{}, clock.Now(), p).Secret

	clock.Step(2 * p.CALifetime)
	d := mustPlan(t, s, clock.Now(), p)

	require.True(t, d.Changed())
	requireSettled(t, d.Secret, clock.Now(), p)
	assert.Len(t, parseCerts(d.Secret.Data[KeyCABundle]), 1, "expired CAs leave the bundle")
}

func TestPlanReissuesWhenTheNamesChange(t *testing.T) {
	p := testPolicy()
	s := mustPlan(t, secretContent{}, t0, p).Secret
	p.DNSNames = append(p.DNSNames, "extra.example.com")

	d := mustPlan(t, s, t0, p)

	require.True(t, d.Changed())
	assert.Equal(t, s.Data[KeyCABundle], d.Secret.Data[KeyCABundle])
	assert.Contains(t, leafOf(t, d.Secret).DNSNames, "extra.example.com")
}

func TestPlanDoesNotChurnALeafCappedByItsCA(t *testing.T) {
	p := testPolicy()
	p.CertLifetime = p.CALifetime // a leaf as long-lived as its CA is capped by it
	s := mustPlan(t, secretContent{}, t0, p).Secret
	ca := parseCerts(s.Data[KeyCABundle])[0]

	// Inside the leaf's margin but with the CA's successor only staged,
	// reissuing from the old CA would give the same expiry again.
	at := ca.NotAfter.Add(-p.CARenewBefore)
	staged := mustPlan(t, s, at, p).Secret
	assert.False(t, mustPlan(t, staged, at.Add(time.Hour), p).Changed())
}

func TestMarkInjectedKeepsTheFirstTime(t *testing.T) {
	bundle := []byte("bundle")
	a, changed := markInjected(nil, bundle, t0)
	require.True(t, changed)
	b, changed := markInjected(a, bundle, t0.Add(time.Hour))
	assert.False(t, changed)
	at, ok := injectedSince(b, bundle)
	require.True(t, ok)
	assert.Equal(t, t0, at)
	_, ok = injectedSince(b, []byte("other"))
	assert.False(t, ok)
}

// The API server verifies the certificates by its own clock: one minutes
// behind the operator's must already find them valid, through a whole
// rotation (the new CA and the leaf it signs).
func TestPlanToleratesAnIssuerClockAhead(t *testing.T) {
	p := testPolicy()
	for _, ahead := range []time.Duration{time.Minute, 10 * time.Minute, 59 * time.Minute} {
		issuer := clocktesting.NewFakeClock(t0.Add(ahead))
		s := mustPlan(t, secretContent{}, issuer.Now(), p).Secret
		require.NoError(t, verifyLeaf(parseCerts(s.Data[KeyTLSCert]), s.Data[KeyCABundle], t0), "%s ahead: the first leaf", ahead)

		// Stage, inject, promote: the new CA's leaf too.
		issuer.SetTime(parseCerts(s.Data[KeyCABundle])[0].NotAfter.Add(-p.CARenewBefore))
		s = mustPlan(t, s, issuer.Now(), p).Secret
		s.Annotations, _ = markInjected(s.Annotations, s.Data[KeyCABundle], issuer.Now())
		issuer.Step(p.Propagation)
		s = mustPlan(t, s, issuer.Now(), p).Secret
		require.Len(t, parseCerts(s.Data[KeyCABundle]), 2)
		verifier := issuer.Now().Add(-ahead)
		require.NoError(t, verifyLeaf(parseCerts(s.Data[KeyTLSCert]), s.Data[KeyCABundle], verifier), "%s ahead: the new CA's leaf", ahead)
	}
}

// Two replicas whose clocks are further apart than the backdate: the one
// behind finds the other's CA not yet valid. It must not sign with it
// (every leaf would fail its own check and be issued again, a write each
// time); the two settle on a CA both can use within a few writes.
func TestPlanSettlesBetweenClocksHoursApart(t *testing.T) {
	p := testPolicy()
	ahead, behind := t0.Add(3*time.Hour), t0
	s := mustPlan(t, secretContent{}, ahead, p).Secret
	writes := 0
	for round := 0; ; round++ {
		require.Less(t, round, 5, "the replicas never settled: %d writes", writes)
		settled := true
		for _, now := range []time.Time{behind, ahead} {
			d := mustPlan(t, s, now, p)
			if d.Changed() {
				s, settled = d.Secret, false
				writes++
			}
		}
		if settled {
			break
		}
	}
	t.Logf("settled after %d writes", writes)
	requireSettled(t, s, behind, p)
	requireSettled(t, s, ahead, p)
}
