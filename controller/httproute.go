package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Gateway API's limits on one HTTPRoute (its CRD's schema).
const (
	maxHTTPRouteRules = 16
)

// desiredHTTPRoutes are gw's HTTPRoutes, for exposure type HTTPRoute: one
// per route host, in host order, each matching that host's paths and
// sending them to Service N port 80.
//
// Why one per host: an HTTPRoute's hostnames apply to all its rules, so a
// single HTTPRoute for a.example.com/x and b.example.com/y would also
// claim b.example.com/x, and a Gateway gives a path claimed twice to the
// older route: a gateway could take another gateway's requests without
// ever naming them. One HTTPRoute per host claims exactly the gateway's
// routes, the same set the Ingress claims with one rule per host.
func desiredHTTPRoutes(gw *v1.APIGateway) []*gatewayv1ac.HTTPRouteApplyConfiguration {
	byHost := ingressPaths(gw)
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	out := make([]*gatewayv1ac.HTTPRouteApplyConfiguration, 0, len(hosts))
	for _, h := range hosts {
		spec := gatewayv1ac.HTTPRouteSpec().
			WithParentRefs(parentRefs(gw)...).
			WithHostnames(gatewayv1.Hostname(h)).
			WithRules(httpRouteRules(gw, byHost[h])...)
		out = append(out, gatewayv1ac.HTTPRoute(HTTPRouteName(gw, h), gw.Namespace).
			WithLabels(childLabels(gw)).
			WithOwnerReferences(ownerReference(gw)).
			WithSpec(spec))
	}
	return out
}

// HTTPRouteName is the name of gw's HTTPRoute for host: the gateway's
// name and a digest of the host, since a host (up to 253 characters, and
// "*." for a wildcard) cannot be part of a name.
func HTTPRouteName(gw *v1.APIGateway, host string) string {
	sum := sha256.Sum256([]byte(host))
	return gw.Name + "-" + hex.EncodeToString(sum[:5])
}

// parentRefs are the HTTPRoutes' parentRefs: spec.exposure.httpRoute's,
// with the group and kind Gateway API would default spelt out.
func parentRefs(gw *v1.APIGateway) []*gatewayv1ac.ParentReferenceApplyConfiguration {
	refs := gw.Spec.Exposure.HTTPRoute.ParentRefs
	out := make([]*gatewayv1ac.ParentReferenceApplyConfiguration, 0, len(refs))
	for _, p := range refs {
		ref := gatewayv1ac.ParentReference().
			WithGroup(gatewayv1.GroupName).
			WithKind("Gateway").
			WithName(gatewayv1.ObjectName(p.Name))
		if p.Namespace != nil {
			ref.WithNamespace(gatewayv1.Namespace(*p.Namespace))
		}
		if p.SectionName != nil {
			ref.WithSectionName(gatewayv1.SectionName(*p.SectionName))
		}
		out = append(out, ref)
	}
	return out
}

// httpRouteRules match paths, one rule per path, all to Service N port 80.
// A host with more paths than an HTTPRoute may have rules shares them out
// in order, several matches a rule: the matches of a rule are alternatives
// and every rule has the same backend, so the requests matched are the
// same. 100 paths (the most a gateway has) fit Gateway API's 128 matches.
//
// The backend's group, kind and weight are the schema's defaults, spelt
// out: rules is an atomic list, so the operator owns it whole, defaults
// included, and what it last applied would otherwise never equal what it
// wants (every reconcile would apply again).
func httpRouteRules(gw *v1.APIGateway, paths []ingressPath) []*gatewayv1ac.HTTPRouteRuleApplyConfiguration {
	perRule := (len(paths) + maxHTTPRouteRules - 1) / maxHTTPRouteRules
	var rules []*gatewayv1ac.HTTPRouteRuleApplyConfiguration
	for start := 0; start < len(paths); start += perRule {
		rule := gatewayv1ac.HTTPRouteRule().WithBackendRefs(gatewayv1ac.HTTPBackendRef().
			WithGroup("").
			WithKind("Service").
			WithName(gatewayv1.ObjectName(gw.Name)).
			WithPort(servicePort).
			WithWeight(1))
		for _, p := range paths[start:min(start+perRule, len(paths))] {
			rule.WithMatches(gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().
				WithType(httpPathType(p.pathType)).
				WithValue(httpRoutePath(p.path))))
		}
		rules = append(rules, rule)
	}
	return rules
}

func httpPathType(pt networkingv1.PathType) gatewayv1.PathMatchType {
	if pt == networkingv1.PathTypeExact {
		return gatewayv1.PathMatchExact
	}
	return gatewayv1.PathMatchPathPrefix
}

// httpRoutePath writes a normalised route path (routepath.MatchPath, as
// the Ingress has it) in the characters Gateway API allows in a path
// match, percent-encoding every other byte, such as those of a decoded
// é, in upper case.
func httpRoutePath(path string) string {
	var b strings.Builder
	for i := range len(path) {
		c := path[i]
		if isGatewayPathByte(c) {
			b.WriteByte(c)
			continue
		}
		const hexDigits = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// isGatewayPathByte reports whether Gateway API's HTTPRoute schema allows
// c, as written, in a path match: letters, digits and - / . _ ~ ! $ & ' (
// ) * + , ; = : @.
func isGatewayPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-/._~!$&'()*+,;=:@", c) >= 0
}

// exposedByHTTPRoute reports whether gw asks for HTTPRoutes.
func exposedByHTTPRoute(gw *v1.APIGateway) bool { return validation.ExposedByHTTPRoute(&gw.Spec) }
