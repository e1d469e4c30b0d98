package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"

	v1 "example.com/apigateway-operator/api/v1"
)

// TestAuthString: the routes command's AUTH cell, each kind and both.
func TestAuthString(t *testing.T) {
	basic := &v1.BasicAuth{SecretName: "users", Realm: "Staff"}
	external := &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}
	tests := map[string]struct {
		route v1.Route
		want  string
	}{
		"none":     {},
		"basic":    {route: v1.Route{BasicAuth: basic}, want: "basic:users"},
		"external": {route: v1.Route{ExternalAuth: external}, want: "external:oauth2-proxy:4180"},
		"both":     {route: v1.Route{BasicAuth: basic, ExternalAuth: external}, want: "basic:users, external:oauth2-proxy:4180"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, AuthString(&tc.route)) })
	}
}

// TestCORSString: the routes command's CORS cell: the origins, the first
// two and a count beyond, "any origin" for "*", and credentials.
func TestCORSString(t *testing.T) {
	tests := map[string]struct {
		cors *v1.CORS
		want string
	}{
		"none":        {},
		"one origin":  {cors: &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}}, want: "https://app.example.com"},
		"two origins": {cors: &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://a.example.com", "https://*.example.org"}}, want: "https://a.example.com, https://*.example.org"},
		"more": {cors: &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://a.example.com", "https://b.example.com", "https://c.example.com", "https://d.example.com"}},
			want: "https://a.example.com, https://b.example.com +2 more"},
		"any origin": {cors: &v1.CORS{AllowOrigins: []v1.CORSOrigin{AnyOrigin}}, want: "any origin"},
		"credentials": {cors: &v1.CORS{AllowOrigins: []v1.CORSOrigin{"https://app.example.com"}, AllowCredentials: true},
			want: "https://app.example.com; credentials"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) { assert.Equal(t, tc.want, CORSString(tc.cors)) })
	}
}
