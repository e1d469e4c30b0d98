// Package push signs and opens the configurations the operator pushes to a
// gateway pod's reloader (Sign, Open), and reads the identity the pod is
// given beside its mounted configuration (Identity), so that a route change
// reaches nginx in milliseconds instead of at the kubelet's next sync of the
// ConfigMap volume (issue 33). The pod holds only a public key: whoever
// reaches its status port cannot make it load anything the operator did not
// sign, for this gateway, newer than what it serves.
package push

import (
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Domain begins every envelope, and so every signed message: a signature
// made for anything else (another protocol, another version of this one)
// never opens as a push.
const Domain = "apigateway-operator push v1\n"

// MaxEnvelope bounds an envelope the reloader reads: a template is one
// ConfigMap value, which the API server refuses past 1 MiB (the sum of a
// ConfigMap's values), and the rest of an envelope is under 500 bytes
// (Domain, four length prefixes, a namespace of at most 63 bytes, a name
// of at most 253, a UID of 36, the serial and the 64-byte signature); the
// 4 KiB margin covers that with room to spare.
const MaxEnvelope = 1<<20 + 4<<10

// Payload is what the operator pushes: the template of one APIGateway's
// ConfigMap and the serial that orders it among that gateway's templates.
type Payload struct {
	// Namespace, Name and UID are the APIGateway's: a pod accepts only a
	// payload naming the gateway its Identity names.
	Namespace, Name, UID string
	// Serial orders a gateway's templates: a pod accepts only one greater
	// than the serial of what it serves.
	Serial uint64
	// Template is the nginx configuration template, exactly the bytes of
	// the ConfigMap's template key.
	Template []byte
}

// The ways Open refuses an envelope; test with errors.Is.
var (
	// ErrTooLarge: the envelope is longer than the bound Open was given.
	ErrTooLarge = errors.New("push: envelope too large")
	// ErrMalformed: the envelope is not one Sign could have made.
	ErrMalformed = errors.New("push: malformed envelope")
	// ErrBadSignature: the signature is not the key's over the payload.
	ErrBadSignature = errors.New("push: bad signature")
)

// The envelope is Domain, then each field with a fixed-size prefix, then
// the Ed25519 signature over every byte before it:
//
//	Domain | u32 len | namespace | u32 len | name | u32 len | uid
//	       | u64 serial | u32 len | template | signature (64)
//
// Integers are big-endian. Length prefixes leave no two payloads with the
// same encoding (unlike concatenation, or JSON with its choices of key
// order, escapes and spaces), so the signature binds every field.

// Sign returns the envelope of p signed with priv.
func Sign(priv ed25519.PrivateKey, p Payload) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("push: private key of %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	for _, f := range [][]byte{[]byte(p.Namespace), []byte(p.Name), []byte(p.UID), p.Template} {
		if uint64(len(f)) > math.MaxUint32 {
			return nil, errors.New("push: a field is longer than 4 GiB")
		}
	}
	msg := make([]byte, 0, len(Domain)+4*4+8+len(p.Namespace)+len(p.Name)+len(p.UID)+len(p.Template)+ed25519.SignatureSize)
	msg = append(msg, Domain...)
	msg = appendField(msg, []byte(p.Namespace))
	msg = appendField(msg, []byte(p.Name))
	msg = appendField(msg, []byte(p.UID))
	msg = binary.BigEndian.AppendUint64(msg, p.Serial)
	msg = appendField(msg, p.Template)
	return append(msg, ed25519.Sign(priv, msg)...), nil
}

func appendField(b, f []byte) []byte {
	return append(binary.BigEndian.AppendUint32(b, uint32(len(f))), f...)
}

// Open checks envelope's signature with pub and returns its payload. It
// refuses an envelope longer than max before looking at it (ErrTooLarge),
// one Sign could not have made (ErrMalformed) and one whose signature is
// not pub's (ErrBadSignature). The Template it returns shares envelope's
// memory.
func Open(pub ed25519.PublicKey, envelope []byte, max int) (Payload, error) {
	if len(envelope) > max {
		return Payload{}, fmt.Errorf("%w: %d bytes, over the bound of %d", ErrTooLarge, len(envelope), max)
	}
	if len(pub) != ed25519.PublicKeySize {
		return Payload{}, fmt.Errorf("push: public key of %d bytes, want %d", len(pub), ed25519.PublicKeySize)
	}
	if len(envelope) < len(Domain)+ed25519.SignatureSize || string(envelope[:len(Domain)]) != Domain {
		return Payload{}, fmt.Errorf("%w: not a %q envelope", ErrMalformed, Domain[:len(Domain)-1])
	}
	msg, sig := envelope[:len(envelope)-ed25519.SignatureSize], envelope[len(envelope)-ed25519.SignatureSize:]
	p, err := decode(msg[len(Domain):])
	if err != nil {
		return Payload{}, err
	}
	if !ed25519.Verify(pub, msg, sig) {
		return Payload{}, ErrBadSignature
	}
	return p, nil
}

// decode reads the fields of a payload, which must use up b exactly.
func decode(b []byte) (Payload, error) {
	var p Payload
	var ns, name, uid, template []byte
	var ok bool
	if ns, b, ok = field(b); !ok {
		return p, fmt.Errorf("%w: namespace", ErrMalformed)
	}
	if name, b, ok = field(b); !ok {
		return p, fmt.Errorf("%w: name", ErrMalformed)
	}
	if uid, b, ok = field(b); !ok {
		return p, fmt.Errorf("%w: uid", ErrMalformed)
	}
	if len(b) < 8 {
		return p, fmt.Errorf("%w: serial", ErrMalformed)
	}
	serial := binary.BigEndian.Uint64(b)
	if template, b, ok = field(b[8:]); !ok {
		return p, fmt.Errorf("%w: template", ErrMalformed)
	}
	if len(b) != 0 {
		return p, fmt.Errorf("%w: %d bytes after the template", ErrMalformed, len(b))
	}
	return Payload{Namespace: string(ns), Name: string(name), UID: string(uid), Serial: serial, Template: template}, nil
}

// field splits a length-prefixed field off b.
func field(b []byte) (f, rest []byte, ok bool) {
	if len(b) < 4 {
		return nil, nil, false
	}
	n := binary.BigEndian.Uint32(b)
	if uint64(n) > uint64(len(b)-4) {
		return nil, nil, false
	}
	return b[4 : 4+n], b[4+n:], true
}
