package validation

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's retries (issue 37 item 2). The bounds and the conditions are
// the v1 schema's (markers in api/v1/retries_types.go, read by rules);
// the renderer writes the attempts and the conditions as nginx's
// proxy_next_upstream_tries and proxy_next_upstream, so it calls this
// check again and maps each condition through its own table, never
// writing the string itself.

var routeRetries = field.NewPath("retries")

// DefaultRetryConditions are the failures a route's retries send again
// when on is unset: those where the backend has not answered.
var DefaultRetryConditions = []v1.RetryCondition{v1.RetryOnConnectError, v1.RetryOnTimeout}

// RetryConditions is rt's on, or DefaultRetryConditions.
func RetryConditions(rt *v1.RouteRetries) []v1.RetryCondition {
	if len(rt.On) == 0 {
		return DefaultRetryConditions
	}
	return rt.On
}

// validateRetries checks r's retries, at the fields the schema names.
func validateRetries(r *v1.Route) field.ErrorList {
	rt := r.Retries
	if rt == nil {
		return nil
	}
	limits := rules()
	var errs field.ErrorList
	if bounds := limits.retryAttempts; !bounds.holds(int64(rt.Attempts)) {
		errs = append(errs, field.Invalid(routeRetries.Child("attempts"), rt.Attempts, fmt.Sprintf("must be from %d to %d", bounds.min, bounds.max)))
	}
	name := func(c v1.RetryCondition) string { return string(c) }
	check := func(c v1.RetryCondition, f *field.Path) field.ErrorList {
		if !slices.Contains(limits.retryConditions, string(c)) {
			return field.ErrorList{field.NotSupported(f, c, limits.retryConditions)}
		}
		return nil
	}
	errs = append(errs, eachCondition(rt.On, routeRetries.Child("on"), limits.retryOn, name, check)...)
	return errs.WithOrigin(RuleRetries)
}
