package validation

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's basicAuth (issue 35). Its bounds and pattern are the v1
// schema's (markers in api/v1/basicauth_types.go, read by rules); the
// renderer writes the realm into a quoted auth_basic argument, so it
// calls this check again. The Secret's name never reaches nginx: the
// file's path is the operator's (basicauth.Path).

var (
	routeBasicAuth       = field.NewPath("basicAuth")
	routeBasicAuthSecret = routeBasicAuth.Child("secretName")
	routeBasicAuthRealm  = routeBasicAuth.Child("realm")
)

// The schema's messages, said again by the Go rules.
const (
	basicAuthRedirectMessage = "a redirect with a hostname or without scheme answers every request before basicAuth is asked: remove basicAuth"
	basicAuthRealmMessage    = "must be letters, digits, spaces and . _ , : / ( ) @ -"
)

// validateBasicAuth checks r's basicAuth, at the fields the schema's
// rules name.
func validateBasicAuth(r *v1.Route) field.ErrorList {
	ba := r.BasicAuth
	if ba == nil {
		return nil
	}
	var errs field.ErrorList
	if ba.SecretName == "" {
		errs = append(errs, field.Required(routeBasicAuthSecret, "the name of a Secret in the gateway's namespace whose key auth holds an htpasswd file"))
	} else {
		errs = append(errs, validateSecretName(ba.SecretName, routeBasicAuthSecret)...)
	}
	if ba.Realm != "" {
		errs = append(errs, validateString(string(ba.Realm), routeBasicAuthRealm, rules().basicAuthRealm, basicAuthRealmMessage)...)
	}
	if AnswersAll(r) {
		errs = append(errs, field.Invalid(routeBasicAuth, fmt.Sprintf("{secretName: %s}", ba.SecretName), basicAuthRedirectMessage))
	}
	return errs.WithOrigin(RuleBasicAuth)
}
