// Package gatewayapi tests HTTPRoute exposure end to end, through a real
// Gateway API implementation: Traefik (built by `make traefik`) runs as a
// process against the test's API server, routes real requests to each
// gateway's nginx (Debian's, on the configuration the operator rendered),
// which proxies them to echo backends. It also tests that the operator
// picks up Gateway API installed, and removed, while it runs.
//
// EndpointSlices refuse loopback addresses, so the test binary re-executes
// itself in a network namespace (and a PID namespace) of its own, where
// private addresses on the loopback device stand in for the pods' IPs:
// nothing it starts is reachable from, or outlives it outside, that
// namespace. It needs root, as CI has.
package gatewayapi
