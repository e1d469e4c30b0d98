package v1

// Request matching in a route's rules (issue 34): what teams leaving
// ingress-nginx did with canary-by-header, canary-by-header-value and
// canary-by-cookie, in Gateway API's shape (an HTTPRoute rule's matches
// and backend, within one host and path). The rules sit inside the route,
// not beside it: spec.routes is a list keyed by host, path and pathType,
// and a route differing only in its conditions would be a duplicate.

// RouteRule sends the requests one of its matches accepts to its
// backend.
type RouteRule struct {
	// matches are alternatives: the rule takes a request when one of
	// them holds. Up to 4.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=4
	// +listType=atomic
	// +required
	Matches []RequestMatch `json:"matches"`

	// backendService is the Service, in the gateway's namespace, that
	// receives the requests the rule takes.
	// +required
	BackendService BackendService `json:"backendService"`
}

// RequestMatch is one set of conditions on a request, all of which must
// hold: each header, query parameter and cookie listed, and the method
// when set. At least one condition.
// +kubebuilder:validation:MinProperties=1
type RequestMatch struct {
	// headers are conditions on request headers, each on another header,
	// up to 8.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Headers []HeaderMatch `json:"headers,omitempty"`

	// queryParams are conditions on the request's query parameters, each
	// on another parameter, up to 8.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	QueryParams []QueryParamMatch `json:"queryParams,omitempty"`

	// method is the request's method.
	// +optional
	Method *HTTPMethod `json:"method,omitempty"`

	// cookies are conditions on the request's cookies, each on another
	// cookie, up to 8.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Cookies []CookieMatch `json:"cookies,omitempty"`
}

// MatchType is how a header or query parameter is matched: Exact, its
// value is value, byte for byte (case included); Present, the request
// carries it, whatever its value. (Regular expressions are left out: the
// gateway never builds a pattern from a tenant's string.)
// +kubebuilder:validation:Enum=Exact;Present
type MatchType string

const (
	// MatchExact matches a value byte for byte.
	MatchExact MatchType = "Exact"
	// MatchPresent matches whatever the value, as long as there is one.
	MatchPresent MatchType = "Present"
)

// HeaderMatch is a condition on one request header. A header sent several
// times is matched on its values joined by ", ".
// +kubebuilder:validation:XValidation:rule="self.type == 'Present' ? !has(self.value) : has(self.value) && size(self.value) > 0",message="value is required with type Exact and not allowed with type Present"
type HeaderMatch struct {
	// name is the header's name, compared without case.
	// +required
	Name HTTPHeaderName `json:"name"`

	// type is Exact or Present.
	// +required
	Type MatchType `json:"type"`

	// value is the header's value, with type Exact.
	// +optional
	Value HTTPHeaderValue `json:"value,omitempty"`
}

// QueryParamMatch is a condition on one query parameter: its first
// occurrence in the request's query, as the client sent it (a value the
// client percent-encodes does not match).
// +kubebuilder:validation:XValidation:rule="self.type == 'Present' ? !has(self.value) : has(self.value) && size(self.value) > 0",message="value is required with type Exact and not allowed with type Present"
type QueryParamMatch struct {
	// name is the parameter's name.
	// +required
	Name MatchName `json:"name"`

	// type is Exact or Present.
	// +required
	Type MatchType `json:"type"`

	// value is the parameter's value, with type Exact: up to 256 letters,
	// digits and - . _ ~ ! * ( ) , / : @.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-A-Za-z0-9._~!*(),/:@]*$`
	// +optional
	Value string `json:"value,omitempty"`
}

// CookieMatch is a condition on one cookie: the request carries it with
// exactly this value.
type CookieMatch struct {
	// name is the cookie's name.
	// +required
	Name MatchName `json:"name"`

	// value is the cookie's value: 1 to 256 letters, digits and
	// - . _ ~ ! # & ' ( ) * + / : < = > ? @ ^ |.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[-A-Za-z0-9._~!#&'()*+/:<=>?@^|]+$`
	// +required
	Value string `json:"value"`
}

// MatchName is the name of a query parameter or a cookie: letters, digits
// and '_', at most 64 characters. The gateway compares it without case
// (nginx's $arg_ and $cookie_ variables, which take no other characters).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_]+$`
type MatchName string

// HTTPMethod is a request method.
// +kubebuilder:validation:Enum=GET;HEAD;POST;PUT;DELETE;CONNECT;OPTIONS;TRACE;PATCH
type HTTPMethod string
