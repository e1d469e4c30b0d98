package dataplane

import (
	"net/http"

	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// RulesHost is the host of RulesRoutes.
const RulesHost = "api.example.com"

// RulesServices are the echo backends RulesRoutes send to.
var RulesServices = []string{"main", "header", "cookie", "both"}

// RulesRoutes are routes with rules (routes[].rules), the one table the
// nginx data-plane test and the HTTPRoute parity test hold to the same
// decisions (RuleRequests). On /users/ the route's backendService is
// main, and three rules come first: a canary by header value, one by
// cookie, one by a query parameter and the method together or a header
// present; /beta and /cookie have rules only, so a request none takes is
// answered 404 there. ports gives each Service's port.
func RulesRoutes(ports map[string]int32) []v1.Route {
	backend := func(name string) v1.BackendService {
		return v1.BackendService{Name: v1.ServiceName(name), Port: v1.PortNumber(ports[name])}
	}
	users := v1.Route{Host: RulesHost, Path: "/users/", PathType: v1.PathTypePrefix, BackendService: backend("main"), Rules: []v1.RouteRule{
		{Matches: []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchExact, Value: "always; {x}"}}}}, BackendService: backend("header")},
		{Matches: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}}}, BackendService: backend("cookie")},
		// Two conditions in one match, and a second match: either.
		{Matches: []v1.RequestMatch{
			{QueryParams: []v1.QueryParamMatch{{Name: "debug", Type: v1.MatchExact, Value: "1"}}, Method: ptr.To[v1.HTTPMethod]("POST")},
			{Headers: []v1.HeaderMatch{{Name: "X-Debug", Type: v1.MatchPresent}}},
		}, BackendService: backend("both")},
	}}
	beta := v1.Route{Host: RulesHost, Path: "/beta", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{
		{Matches: []v1.RequestMatch{{QueryParams: []v1.QueryParamMatch{{Name: "beta", Type: v1.MatchExact, Value: "on"}}}}, BackendService: backend("header")},
	}}
	cookie := v1.Route{Host: RulesHost, Path: "/cookie", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{
		{Matches: []v1.RequestMatch{{Cookies: []v1.CookieMatch{{Name: "session", Value: "beta"}}}}, BackendService: backend("cookie")},
	}}
	return []v1.Route{users, beta, cookie}
}

// RuleRequest is a request to a gateway of RulesRoutes and its answer.
type RuleRequest struct {
	Method, Target string
	Header         http.Header
	// Service is the echo backend that must answer; "" for a 404.
	Service string
	// Broader says why an HTTPRoute with the same rules passes the
	// request on to the gateway although the gateway answers it 404: a
	// condition Gateway API cannot state (a cookie; a header or query
	// parameter that need only be present), which the HTTPRoute leaves
	// out, so the gateway's nginx decides.
	Broader string
	// Narrower says why the Gateway answers 404 itself to a request the
	// gateway would serve: a query parameter's name in another case
	// (nginx compares names without case, Gateway API exactly).
	Narrower string
}

// RuleRequests are requests to RulesRoutes, each condition on both sides
// of its decision, by name.
func RuleRequests() map[string]RuleRequest {
	post := http.MethodPost
	return map[string]RuleRequest{
		"no condition":                          {Target: "/users/1", Service: "main"},
		"the header's value":                    {Target: "/users/1", Header: http.Header{"X-Canary": {"always; {x}"}}, Service: "header"},
		"the header's name in another case":     {Target: "/users/1", Header: http.Header{"x-canary": {"always; {x}"}}, Service: "header"},
		"another value of the header":           {Target: "/users/1", Header: http.Header{"X-Canary": {"always"}}, Service: "main"},
		"the value in another case":             {Target: "/users/1", Header: http.Header{"X-Canary": {"ALWAYS; {x}"}}, Service: "main"},
		"the value as a prefix":                 {Target: "/users/1", Header: http.Header{"X-Canary": {"always; {x}y"}}, Service: "main"},
		"the cookie":                            {Target: "/users/1", Header: http.Header{"Cookie": {"a=b; session=beta; c=d"}}, Service: "cookie"},
		"the cookie, another value":             {Target: "/users/1", Header: http.Header{"Cookie": {"session=beta2"}}, Service: "main"},
		"another cookie with the value":         {Target: "/users/1", Header: http.Header{"Cookie": {"xsession=beta"}}, Service: "main"},
		"query and method":                      {Method: post, Target: "/users/1?a=2&debug=1", Service: "both"},
		"the query without the method":          {Target: "/users/1?debug=1", Service: "main"},
		"the method without the query":          {Method: post, Target: "/users/1?debug=2", Service: "main"},
		"the query's name in another param":     {Method: post, Target: "/users/1?xdebug=1", Service: "main"},
		"the second match: a header present":    {Target: "/users/1", Header: http.Header{"X-Debug": {"yes"}}, Service: "both"},
		"the second match: the header empty":    {Target: "/users/1", Header: http.Header{"X-Debug": {""}}, Service: "main"},
		"two rules take it: the first wins":     {Method: post, Target: "/users/1?debug=1", Header: http.Header{"X-Canary": {"always; {x}"}}, Service: "header"},
		"two rules take it: the cookie's first": {Target: "/users/1", Header: http.Header{"X-Debug": {"1"}, "Cookie": {"session=beta"}}, Service: "cookie"},
		"the exact location of the prefix":      {Target: "/users", Header: http.Header{"Cookie": {"session=beta"}}, Service: "cookie"},
		"rules only: taken":                     {Target: "/beta?beta=on", Service: "header"},
		"rules only: none holds":                {Target: "/beta?alpha=on"},
		"rules only: another value":             {Target: "/beta?beta=off"},
		"rules only: the parameter empty":       {Target: "/beta?beta="},
		"rules only: the value's case":          {Target: "/beta?beta=ON"},
		"rules only: another path":              {Target: "/beta/1?beta=on"},
		"rules only: the name's case":           {Target: "/beta?BETA=on", Service: "header", Narrower: "a query parameter's name in another case"},
		"rules only: a method":                  {Method: post, Target: "/beta?beta=on", Service: "header"},
		"rules only, by cookie: taken":          {Target: "/cookie", Header: http.Header{"Cookie": {"session=beta"}}, Service: "cookie"},
		"rules only, by cookie: none holds":     {Target: "/cookie", Header: http.Header{"Cookie": {"session=alpha"}}, Broader: "a cookie"},
	}
}
