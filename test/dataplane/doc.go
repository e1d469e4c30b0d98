// Package dataplane is the data plane of the routing tests, as processes
// on the test's machine: echo backends that report the request as it
// reached them, a DNS server that plays the cluster DNS, Debian's nginx
// running a rendered configuration, and HTTP requests sent byte for byte.
// The controller's data-plane tests use it on loopback; test/gatewayapi
// uses it inside a network namespace of its own, behind a real Gateway.
package dataplane
