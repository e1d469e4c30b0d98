package testenv

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The operator's identity in a cluster: the ServiceAccount manifests/rbac
// binds its roles to.
const (
	OperatorNamespace = "apigateway-operator-system"
	OperatorUser      = "system:serviceaccount:" + OperatorNamespace + ":apigateway-operator"
)

// AsOperator is e's Config impersonating the operator's ServiceAccount, so
// the API server applies the generated RBAC as it would in a cluster.
func (e *Env) AsOperator() *rest.Config {
	cfg := rest.CopyConfig(e.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: OperatorUser,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + OperatorNamespace, "system:authenticated"},
	}
	return cfg
}

// ApplyRBAC applies manifests/rbac (the generated roles, their bindings
// and the empty Secrets the Role names) into the operator's namespace
// until the test ends.
func (e *Env) ApplyRBAC(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorNamespace}}
	require.NoError(t, client.IgnoreAlreadyExists(e.Client.Create(ctx, ns)))
	dir := filepath.Join(e.Root, "manifests", "rbac")
	res := e.Kubectl(ctx, nil, "apply", "-k", dir)
	require.NoError(t, res.Err)
	t.Cleanup(func() {
		assert.NoError(t, e.Kubectl(context.Background(), nil, "delete", "-k", dir, "--ignore-not-found").Err)
	})
}
