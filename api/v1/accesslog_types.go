package v1

// AccessLog turns on the gateway pods' access log: a line per request on
// the gateway container's standard output, where `kubectl logs` and the
// cluster's log collector read it.
//
// A struct with a required format rather than a bool: the log's later
// options (a sample rate, extra fields, another format) are then fields
// beside format, and turning the log off is removing the struct, never a
// third state of a flag.
type AccessLog struct {
	// format is how each line is written. JSON, the only format so far,
	// writes one JSON object per line: time, route, host, method, path
	// (without the query string), status, bytes_sent, request_length,
	// request_time, upstream_addr, upstream_status,
	// upstream_response_time, client and request_id, every value a
	// string. Request bodies, query strings, cookies and the
	// Authorization header are never logged.
	// +required
	Format AccessLogFormat `json:"format"`
}

// AccessLogFormat is how the gateway writes its access log's lines.
// +kubebuilder:validation:Enum=JSON
type AccessLogFormat string

const (
	// AccessLogJSON writes one JSON object per request and line.
	AccessLogJSON AccessLogFormat = "JSON"
)
