package failure

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/inflight"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

// The paths the webhooks are served at, as webhooks.SetupWithManager
// serves them.
const (
	mutatePath   = webhooks.MutatePath
	validatePath = webhooks.ValidatePath
	convertPath  = webhooks.ConvertPath
)

// webhookServer is the operator's real webhook server (webhooks.SetupWithManager
// on a manager) serving TLS on 127.0.0.1.
type webhookServer struct {
	*running
	addr   string
	client *http.Client
}

// url is the server's URL for path.
func (s *webhookServer) url(path string) string { return "https://" + s.addr + path }

// startWebhookServer starts the webhooks in a manager of their own; extra
// registers further handlers before the server starts.
func startWebhookServer(t *testing.T, extra func(webhook.Server)) *webhookServer {
	t.Helper()
	// A reserved port (test/ports): envtest would pick one and release it.
	serving := &envtest.WebhookInstallOptions{LocalServingHost: "127.0.0.1", LocalServingPort: ports.For(t)}
	require.NoError(t, serving.PrepWithoutInstalling())
	t.Cleanup(func() { _ = serving.Cleanup() })

	opts := env.ManagerOptions()
	opts.WebhookServer = inflight.NewServer(webhook.Options{
		Host: serving.LocalServingHost, Port: serving.LocalServingPort, CertDir: serving.LocalServingCertDir,
		// As main serves it by default: HTTP/1.1 only.
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}, inflight.Limits{})
	mgr := operatortest.NewManager(t, env, operatortest.Options{Manager: &opts, Webhooks: &webhooks.Options{DefaultImage: image, DefaultReplicas: 1}})
	if extra != nil {
		extra(mgr.GetWebhookServer())
	}
	r := start(t, mgr)
	testenv.AwaitStarted(t, mgr, true, waitFor)

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(serving.LocalServingCAData))
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13},
		MaxIdleConnsPerHost: 64,
	}
	t.Cleanup(transport.CloseIdleConnections)
	return &webhookServer{
		running: r,
		addr:    net.JoinHostPort(serving.LocalServingHost, strconv.Itoa(serving.LocalServingPort)),
		client:  &http.Client{Transport: transport, Timeout: waitFor},
	}
}

// post sends body and returns the status code and the response body.
func (s *webhookServer) post(path string, body []byte) (int, []byte, error) {
	res, err := s.client.Post(s.url(path), "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	return res.StatusCode, out, err
}

// admit posts an AdmissionReview and decodes the answer.
func (s *webhookServer) admit(path string, body []byte) (*admissionv1.AdmissionResponse, error) {
	code, out, err := s.post(path, body)
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, &httpError{code: code, body: string(out)}
	}
	review := &admissionv1.AdmissionReview{}
	if err := json.Unmarshal(out, review); err != nil {
		return nil, err
	}
	if review.Response == nil {
		return nil, &httpError{code: code, body: "no response in " + string(out)}
	}
	return review.Response, nil
}

type httpError struct {
	code int
	body string
}

func (e *httpError) Error() string { return "HTTP " + strconv.Itoa(e.code) + ": " + e.body }

// admissionReview is a create of gw as the API server sends it.
func admissionReview(t testing.TB, uid string, gw *v1.APIGateway) []byte {
	t.Helper()
	body, err := testenv.AdmissionReview(uid, gw)
	require.NoError(t, err)
	return body
}

// conversionReview asks to convert objects to desired.
func conversionReview(t testing.TB, uid, desired string, objects ...[]byte) []byte {
	t.Helper()
	body, err := testenv.ConversionReview(uid, desired, objects...)
	require.NoError(t, err)
	return body
}

// gatewayObject is gateway with its apiVersion and kind, as it is sent in
// a review.
func gatewayObject(ns, name string) *v1.APIGateway {
	gw := gateway(ns, name)
	gw.APIVersion, gw.Kind = v1.GroupVersion.String(), "APIGateway"
	return gw
}

// mustRawObject is the object of an AdmissionReview body.
func mustRawObject(t testing.TB, review []byte) []byte {
	t.Helper()
	r := &admissionv1.AdmissionReview{}
	require.NoError(t, json.Unmarshal(review, r))
	return r.Request.Object.Raw
}
