package validation

import (
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// basicAuthCases: Secret names and realms on both sides of each bound,
// the hostile strings, and basicAuth beside each kind of redirect.
func basicAuthCases(add addCase) {
	secrets := map[string]bool{
		"users": true, "api.users-1": true, strings.Repeat("s", 253): true, strings.Repeat("s", 254): false,
		"": false, "Users": false, "users/../x": false, "-users": false, "users_1": false, "ns/users": false,
	}
	realms := map[string]bool{
		"Staff only": true, "api.example.com (admin): v2 @ HQ_1,-/": true, strings.Repeat("r", 64): true,
		strings.Repeat("r", 65): false, `say "hi"`: false, "cost $5": false, `back\slash`: false, "tab\there": false,
		"ünïcode": false, "semi;colon": false,
	}
	for _, s := range validationtest.HostileStrings() {
		secrets[s] = false
		realms[s] = false
	}
	realms["a b"] = true // spaces are a realm's words
	for value, valid := range secrets {
		add("basicAuth.secretName", value, valid, func(tc *ruleCase) {
			tc.route.BasicAuth = &v1.BasicAuth{SecretName: value}
		})
	}
	for value, valid := range realms {
		add("basicAuth.realm", value, valid, func(tc *ruleCase) {
			tc.route.BasicAuth = &v1.BasicAuth{SecretName: "users", Realm: v1.BasicAuthRealm(value)}
		})
	}
	full := &v1.RedirectPath{Type: v1.ReplaceFullPath, Value: "/new"}
	for value, tc := range map[string]struct {
		redirect v1.HTTPRedirect
		backend  bool
		valid    bool
	}{
		// To https, the requests that came over http: the others reach
		// the backend, through basicAuth.
		"to the other scheme": {redirect: v1.HTTPRedirect{Scheme: "https"}, backend: true, valid: true},
		"to another host":     {redirect: v1.HTTPRedirect{Hostname: "www.example.com"}},
		"to another path":     {redirect: v1.HTTPRedirect{Path: full}},
		"scheme and host":     {redirect: v1.HTTPRedirect{Scheme: "https", Hostname: "www.example.com"}},
	} {
		add("basicAuth with a redirect", value, tc.valid, func(p *ruleCase) {
			p.route.Redirect = &tc.redirect
			if !tc.backend {
				p.route.BackendService = v1.BackendService{}
			}
			p.route.BasicAuth = &v1.BasicAuth{SecretName: "users"}
		})
	}
}
