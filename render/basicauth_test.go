package render

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

func TestWriteBasicAuth(t *testing.T) {
	tests := map[string]struct {
		in      *v1.BasicAuth
		want    string
		refused string
	}{
		"none":          {},
		"default realm": {in: &v1.BasicAuth{SecretName: "users"}, want: indent + `auth_basic "Authentication Required";` + "\n" + indent + "auth_basic_user_file " + basicauth.Path("users") + ";\n"},
		"own realm":     {in: &v1.BasicAuth{SecretName: "users", Realm: "Staff only"}, want: indent + `auth_basic "Staff only";` + "\n" + indent + "auth_basic_user_file " + basicauth.Path("users") + ";\n"},
		// The Secret's name never reaches the configuration.
		"a hostile Secret name": {in: &v1.BasicAuth{SecretName: `x"; } server { #`}, want: indent + `auth_basic "Authentication Required";` + "\n" + indent + "auth_basic_user_file " + basicauth.Path(`x"; } server { #`) + ";\n"},
		"a realm with a quote":  {in: &v1.BasicAuth{SecretName: "users", Realm: `a"b`}, refused: "printable ASCII"},
		"a realm with $":        {in: &v1.BasicAuth{SecretName: "users", Realm: "a$host"}, refused: "printable ASCII"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var b strings.Builder
			errs := writeBasicAuth(&b, tc.in, field.NewPath("basicAuth"))
			if tc.refused != "" {
				assert.ErrorContains(t, errs.ToAggregate(), tc.refused)
				return
			}
			assert.Empty(t, errs)
			assert.Equal(t, tc.want, b.String())
			assert.NotContains(t, b.String(), "server {")
			if tc.in != nil {
				bound, _ := basicAuthBound(&v1.Route{BasicAuth: tc.in})
				assert.GreaterOrEqual(t, bound, b.Len())
			}
		})
	}
}
