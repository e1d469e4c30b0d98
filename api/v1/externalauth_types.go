package v1

// External authentication (issue 35): what teams leaving ingress-nginx did
// with its auth-url, auth-signin, auth-response-headers and
// auth-request-redirect annotations (the oauth2-proxy pattern), per route.
// Before a request reaches the route's backends the gateway asks an
// authentication Service of the gateway's own namespace, with nginx's
// auth_request: its 2xx lets the request through, 401 and 403 refuse it,
// and anything else, or no answer in time, refuses it too (500).

// ExternalAuth sends each of a route's requests, without its body, to an
// authentication Service first. The Service is in the gateway's own
// namespace: a route can name no other.
type ExternalAuth struct {
	// service is the name of the authentication Service, in the gateway's
	// namespace.
	// +required
	Service ServiceName `json:"service"`

	// port is the Service's port, from 1 to 65535.
	// +required
	Port PortNumber `json:"port"`

	// path is the path the gateway asks, such as /oauth2/auth; the
	// request's own path and method go in X-Original-URI and
	// X-Original-Method. Without percent-encoded bytes.
	// +kubebuilder:validation:XValidation:rule="!self.contains('%')",message="must not hold percent-encoded bytes: the authentication Service receives the path as written"
	// +required
	Path HTTPPath `json:"path"`

	// forwardHeaders are the request headers the authentication Service
	// receives, such as Cookie or Authorization, besides X-Original-URI,
	// X-Original-Method and the gateway's X-Forwarded-* headers; it
	// receives no other header of the client's. Up to 16, each once.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(n, !(n.lowerAscii() in ['x-original-uri', 'x-original-method']))",message="X-Original-URI and X-Original-Method are set by the gateway"
	// +listType=set
	// +optional
	ForwardHeaders []HTTPHeaderName `json:"forwardHeaders,omitempty"`

	// responseHeaders are the headers of the authentication Service's 2xx
	// answer that the backend receives, such as X-Auth-Request-User: the
	// client's own copies of them are dropped, also when the Service does
	// not send them, so a client cannot forge them. Up to 16, each once,
	// none that requestHeaders changes.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	ResponseHeaders []HTTPHeaderName `json:"responseHeaders,omitempty"`

	// signInURL is where a client the Service answers 401 is sent: the
	// gateway answers 302 with this URL and the query parameter rd, the
	// URL the client asked for, percent-encoded. An absolute https URL,
	// without fragment, of letters, digits and - . _ ~ / ? ! & ( ) * + ,
	// = : @ %. Unset: the client gets the 401.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^https://[a-z0-9]([-a-z0-9.]*[a-z0-9])?(:[0-9]{1,5})?(/[-A-Za-z0-9._~!&()*+,=:@%/]*)?([?][-A-Za-z0-9._~!&()*+,=:@%/?]*)?$`
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https' && url(self).getHostname() != ''",message="must be an absolute https URL, such as https://auth.example.com/oauth2/start"
	// +optional
	SignInURL string `json:"signInURL,omitempty"`

	// timeoutSeconds bounds how long the gateway waits for the
	// authentication Service to connect and to answer, from 1 to 30; past
	// it the request is refused (500). Unset: 5.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
}
