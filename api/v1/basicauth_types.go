package v1

// Basic authentication (issue 35): what teams leaving ingress-nginx did
// with its auth-type: basic, auth-secret and auth-realm annotations, per
// route. The htpasswd file stays in a Secret of the gateway's namespace;
// the operator reads only the Secrets routes name, checks them and gives
// the gateway's own pods a copy (docs/security.md).

// BasicAuth asks the clients of a route for a user name and password
// (HTTP Basic authentication), checked against an htpasswd file.
type BasicAuth struct {
	// secretName is the Secret, in the gateway's namespace (never
	// another), whose key "auth" holds the htpasswd file, as
	// ingress-nginx's auth-secret: one "user:hash" line per user, the
	// hash bcrypt ($2y$, $2a$, $2b$), Apache MD5 ($apr1$), SHA-256 or
	// SHA-512 crypt ($5$, $6$) or {SHA}. Plaintext passwords ({PLAIN})
	// and anything else are refused: a Secret that is missing or
	// refused makes the route answer every request 401, and the
	// BasicAuth condition says why.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!format.dns1123Subdomain().validate(self).hasValue()",message="must be the name of a Secret: a lower-case DNS subdomain such as api-users"
	// +required
	SecretName string `json:"secretName"`

	// realm is the name the client shows when it asks for the password
	// (the WWW-Authenticate header's realm): letters, digits, spaces and
	// . _ , : / ( ) @ -, up to 64 characters. Unset: "Authentication
	// Required".
	// +optional
	Realm BasicAuthRealm `json:"realm,omitempty"`
}

// BasicAuthRealm is the realm of a route's basic authentication.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9 ._,:/()@-]+$`
type BasicAuthRealm string

// ConditionBasicAuth, reported by gateways with a route that sets
// basicAuth, says whether every Secret those routes name holds an
// htpasswd file the gateway serves: False names the routes whose Secret
// is missing or refused, and why (never its content); those routes answer
// every request 401 until it is fixed.
const ConditionBasicAuth = "BasicAuth"

// Reasons of the BasicAuth condition.
const (
	// ReasonSecretsValid: every Secret named by a basicAuth holds a
	// usable htpasswd file.
	ReasonSecretsValid = "SecretsValid"
	// ReasonSecretInvalid: some Secret is missing, has no key "auth", or
	// holds what the operator refuses (the message says which and why).
	ReasonSecretInvalid = "SecretInvalid"
)
