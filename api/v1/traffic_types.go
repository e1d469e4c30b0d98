package v1

// The per-route traffic settings (issue 26): what teams leaving
// ingress-nginx set with its annotations. Each is optional, and a route
// that sets none renders exactly as before, so an upgrade rolls no
// gateway.

// WeightedBackend is a Service port that receives a share of a route's
// requests.
type WeightedBackend struct {
	// name is the Service's name, in the gateway's namespace.
	// +required
	Name ServiceName `json:"name"`

	// port is the Service port the requests go to, from 1 to 65535.
	// +required
	Port PortNumber `json:"port"`

	// weight is the percentage of the route's requests this Service
	// receives, from 0 (none: a drained backend) to 100, picked per
	// request.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +required
	Weight int32 `json:"weight"`
}

// RouteTimeouts bound how long the gateway waits for a route's backend.
type RouteTimeouts struct {
	// connectSeconds is how long the gateway waits to open a connection to
	// the backend, from 1 to 75 (nginx's proxy_connect_timeout, which
	// most systems cap at 75 s). Unset: 60.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=75
	// +optional
	ConnectSeconds *int32 `json:"connectSeconds,omitempty"`

	// readSeconds is how long the gateway waits for the backend's answer:
	// for its first byte, and then between two reads (nginx's
	// proxy_read_timeout), from 1 to 3600. Unset: 60. It also bounds how
	// long an upgraded connection (a WebSocket) may carry no data before
	// the gateway closes it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	ReadSeconds *int32 `json:"readSeconds,omitempty"`
}

// HeaderModifier changes HTTP headers: it sets, adds and removes, each
// header named at most once across the three lists (names compare without
// case).
// +kubebuilder:validation:XValidation:rule="size(((has(self.set) ? self.set.map(h, h.name) : []) + (has(self.add) ? self.add.map(h, h.name) : []) + (has(self.remove) ? self.remove : [])).map(n, n.lowerAscii()).distinct()) == (has(self.set) ? size(self.set.map(h, h.name).distinct()) : 0) + (has(self.add) ? size(self.add.map(h, h.name).distinct()) : 0) + (has(self.remove) ? size(self.remove.distinct()) : 0)",message="names one header twice across set, add and remove (header names compare without case): change each header once"
type HeaderModifier struct {
	// set gives each header its value, replacing any it had. Up to 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Set []HTTPHeader `json:"set,omitempty"`

	// add gives each header one more value, keeping those it had. Up to 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	Add []HTTPHeader `json:"add,omitempty"`

	// remove drops each named header. Up to 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	Remove []HTTPHeaderName `json:"remove,omitempty"`
}

// HTTPHeader is a header's name and value.
type HTTPHeader struct {
	// +required
	Name HTTPHeaderName `json:"name"`
	// +required
	Value HTTPHeaderValue `json:"value"`
}

// HTTPHeaderName is a header's name: letters, digits and '-', starting
// with a letter or digit, at most 64 characters; not a header the gateway
// owns (Host, X-Forwarded-For, X-Real-IP, X-Forwarded-Host,
// X-Forwarded-Proto, X-Forwarded-Port, Forwarded, Content-Length) nor a
// hop-by-hop header (Connection, Keep-Alive, Proxy-Connection, TE, Trailer,
// Transfer-Encoding, Upgrade).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=64
// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][-A-Za-z0-9]*$`
// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['host', 'x-forwarded-for', 'x-real-ip', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'forwarded', 'content-length', 'connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade'])",message="is a header the gateway sets itself or a hop-by-hop header, which a route may not change"
type HTTPHeaderName string

// HTTPHeaderValue is a header's value: printable ASCII and spaces, without
// '"', '\' or '$', at most 1024 characters, not starting or ending with a
// space.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:Pattern=`^([!#%-\[\]-~]([ !#%-\[\]-~]*[!#%-\[\]-~])?)?$`
type HTTPHeaderValue string

// RateLimit limits the requests of each client address.
type RateLimit struct {
	// requestsPerSecond is how many requests a client address may make
	// per second, from 1 to 10000. The gateway counts on each replica
	// alone: with N replicas behind a load balancer a client may make up
	// to N times as many.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +required
	RequestsPerSecond int32 `json:"requestsPerSecond"`

	// burst is how many requests over the rate are served at once rather
	// than refused, from 0 to 10000; past it the gateway answers 429.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Burst int32 `json:"burst,omitempty"`
}
