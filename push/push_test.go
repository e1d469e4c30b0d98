package push_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/push"
)

// key is a fixed key pair, so that failures reproduce.
func key(seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	priv := ed25519.NewKeyFromSeed([]byte(strings.Repeat(string(rune(seed)), ed25519.SeedSize)))
	return priv.Public().(ed25519.PublicKey), priv
}

var payload = push.Payload{
	Namespace: "team", Name: "shop", UID: "0b3a6c1e-5d2f-4e8a-9c7b-1f2e3d4c5b6a",
	Serial: 7, Template: []byte("server { listen 8080; }\n"),
}

func TestSignOpenRoundTrip(t *testing.T) {
	pub, priv := key(1)
	for name, p := range map[string]push.Payload{
		"a template":         payload,
		"an empty template":  {Namespace: "a", Name: "b", UID: "c", Serial: 1},
		"the largest serial": {Namespace: "a", Name: "b", UID: "c", Serial: ^uint64(0), Template: []byte("x")},
		"a template as large as a ConfigMap": {Namespace: "a", Name: "b", UID: "c", Serial: 2,
			Template: []byte(strings.Repeat("#", 1<<20))},
	} {
		t.Run(name, func(t *testing.T) {
			env, err := push.Sign(priv, p)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(env), push.MaxEnvelope)
			got, err := push.Open(pub, env, push.MaxEnvelope)
			require.NoError(t, err)
			if p.Template == nil {
				p.Template = []byte{}
			}
			assert.Equal(t, p, got)
		})
	}
}

// TestEveryFieldIsSigned: changing any field of a signed payload, even
// when the envelope stays well formed, makes the signature fail.
func TestEveryFieldIsSigned(t *testing.T) {
	pub, priv := key(1)
	env, err := push.Sign(priv, payload)
	require.NoError(t, err)
	sig := env[len(env)-ed25519.SignatureSize:]
	for name, change := range map[string]func(p *push.Payload){
		"namespace": func(p *push.Payload) { p.Namespace = "tean" },
		"name":      func(p *push.Payload) { p.Name = "shoq" },
		"uid":       func(p *push.Payload) { p.UID = strings.Replace(p.UID, "0b", "0c", 1) },
		"serial":    func(p *push.Payload) { p.Serial++ },
		"template":  func(p *push.Payload) { p.Template = []byte("server { listen 8081; }\n") },
		// Moving bytes between fields keeps their concatenation: the
		// length prefixes tell the two apart.
		"a byte moved from the namespace to the name": func(p *push.Payload) { p.Namespace, p.Name = "tea", "mshop" },
	} {
		t.Run(name, func(t *testing.T) {
			p := payload
			change(&p)
			// The tampered payload's encoding with the original signature.
			_, other := key(2)
			tampered, err := push.Sign(other, p)
			require.NoError(t, err)
			copy(tampered[len(tampered)-ed25519.SignatureSize:], sig)
			_, err = push.Open(pub, tampered, push.MaxEnvelope)
			assert.ErrorIs(t, err, push.ErrBadSignature)
		})
	}
	t.Run("a bit of the signature", func(t *testing.T) {
		bad := append([]byte(nil), env...)
		bad[len(bad)-1] ^= 1
		_, err := push.Open(pub, bad, push.MaxEnvelope)
		assert.ErrorIs(t, err, push.ErrBadSignature)
	})
}

func TestOpenRefuses(t *testing.T) {
	pub, priv := key(1)
	otherPub, _ := key(2)
	env, err := push.Sign(priv, payload)
	require.NoError(t, err)
	with := func(change func(b []byte) []byte) []byte { return change(append([]byte(nil), env...)) }
	// templateLen is where the template's length prefix is.
	templateLen := len(push.Domain) + 4 + len(payload.Namespace) + 4 + len(payload.Name) + 4 + len(payload.UID) + 8
	for name, tc := range map[string]struct {
		pub      ed25519.PublicKey
		envelope []byte
		max      int
		want     error
	}{
		"another key":        {pub: otherPub, envelope: env, max: push.MaxEnvelope, want: push.ErrBadSignature},
		"over the bound":     {pub: pub, envelope: env, max: len(env) - 1, want: push.ErrTooLarge},
		"empty":              {pub: pub, envelope: nil, max: push.MaxEnvelope, want: push.ErrMalformed},
		"only the domain":    {pub: pub, envelope: []byte(push.Domain), max: push.MaxEnvelope, want: push.ErrMalformed},
		"another domain":     {pub: pub, envelope: with(func(b []byte) []byte { b[len(push.Domain)-2] = '2'; return b }), max: push.MaxEnvelope, want: push.ErrMalformed},
		"truncated":          {pub: pub, envelope: env[:len(env)-1], max: push.MaxEnvelope, want: push.ErrMalformed},
		"cut in the fields":  {pub: pub, envelope: env[:len(push.Domain)+6], max: push.MaxEnvelope, want: push.ErrMalformed},
		"a byte appended":    {pub: pub, envelope: with(func(b []byte) []byte { return append(b, 0) }), max: push.MaxEnvelope, want: push.ErrMalformed},
		"a length too long":  {pub: pub, envelope: with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[templateLen:], 1<<31); return b }), max: push.MaxEnvelope, want: push.ErrMalformed},
		"a length too short": {pub: pub, envelope: with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[templateLen:], 1); return b }), max: push.MaxEnvelope, want: push.ErrMalformed},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := push.Open(tc.pub, tc.envelope, tc.max)
			assert.ErrorIs(t, err, tc.want)
		})
	}
	t.Run("a public key of the wrong size", func(t *testing.T) {
		_, err := push.Open(pub[:31], env, push.MaxEnvelope)
		assert.Error(t, err)
	})
	t.Run("a private key of the wrong size", func(t *testing.T) {
		_, err := push.Sign(priv[:32], payload)
		assert.Error(t, err)
	})
}

func TestParseIdentity(t *testing.T) {
	pub, _ := key(1)
	k := base64.StdEncoding.EncodeToString(pub)
	for name, tc := range map[string]struct {
		json string
		want *push.Identity
	}{
		"valid": {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"` + k + `","serial":18446744073709551615}`,
			want: &push.Identity{Namespace: "team", Name: "shop", UID: "u1", PublicKey: pub, Serial: ^uint64(0)}},
		"a field a newer operator added": {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"` + k + `","serial":3,"next":1}`,
			want: &push.Identity{Namespace: "team", Name: "shop", UID: "u1", PublicKey: pub, Serial: 3}},
		"no serial":                {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"` + k + `"}`, want: &push.Identity{Namespace: "team", Name: "shop", UID: "u1", PublicKey: pub}},
		"a short key":              {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"` + base64.StdEncoding.EncodeToString(pub[:31]) + `"}`},
		"no key":                   {json: `{"namespace":"team","name":"shop","uid":"u1"}`},
		"a key that is not base64": {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"!!"}`},
		"no uid":                   {json: `{"namespace":"team","name":"shop","publicKey":"` + k + `"}`},
		"no name":                  {json: `{"namespace":"team","uid":"u1","publicKey":"` + k + `"}`},
		"no namespace":             {json: `{"name":"shop","uid":"u1","publicKey":"` + k + `"}`},
		"a negative serial":        {json: `{"namespace":"team","name":"shop","uid":"u1","publicKey":"` + k + `","serial":-1}`},
		"not JSON":                 {json: `serial: 1`},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := push.ParseIdentity([]byte(tc.json))
			if tc.want == nil {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, *tc.want, got)
		})
	}
}

func TestIdentityNames(t *testing.T) {
	id := push.Identity{Namespace: payload.Namespace, Name: payload.Name, UID: payload.UID}
	assert.True(t, id.Names(payload))
	for name, change := range map[string]func(p *push.Payload){
		"another namespace":                   func(p *push.Payload) { p.Namespace = "other" },
		"another name":                        func(p *push.Payload) { p.Name = "other" },
		"an earlier gateway of the same name": func(p *push.Payload) { p.UID = "other" },
	} {
		p := payload
		change(&p)
		assert.False(t, id.Names(p), name)
	}
}

// FuzzOpen: no envelope makes Open panic, and whatever it opens is what
// the key signed (here: only envelopes made by Sign with that key).
func FuzzOpen(f *testing.F) {
	pub, priv := key(1)
	env, err := push.Sign(priv, payload)
	require.NoError(f, err)
	f.Add(env)
	f.Add(env[:len(env)-1])
	f.Add([]byte(push.Domain))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := push.Open(pub, b, push.MaxEnvelope)
		if err != nil {
			return
		}
		again, err := push.Sign(priv, p)
		require.NoError(t, err)
		assert.Equal(t, b, again, "opened an envelope Sign would not make")
	})
}
