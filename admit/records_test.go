package admit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
)

// TestValidateRecords: the errors admission makes of a host another
// namespace's HostClaim holds, named only to a user who may read that
// namespace's gateways, and of a domain bound to other namespaces.
func TestValidateRecords(t *testing.T) {
	gw := validGateway() // namespace default, host api.example.com
	claim := v1.HostClaim{Spec: v1.HostClaimSpec{Host: "example.com", Namespace: "owner"}}
	owned := RelatedObjects{Records: ownership.Records{Claims: []v1.HostClaim{claim}}}

	errs, _ := Validate(nil, gw, owned)
	if assert.Len(t, errs, 2, "one per route") {
		assert.Equal(t, "spec.routes[0].host", errs[0].Field)
		assert.Equal(t, RuleHostOwned, errs[0].Origin)
		assert.Contains(t, errs[0].Detail, "belongs to another namespace")
		assert.NotContains(t, errs[0].Detail, "namespace owner")
	}
	owned.Readable = func(ns string) bool { return ns == "owner" }
	errs, _ = Validate(nil, gw, owned)
	if assert.Len(t, errs, 2, "one per route") {
		assert.Contains(t, errs[0].Detail, "belongs to namespace owner (its HostClaim covers it)")
	}
	assert.Equal(t, []string{"owner/"}, ConflictHolders(nil, gw, owned))

	bound := RelatedObjects{Records: ownership.Records{Bindings: []v1.DomainBinding{{ObjectMeta: metav1.ObjectMeta{Name: "b"},
		Spec: v1.DomainBindingSpec{Domain: "api.example.com", Namespaces: []string{"team-a"}}}}}}
	errs, _ = Validate(nil, gw, bound)
	if assert.Len(t, errs, 2, "one per route") {
		assert.Equal(t, "spec.routes[0].host", errs[0].Field)
		assert.Equal(t, RuleDomainBound, errs[0].Origin)
		assert.Contains(t, errs[0].Detail, "domain api.example.com, which the cluster's admins bound to other namespaces")
	}
	assert.Equal(t, []string{"domain api.example.com"}, ConflictHolders(nil, gw, bound))

	bound.Records.Bindings[0].Spec.Namespaces = append(bound.Records.Bindings[0].Spec.Namespaces, gw.Namespace)
	errs, _ = Validate(nil, gw, bound)
	assert.Empty(t, errs, "a namespace of the binding")
}
