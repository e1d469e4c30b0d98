package v1

// Source ranges (issue 34): what teams leaving ingress-nginx did with its
// whitelist-source-range and denylist-source-range annotations, per route.
// The gateway decides by the client's address as it knows it: the peer
// that connected, or, from the operator's --gateway-trusted-proxies, the
// address those proxies reported in X-Forwarded-For.

// SourceRanges limits which client addresses a route serves: an address
// in deny is refused, whatever allow says; otherwise an address is served
// when allow is empty or holds it. Refused requests are answered 403. At
// least one of the two lists.
// +kubebuilder:validation:MinProperties=1
type SourceRanges struct {
	// allow are the networks whose clients the route serves; a client
	// outside them all is refused. Unset: every client deny does not
	// refuse. Up to 64, each once; list both families (0.0.0.0/0 and
	// ::/0 for either whole one) when clients come over IPv4 and IPv6.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Allow []CIDR `json:"allow,omitempty"`

	// deny are the networks whose clients the route refuses, even inside
	// allow. Up to 64, each once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	Deny []CIDR `json:"deny,omitempty"`
}

// CIDR is an IPv4 or IPv6 network in its canonical form: the network's
// address (no bits set past the prefix length) and the prefix length,
// IPv6 in lower case with zeros compressed as Go's net/netip and the API
// server's CEL write it, such as 10.0.0.0/8, 203.0.113.7/32 or
// 2001:db8::/32. Not an IPv4-mapped IPv6 network (::ffff:10.0.0.0/104),
// which the gateway would never match.
// +kubebuilder:validation:MaxLength=43
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && string(cidr(self).masked()) == self",message="must be a network in canonical form, such as 10.0.0.0/8, 203.0.113.7/32 or 2001:db8::/32: its address with no bits set past the prefix length, IPv6 in lower case with zeros compressed, not IPv4-mapped"
type CIDR string
