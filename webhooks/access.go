package webhooks

import (
	"context"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "example.com/apigateway-operator/api/v1"
)

// AccessReviewer answers whether a user may read the APIGateways of a
// namespace: a denial names another namespace's gateway (which tells that
// it exists and what it routes) only to a user who could read it anyway.
type AccessReviewer interface {
	CanReadGateways(ctx context.Context, user authenticationv1.UserInfo, namespace string) bool
}

// SubjectAccessReviewer asks the API server, with a SubjectAccessReview
// for the admission request's user (the operator may create them: its
// metrics endpoint's authorization does too). It is called only for a
// denial that involves another namespace, so at most a few times per
// refused write; an error counts as "may not".
type SubjectAccessReviewer struct{ Client client.Client }

var _ AccessReviewer = SubjectAccessReviewer{}

// CanReadGateways implements AccessReviewer: may user get APIGateways in
// namespace?
func (s SubjectAccessReviewer) CanReadGateways(ctx context.Context, user authenticationv1.UserInfo, namespace string) bool {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: namespace, Verb: "get", Group: v1.GroupVersion.Group, Resource: "apigateways",
		},
	}}
	if err := s.Client.Create(ctx, review); err != nil {
		logf.FromContext(ctx).Info("Could not ask whether the user may read another namespace's APIGateways; not naming them", "error", err.Error())
		return false
	}
	return review.Status.Allowed
}
