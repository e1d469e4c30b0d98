// Package failure holds the operator's failure tests: leader failover, an
// API server restart, graceful shutdown of the webhook server under load and
// hostile request bodies on the real TLS endpoints. They run in `make test`
// against a real control plane; the package has no non-test code.
package failure
