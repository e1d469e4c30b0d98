package faults

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"example.com/apigateway-operator/certs"
	"example.com/apigateway-operator/test/testenv"
)

// skew is how far the operator's clock is off the API server's.
const skew = 10 * time.Minute

// rotationArgs make the self-signed CA rotate within seconds of its
// issue: a CA lives 10 s longer than it is renewed before its end, and
// that margin is longer than the skew, as the defaults' 30 days are.
var rotationArgs = []string{
	"--cert-ca-lifetime=12m10s",
	"--cert-ca-renew-before=12m",
	"--cert-lifetime=12m10s",
	"--cert-renew-before=11m",
	"--cert-propagation-delay=2s",
	"--cert-ca-grace-period=3s",
}

// TestClockSkew runs the operator with its clock minutes ahead of the API
// server's, then minutes behind, through a whole CA rotation each time:
// every call the API server makes to the webhooks in the meantime (a
// v1alpha1 read through the conversion webhook, a write only the
// validating webhook refuses) must verify the certificate the operator
// serves, from its first one through the old and new CA in the bundle to
// the new CA alone.
//
// A static Go binary reads the time through the vDSO, so neither
// LD_PRELOAD (faketime) nor a time namespace (monotonic clocks only) can
// skew it, and the machine's clock is the API server's too: the operator
// is built with -tags faultinject, which offsets the clock its
// certificates are issued and rotated by (certs.Options.Clock).
func TestClockSkew(t *testing.T) {
	c := startCluster(t, clusterOptions{})
	for name, offset := range map[string]time.Duration{"ahead": skew, "behind": -skew} {
		t.Run(name, func(t *testing.T) {
			op := c.startOperator(t, operatorOptions{
				user: replicas[0], bin: faultBin, webhookPort: c.webhookPort, args: rotationArgs,
				env: []string{"APIGATEWAY_FAULT_CLOCK_OFFSET=" + offset.String()},
			})
			t.Cleanup(func() {
				// The next case starts from no CA: this one's would not be
				// due for renewal by a clock behind it for a long while.
				if err := c.cp.StopProcess(context.Background(), op.Process); err != nil {
					t.Log(err) // killed after the stop timeout: no matter here
				}
				c.emptyCertSecret(t)
			})
			ns := testenv.NewNamespace(t, c.client, "skew-"+name)
			probe := gateway(ns, "probe", 1, "/api/")
			require.EventuallyWithT(t, func(ct *assert.CollectT) {
				err := c.client.Create(t.Context(), probe)
				if !apierrors.IsAlreadyExists(err) {
					require.NoError(ct, err)
				}
			}, waitFor, tick, "the probe gateway was not created")

			first := c.caBundle(t)
			require.Len(t, first, 1)
			var states []string
			calls, skipped, failed := 0, 0, map[string]int{}
			deadline := time.Now().Add(waitFor)
			for {
				bundle := c.caBundle(t)
				state := fmt.Sprintf("%d CA(s), the newest valid from %s", len(bundle), bundle[0].NotBefore.Format(time.TimeOnly))
				if len(states) == 0 || states[len(states)-1] != state {
					states = append(states, state)
				}
				switch err := c.callWebhooks(t, probe); {
				case errors.Is(err, errPoliciesBehind):
					skipped++
				case err != nil:
					failed[firstLine(err.Error())]++
				}
				calls++
				if len(bundle) == 1 && !bundle[0].Equal(first[0]) {
					break // the old CA is gone: the rotation is over
				}
				require.True(t, time.Now().Before(deadline), "no full CA rotation within %s: %v", waitFor, states)
				time.Sleep(250 * time.Millisecond)
			}
			t.Logf("bundles seen: %v", states)
			t.Logf("%d webhook calls through the rotation, %d failed, %d not made (%v)", calls, total(failed), skipped, errPoliciesBehind)
			assert.Less(t, skipped, calls, "no write reached the validating webhook")
			assert.Greater(t, len(states), 2, "the rotation went through a bundle with both CAs")
			assert.Empty(t, failed, "webhook calls the API server could not make, by their first error")
		})
	}
}

// caBundle is the CA bundle of the self-signed Secret, once it has one.
func (c *cluster) caBundle(t *testing.T) []*x509.Certificate {
	t.Helper()
	var out []*x509.Certificate
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		s := &corev1.Secret{}
		require.NoError(ct, c.client.Get(t.Context(), client.ObjectKey{Namespace: operatorNS, Name: "apigateway-operator-webhook-cert"}, s))
		out = nil
		rest := s.Data[certs.KeyCABundle]
		for {
			var block *pem.Block
			if block, rest = pem.Decode(rest); block == nil {
				break
			}
			cert, err := x509.ParseCertificate(block.Bytes)
			require.NoError(ct, err)
			out = append(out, cert)
		}
		require.NotEmpty(ct, out)
	}, waitFor, tick, "no CA bundle in the Secret")
	return out
}

// emptyCertSecret empties the self-signed Secret, as the README tells
// users to for a new CA.
func (c *cluster) emptyCertSecret(t *testing.T) {
	s := &corev1.Secret{}
	ctx := context.Background() // also from a cleanup
	require.NoError(t, c.client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: "apigateway-operator-webhook-cert"}, s))
	s.Data, s.Annotations = nil, nil
	require.NoError(t, c.client.Update(ctx, s))
}

// errPoliciesBehind: the API server answered a write 503 before it
// called the webhooks, its mutating admission policies not having read
// the CRD's OpenAPI since the operator's CA bundle changed the CRD (they
// poll it every 5 s). The API server's window, not a failure of the
// rotation; the operator's start and rotations meet it. The probe's
// create is retried over it, and a dry run that meets it is not counted
// as a webhook call.
var errPoliciesBehind = errors.New("the admission policies had not read the CRD's schema yet")

// callWebhooks makes the API server call the conversion webhook (a
// v1alpha1 read of probe) and the validating webhook (a dry-run create
// that only it refuses, a route repeated once percent-decoded): either
// fails if the API server cannot verify the operator's certificate.
func (c *cluster) callWebhooks(t *testing.T, probe client.Object) error {
	t.Helper()
	old := &unstructured.Unstructured{}
	old.SetAPIVersion("example.com/v1alpha1")
	old.SetKind("APIGateway")
	if err := c.client.Get(t.Context(), client.ObjectKeyFromObject(probe), old); err != nil {
		return fmt.Errorf("v1alpha1 read: %w", err)
	}
	dup := gateway(probe.GetNamespace(), "dup", 1, "/users", "/%75sers")
	err := c.client.Create(t.Context(), dup, client.DryRunAll)
	switch {
	case err == nil:
		return fmt.Errorf("a repeated route was admitted: the validating webhook was not reached")
	case apierrors.IsServiceUnavailable(err) && strings.Contains(err.Error(), "There can be a delay between when CustomResourceDefinitions are created"):
		return errPoliciesBehind
	case !apierrors.IsInvalid(err) || !bytes.Contains([]byte(err.Error()), []byte("Duplicate value")):
		return fmt.Errorf("validating webhook: %w", err)
	}
	return nil
}

// firstLine is msg up to its first line break, the current time removed,
// so that repeats of one failure count as one.
func firstLine(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if i := strings.Index(msg, "current time "); i >= 0 {
		msg = msg[:i]
	}
	return msg
}

func total(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
