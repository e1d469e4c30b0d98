package v1

// Redirects (issue 34): answers the gateway gives itself, for what teams
// leaving ingress-nginx did with permanent-redirect, temporal-redirect,
// app-root and ssl-redirect / force-ssl-redirect, in the shape of Gateway
// API's RequestRedirect filter (which the HTTPRoute exposure emits where
// it can).

// HTTPRedirect answers a route's requests with a redirect whose Location
// is the request's URL changed as the fields say; the query is kept as
// the client sent it.
//
// A redirect answers every request of the route, which then needs no
// backend, but one with a scheme and no hostname: it answers only the
// requests that came in with the other scheme (as the gateway knows it:
// its own, or the X-Forwarded-Proto of a trusted front proxy), as
// ingress-nginx's ssl-redirect does, and the others reach backendService,
// which such a route needs. (A redirect to https of the requests that
// already came over https, to the same host, would send the client back
// to the same URL forever.)
// +kubebuilder:validation:XValidation:rule="has(self.scheme) || has(self.hostname) || has(self.port) || has(self.path)",message="a redirect changes the scheme, hostname, port or path: one that changes none would send the client back to the same URL"
type HTTPRedirect struct {
	// scheme is the Location's scheme, http or https. Unset: the request's
	// (a Location without scheme, host or port changed is written as a
	// path alone, which the client resolves against the URL it asked for).
	// +optional
	Scheme RedirectScheme `json:"scheme,omitempty"`

	// hostname is the Location's host, a DNS name (not a wildcard).
	// Unset: the request's.
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('*')",message="must be a host name, not a wildcard"
	// +optional
	Hostname Hostname `json:"hostname,omitempty"`

	// port is the Location's port, from 1 to 65535, left out when it is
	// the scheme's own (80 for http, 443 for https). Unset: the request's
	// when scheme and hostname are unset too, else the scheme's own.
	// +optional
	Port *PortNumber `json:"port,omitempty"`

	// path is the Location's path. Unset: the request's, as the client
	// sent it.
	// +optional
	Path *RedirectPath `json:"path,omitempty"`

	// statusCode is the redirect's status: 301 or 308 (permanent), 302,
	// 303 or 307. 307 and 308 tell the client to repeat the method and
	// body; 301, 302 and 303 let it turn a POST into a GET. Unset: 302.
	// +kubebuilder:validation:Enum=301;302;303;307;308
	// +optional
	StatusCode *int32 `json:"statusCode,omitempty"`
}

// RedirectScheme is the scheme of a redirect's Location.
// +kubebuilder:validation:Enum=http;https
type RedirectScheme string

// RedirectPathType says how a redirect's path is made.
// +kubebuilder:validation:Enum=ReplaceFullPath;ReplacePrefixMatch
type RedirectPathType string

const (
	// ReplaceFullPath makes value the whole path.
	ReplaceFullPath RedirectPathType = "ReplaceFullPath"
	// ReplacePrefixMatch replaces the prefix the route matched with value
	// and keeps the rest of the request's path: with path /old and value
	// /new, /old/a redirects to /new/a and /old to /new. Prefix routes
	// only.
	ReplacePrefixMatch RedirectPathType = "ReplacePrefixMatch"
)

// RedirectPath is the path of a redirect's Location.
type RedirectPath struct {
	// type is ReplaceFullPath or ReplacePrefixMatch.
	// +required
	Type RedirectPathType `json:"type"`

	// value is the path, or the prefix that replaces the one matched.
	// +required
	Value HTTPPath `json:"value"`
}
