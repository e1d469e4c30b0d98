// Package conversion converts APIGateways between v1alpha1 and the v1 hub,
// losslessly, as pure functions wired into controller-runtime's hub/spoke
// converter.
//
// The field mapping is direct: a v1alpha1 route's prefix is the v1 path with
// pathType Prefix, serviceName and servicePort are backendService.name and
// .port; image, replicas, status and metadata are copied. What v1 has and
// v1alpha1 lacks (pathType Exact or unset, tls, ingressClassName, resources,
// and any field v1 gains later) travels in the DataAnnotation of the
// v1alpha1 object, so both round trips are identities.
//
// When a v1alpha1 client edits the routes, each v1alpha1 route takes the
// v1-only fields of the first not yet taken v1 route with the same host and
// path, in list order. A route without such a partner (added, or with its
// host or prefix changed) gets the v1alpha1 meaning, pathType Prefix;
// v1 routes left without a partner are dropped with their v1-only fields.
// Backends are not part of the match, so changing a route's Service keeps
// its pathType, and the spec-level fields (tls, ingressClassName,
// resources) are always restored. Conversion never validates: a restored
// tls host that no longer matches a route is the validating webhook's to
// reject.
package conversion
