package v1

// Retries (issue 37 item 2): what ingress-nginx users did with its
// proxy-next-upstream and proxy-next-upstream-tries annotations, per
// route. A request the route's backend fails (as on lists) is sent again,
// to another ready endpoint of the backend's Service when it has one:
// the gateway then writes the Service's ready endpoints into the
// configuration, instead of its ClusterIP. Gateway API v1.6's
// HTTPRouteRetry has attempts too, but lists status codes and always
// retries connection errors; on names both, and POST, PATCH and LOCK
// requests an endpoint received are retried only with nonIdempotent.

// RouteRetries sends a request the backend failed to another endpoint of
// the backend.
type RouteRetries struct {
	// attempts is how many times a request is sent again after the first
	// try failed, from 1 to 5, as Gateway API's attempts counts.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=5
	// +required
	Attempts int32 `json:"attempts"`

	// on are the failures that send a request again: connectError (the
	// backend refused or reset the connection, or closed it before its
	// answer's header), timeout (no connection or no answer's header in
	// the route's timeouts), http502, http503 and http504 (the backend
	// answered with that status). Each once. Unset: connectError and
	// timeout. A request whose body was sent to the backend in part and
	// then failed is not sent again.
	// +kubebuilder:validation:MaxItems=5
	// +listType=set
	// +optional
	On []RetryCondition `json:"on,omitempty"`

	// nonIdempotent retries POST, LOCK and PATCH requests too once an
	// endpoint received them, which it may already have acted on. Unset:
	// false: such a request is sent again only when no endpoint received
	// it (a refused connection).
	// +optional
	NonIdempotent bool `json:"nonIdempotent,omitempty"`
}

// RetryCondition is a failure that sends a request again.
// +kubebuilder:validation:Enum=connectError;timeout;http502;http503;http504
type RetryCondition string

const (
	// RetryOnConnectError: the backend refused or reset the connection,
	// or closed it before the answer's header.
	RetryOnConnectError RetryCondition = "connectError"
	// RetryOnTimeout: no connection or no answer's header in time.
	RetryOnTimeout RetryCondition = "timeout"
	// RetryOnHTTP502, RetryOnHTTP503 and RetryOnHTTP504: the backend
	// answered with that status.
	RetryOnHTTP502 RetryCondition = "http502"
	RetryOnHTTP503 RetryCondition = "http503"
	RetryOnHTTP504 RetryCondition = "http504"
)
