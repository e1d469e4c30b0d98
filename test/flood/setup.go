package flood

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
)

// Image is the gateway image the operator defaults to here.
const Image = "nginx:1.27"

// EnvOptions are the options of a control plane to flood: the webhook
// configurations and the admission policies the manifests install, and an
// API server that presents a client certificate to the admission webhooks
// (as make run's does and the README tells cluster admins to), whose CA
// file it writes to *clientCA.
func EnvOptions(clientCA *string) (testenv.Options, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return testenv.Options{}, err
	}
	return testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{filepath.Join(root, "manifests", "webhook")}, IgnoreSchemeConvertible: true},
		APIServer: func(dir string) (map[string]string, error) {
			a, err := controlplane.WriteWebhookClientAuth(dir, "*", time.Now())
			*clientCA = a.CA
			return a.Flags, err
		},
		Policies: defaults.Operator{Image: Image, Replicas: 1}.PolicyData(),
	}, nil
}

// GoMemLimit is the manifest's: its 512 MiB memory limit, so the in-flight
// budget is 128 MiB.
const GoMemLimit = "GOMEMLIMIT=536870912"

// StartOperatorFor runs binary for env (made with EnvOptions): serving the
// webhooks where env's configurations point, in files certificate mode,
// with client authentication against clientCA and the manifest's memory
// limit, its log in logFile. It returns the process and its webhook
// address. Its probe port is reserved (test/ports) until it exits, so no
// other process can take it first.
func StartOperatorFor(ctx context.Context, env *testenv.Env, binary, clientCA, logFile string) (*Operator, string, error) {
	port, err := ports.Reserve()
	if err != nil {
		return nil, "", err
	}
	probe := port.Addr()
	w := env.Webhooks
	args := []string{
		"--kubeconfig=" + env.Kubeconfig,
		"--cert-mode=files", "--cert-dir=" + w.LocalServingCertDir,
		"--cert-mutating-webhook-configuration=", "--cert-validating-webhook-configuration=", "--cert-crd=",
		"--webhook-port=" + strconv.Itoa(w.LocalServingPort), "--webhook-client-ca=" + clientCA,
		"--metrics-bind-address=0", "--health-probe-bind-address=" + probe,
		"--default-gateway-image=" + Image, "--policy-params=",
	}
	op, err := StartOperator(ctx, binary, args, []string{GoMemLimit}, logFile, "http://"+probe+"/readyz")
	if err != nil {
		return nil, "", errors.Join(err, port.Release())
	}
	go func() {
		<-op.Done()
		_ = port.Release()
	}()
	return op, net.JoinHostPort(w.LocalServingHost, strconv.Itoa(w.LocalServingPort)), nil
}

// WaitWebhooksAnswer waits (up to a minute) until the API server calls
// the validating webhook: a dry-run create of a route on path, which a
// gateway in ns serves, is refused.
func WaitWebhooksAnswer(ctx context.Context, c client.Client, ns, path string) error {
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Create(ctx, Gateway(ns, "probe", path), client.DryRunAll)
		return apierrors.IsInvalid(err), nil
	})
}

// Gateway is a complete gateway with one route on api.example.com.
func Gateway(ns, name, path string) *v1.APIGateway {
	return &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.APIGatewaySpec{Image: Image, Replicas: ptr.To[int32](2), Routes: []v1.Route{{
			Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "svc", Port: 80},
		}}},
	}
}
