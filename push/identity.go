package push

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
)

// IdentityKey is the key of the gateway ConfigMap that holds the pod's
// Identity, as JSON, beside the template: the kubelet swaps a projected
// volume's files together, so the serial always describes the template
// next to it.
const IdentityKey = "push.json"

// Identity tells a gateway pod which pushes to accept: those signed with
// PublicKey for the gateway it names. Serial is the serial of the
// template beside it in the ConfigMap.
type Identity struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
	// PublicKey is the operator's Ed25519 public key (base64 in JSON).
	PublicKey []byte `json:"publicKey"`
	Serial    uint64 `json:"serial"`
}

// ParseIdentity reads an Identity and refuses one a pod could not use: a
// key that is not 32 bytes, or an empty namespace, name or UID. Fields it
// does not know are ignored, so a newer operator may add some.
func ParseIdentity(data []byte) (Identity, error) {
	var id Identity
	if err := json.Unmarshal(data, &id); err != nil {
		return Identity{}, fmt.Errorf("push identity: %w", err)
	}
	if len(id.PublicKey) != ed25519.PublicKeySize {
		return Identity{}, fmt.Errorf("push identity: public key of %d bytes, want %d", len(id.PublicKey), ed25519.PublicKeySize)
	}
	if id.Namespace == "" || id.Name == "" || id.UID == "" {
		return Identity{}, errors.New("push identity: namespace, name and uid must all be set")
	}
	return id, nil
}

// Names reports whether p is for the gateway id names: same namespace,
// name and UID. A payload signed for another gateway by the same operator
// key is refused, and so is one for an earlier gateway of the same name.
func (id Identity) Names(p Payload) bool {
	return id.Namespace == p.Namespace && id.Name == p.Name && id.UID == p.UID
}
