package certs

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/testenv"
)

// apiServerClientCA is the file of the CA that signed the client
// certificate this suite's kube-apiserver presents to admission webhooks.
var apiServerClientCA string

// presentClientCert is testenv's APIServer hook: it makes the kube-apiserver
// present a client certificate to every admission webhook, as hack/run
// does (through the same controlplane.WriteWebhookClientAuth) and as the
// README tells cluster admins to. Its kubeconfig's user is "*" (any
// webhook host): the tests' webhooks listen on random ports, where a
// cluster's kubeconfig names the Service,
// apigateway-operator-webhook.apigateway-operator-system.svc.
func presentClientCert(dir string) (map[string]string, error) {
	a, err := controlplane.WriteWebhookClientAuth(dir, "*", time.Now())
	if err != nil {
		return nil, err
	}
	apiServerClientCA = a.CA
	return a.Flags, nil
}

// TestClientAuthAdmitsTheAPIServerAndRefusesOtherCallers runs the webhooks
// with client authentication against a kube-apiserver that presents its
// client certificate to admission webhooks: writes are defaulted and
// validated (the counters count only authenticated calls), v1alpha1 reads
// convert through the open /convert, and a plain HTTPS client that trusts
// the serving certificate but has no client certificate learns nothing
// from the admission paths.
func TestClientAuthAdmitsTheAPIServerAndRefusesOtherCallers(t *testing.T) {
	ctx := context.Background()
	ns := testenv.NewNamespace(t, env.Client, "certs-clientauth")
	o := testOptions(t, ns, "webhook-cert")
	shipSecret(t, o)
	op := startInstance(t, o, instance{clientCA: apiServerClientCA})
	installWebhooks(t, o, op.port, op.port, op.port, nil)
	op.waitReady(t)

	// roundTrip checks that the mutating webhook filled in replicas and
	// lower-cased the host, and reads the gateway back as v1alpha1.
	waitConversionServed(t, ns)
	require.NoError(t, roundTrip(ctx, ns, "gw-authenticated"))
	requireRejectedAsDuplicate(t, ns, "gw-authenticated")
	assert.Positive(t, op.calls.mutate.Load(), "the API server's calls to the mutating webhook were authenticated")
	assert.Positive(t, op.calls.validate.Load(), "the API server's calls to the validating webhook were authenticated")
	assert.Positive(t, op.calls.convert.Load(), "the API server called the conversion webhook")

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(secretOf(t, o).Data[KeyCABundle]))
	addr := fmt.Sprintf("127.0.0.1:%d", op.port)
	review, err := testenv.AdmissionReview("probe", newGateway(ns, "gw-authenticated"))
	require.NoError(t, err)
	before := op.calls.validate.Load() + op.calls.mutate.Load()
	for _, path := range []string{validatePath, mutatePath} {
		code, err := post(addr, roots, nil, path, review)
		require.NoError(t, err, "the TLS handshake succeeds without a client certificate (VerifyClientCertIfGiven)")
		assert.Equal(t, http.StatusUnauthorized, code, "%s answered a caller without a client certificate", path)
	}
	assert.Equal(t, before, op.calls.validate.Load()+op.calls.mutate.Load(), "a refused request reached a webhook")

	conversion, err := testenv.ConversionReview("probe", "example.com/v1alpha1",
		[]byte(`{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"x","namespace":"`+ns+`"},"spec":{"routes":[{"host":"a.example.com","path":"/","pathType":"Prefix","backendService":{"name":"s","port":80}}]}}`))
	require.NoError(t, err)
	code, err := post(addr, roots, nil, convertPath, conversion)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, "/convert stays open: the API server presents no client certificate to conversion webhooks")
}
