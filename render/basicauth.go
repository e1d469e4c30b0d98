package render

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

// A route's basicAuth (issue 35) as nginx's auth_basic. The file it names
// is the operator's path for the Secret (basicauth.Path), which the
// gateway's own Secret puts in the pod; the Secret's content never reaches
// the configuration, so a new password changes no template and rolls no
// pod: nginx opens the file on every request.
//
// auth_basic runs in nginx's access phase, after the rewrite phase's
// answers: a source range's 403 and a redirect to the other scheme come
// first (the validation refuses basicAuth beside a redirect that answers
// every request), and so do the rules' hand-over to their named
// locations, each of which asks again. A file that is missing (the pod
// has not got the gateway's Secret yet) answers 403, an empty one (a
// Secret missing or refused) 401: never the backend.

// DefaultBasicAuthRealm is the realm of a basicAuth that names none.
const DefaultBasicAuthRealm = "Authentication Required"

// basicAuthBytes bounds the two directives besides the realm: a line
// each (names, quotes, indentation) and the path, whose file name is a
// fixed-length digest.
var basicAuthBytes = 2*lineBytes + len(basicauth.Path(""))

// writeBasicAuth writes the auth_basic lines of r's basicAuth into the
// location, refusing a realm the renderer would have to escape (fld is
// basicAuth's path). The file is named by basicauth.Path alone.
func writeBasicAuth(loc *strings.Builder, ba *v1.BasicAuth, fld *field.Path) field.ErrorList {
	if ba == nil {
		return nil
	}
	realm := string(ba.Realm)
	if realm == "" {
		realm = DefaultBasicAuthRealm
	}
	quoted, err := nginxArgument(realm)
	if err != nil {
		return field.ErrorList{field.Invalid(fld.Child("realm"), realm, err.Error())}
	}
	fmt.Fprintf(loc, "%sauth_basic %s;\n%sauth_basic_user_file %s;\n", indent, quoted, indent, basicauth.Path(ba.SecretName))
	return nil
}

// basicAuthBound bounds what writeBasicAuth adds to each location.
func basicAuthBound(r *v1.Route) (location, http int) {
	if r.BasicAuth == nil {
		return 0, 0
	}
	return basicAuthBytes + max(len(r.BasicAuth.Realm), len(DefaultBasicAuthRealm)), 0
}
