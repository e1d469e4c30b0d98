package admit

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// sourceRangeWarnings warns about routes with sourceRanges when the
// operator trusts no front proxy (--gateway-trusted-proxies). The
// gateways then decide by the connecting address, and every request
// reaches them through the Ingress controller or the parent Gateway: a
// range that should name clients names that proxy's pods instead, so an
// allow list refuses every client and a deny list refuses none. Admitted
// all the same: the platform team may set the flag next, and the ranges
// are right then.
func sourceRangeWarnings(trustsProxies bool, gw *v1.APIGateway) []string {
	if trustsProxies {
		return nil
	}
	var first *field.Path
	n := 0
	for i := range gw.Spec.Routes {
		if gw.Spec.Routes[i].SourceRanges == nil {
			continue
		}
		if first == nil {
			first = field.NewPath("spec", "routes").Index(i).Child("sourceRanges")
		}
		n++
	}
	if n == 0 {
		return nil
	}
	where := first.String()
	if n > 1 {
		where += fmt.Sprintf(" (and %d more routes)", n-1)
	}
	return []string{where + ": " + warnSourceRangesUntrusted}
}

// warnSourceRangesUntrusted is the warning's reason, after the field path.
const warnSourceRangesUntrusted = "the operator trusts no front proxy (--gateway-trusted-proxies is empty), " +
	"so the gateway decides by the connecting address, which is the Ingress controller's or the parent Gateway's, " +
	"not the client's: ask the platform team to trust those proxies"
