// Package conversion converts APIGateways between v1alpha1 and the v1 hub,
// losslessly, as pure functions wired into controller-runtime's hub/spoke
// converter.
package conversion
