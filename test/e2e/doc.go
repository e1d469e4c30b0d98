// Package e2e drives what a newcomer runs first, `make run` (hack/run), as
// a real process: the program starts etcd, kube-apiserver,
// kube-controller-manager and the operator binary, and the tests talk to
// them with the real kubectl, then stop the program and check that nothing it
// started is left. The package has no non-test code.
package e2e
