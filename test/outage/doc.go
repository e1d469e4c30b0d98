// Package outage holds the tests of what users see while no operator
// replica answers: the API server, with the manifests' defaults policy,
// schema and fail-open webhook configurations, keeps admitting every v1
// write the operator would admit, with the same defaults and the same
// refusals; and once the operator is back, a route conflict that slipped
// in is resolved by the reconciler, the older gateway keeping the route.
package outage
