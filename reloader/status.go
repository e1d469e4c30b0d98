package reloader

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
)

// StatusPath is where the reloader's status server answers with the pod's
// Status as JSON.
const StatusPath = "/status"

// PushPath is where the reloader's status server takes a configuration
// pushed by the operator (POST, a push.Sign envelope as the body), when
// the reloader runs with an identity to check it against
// (Config.PushIdentity).
const PushPath = "/v1/config"

// Reasons of a Refusal.
const (
	// ReasonNginxTestFailed: `nginx -t` refused the configuration.
	ReasonNginxTestFailed = "NginxTestFailed"
	// ReasonReloadFailed: nginx passed the test, but its workers did not
	// start serving the configuration after the reload signal (the master
	// logs why, for instance a port it could not bind).
	ReasonReloadFailed = "ReloadFailed"
	// ReasonUnreadable: the template could not be read or the rendered
	// file not written.
	ReasonUnreadable = "Unreadable"
)

// Status is what a pod's reloader reports: the configuration nginx serves
// and, when the newest one it was given failed, why.
type Status struct {
	// Loaded is the Hash of the configuration template nginx's workers
	// serve, confirmed by asking them; empty until nginx serves one.
	Loaded string `json:"loaded,omitempty"`
	// Refused is the newest template, when nginx did not take it; a later
	// template that loads clears it.
	Refused *Refusal `json:"refused,omitempty"`
}

// Refusal is a configuration nginx did not take.
type Refusal struct {
	// Hash is the template's Hash.
	Hash string `json:"hash"`
	// Reason is one of the Reason constants.
	Reason string `json:"reason"`
	// Message is nginx's own words (its [emerg] lines), bounded.
	Message string `json:"message"`
}

// Hash identifies a configuration template: the hex SHA-256 of its bytes.
// The operator computes it from the ConfigMap it writes and the reloader
// from the file the kubelet projects, so a pod's Loaded equals the
// gateway's current hash exactly when the pod serves that ConfigMap.
func Hash(template []byte) string {
	sum := sha256.Sum256(template)
	return hex.EncodeToString(sum[:])
}

// maxStatusBytes bounds what a reader of a pod's Status takes from it; a
// reloader's answer is a few hundred bytes.
const maxStatusBytes = 16 << 10

// DecodeStatus reads a Status a pod answered on StatusPath. The pod is
// not trusted: at most maxStatusBytes are read. The operator's prober and
// `kubectl apigateway status` read it alike.
func DecodeStatus(r io.Reader) (Status, error) {
	var st Status
	err := json.NewDecoder(io.LimitReader(r, maxStatusBytes)).Decode(&st)
	return st, err
}
