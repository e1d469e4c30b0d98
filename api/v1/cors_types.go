package v1

// CORS (issue 34): cross-origin resource sharing answered by the gateway,
// for what teams leaving ingress-nginx did with enable-cors and the
// cors-allow-* annotations, in the shape of Gateway API's HTTPCORSFilter.
// The gateway answers a preflight from an allowed origin itself (the
// backend never sees it), adds the CORS headers to the answers to an
// allowed origin, and hides the backend's own Access-Control-* headers.

// CORS says which cross-origin requests browsers may make to a route.
// +kubebuilder:validation:XValidation:rule="!has(self.allowCredentials) || !self.allowCredentials || !('*' in self.allowOrigins)",message="allowCredentials lets the browser send cookies: it needs the origins named, not '*' (any site could read the answers with the user's credentials)",fieldPath=".allowCredentials"
type CORS struct {
	// allowOrigins are the origins whose scripts may read the route's
	// answers: "https://app.example.com" (an origin exactly, with an
	// optional port), "https://*.example.com" (any origin of that scheme
	// whose host ends in .example.com, with one or more labels before it;
	// the same port), or "*" alone (any origin). Up to 32, each once.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || self.size() == 1",message="'*' allows every origin: list it alone"
	// +listType=set
	// +required
	AllowOrigins []CORSOrigin `json:"allowOrigins"`

	// allowMethods are the methods a preflight allows, besides GET, HEAD
	// and POST, which browsers always allow. Each once; "*" alone allows
	// every method: the gateway answers a preflight with the method it
	// asks for (Access-Control-Request-Method), which browsers also
	// honour with allowCredentials, where a literal "*" would name no
	// method.
	// +kubebuilder:validation:MaxItems=9
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || self.size() == 1",message="'*' allows every method: list it alone"
	// +listType=set
	// +optional
	AllowMethods []CORSMethod `json:"allowMethods,omitempty"`

	// allowHeaders are the request headers a preflight allows, besides
	// those browsers always allow (Accept, Content-Type of a form, ...).
	// Up to 32, each once; "*" alone allows every header: the gateway
	// answers a preflight with the headers it asks for
	// (Access-Control-Request-Headers, Authorization included), which
	// browsers also honour with allowCredentials.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || self.size() == 1",message="'*' allows every header: list it alone"
	// +listType=set
	// +optional
	AllowHeaders []CORSHeaderName `json:"allowHeaders,omitempty"`

	// exposeHeaders are the response headers a script may read, besides
	// those browsers always let it (Cache-Control, Content-Type, ...). Up
	// to 32, each once.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	ExposeHeaders []HTTPHeaderName `json:"exposeHeaders,omitempty"`

	// maxAge is how long, in seconds, a browser may keep a preflight's
	// answer, from 1 to 86400 (browsers cap it lower: Chromium at 7200).
	// Unset: 5, Gateway API's default.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	MaxAge *int32 `json:"maxAge,omitempty"`

	// allowCredentials lets the browser send the user's cookies and
	// authorization with the requests and lets scripts read the answers
	// (Access-Control-Allow-Credentials: true). Not with allowOrigins "*".
	// +optional
	AllowCredentials bool `json:"allowCredentials,omitempty"`
}

// CORSOrigin is an allowed origin: "*", or http or https, "://", a
// lower-case DNS name, optionally starting "*." (one or more labels), and
// an optional port from 1 to 65535; no path, query, user, spaces or
// quotes (browsers send an origin as exactly that, lower-cased).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^(\*|https?://(\*\.)?[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)+(:[1-9][0-9]{0,4})?)$`
// +kubebuilder:validation:XValidation:rule="!self.matches(':[0-9]+$') || int(self.substring(self.lastIndexOf(':') + 1)) <= 65535",message="the port is from 1 to 65535"
type CORSOrigin string

// CORSMethod is a request method a preflight allows, or "*": any.
// +kubebuilder:validation:Enum=GET;HEAD;POST;PUT;DELETE;CONNECT;OPTIONS;TRACE;PATCH;*
type CORSMethod string

// CORSHeaderName is a request header a preflight allows: letters, digits
// and '-', starting with a letter or digit, at most 64 characters; or
// "*": any. Unlike HTTPHeaderName it may name a header the gateway sets
// itself: allowing a script to send one changes no header the gateway
// sets (browsers never send Host, Connection, ... at all).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^(\*|[A-Za-z0-9][-A-Za-z0-9]*)$`
type CORSHeaderName string
