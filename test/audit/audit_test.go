// Package audit tests the audit trail of admission: the kube-apiserver
// runs with an audit policy and log file, and the tests read the events
// it writes for the writes they make.
package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/test/operatortest"
	"example.com/apigateway-operator/test/testenv"
	"example.com/apigateway-operator/webhooks"
)

var (
	env      *testenv.Env
	auditLog string
)

// auditPolicy records APIGateway writes at Metadata level, which carries
// the admission webhooks' audit annotations.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources:
  - group: example.com
    resources: [apigateways]
- level: None
`

// The webhooks alone, without the defaults policy: a cluster whose API
// server has no MutatingAdmissionPolicy, where the mutating webhook
// defaults.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.Options{
		Webhooks: envtest.WebhookInstallOptions{Paths: []string{"../../manifests/webhook"}, IgnoreSchemeConvertible: true},
		APIServer: func(dir string) (map[string]string, error) {
			policy := filepath.Join(dir, "audit-policy.yaml")
			auditLog = filepath.Join(dir, "audit.log")
			return map[string]string{"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json"},
				os.WriteFile(policy, []byte(auditPolicy), 0o600)
		},
	})
}

const flagImage = "registry.example.com/audit-gateway:1.0"

// TestAdmissionAuditAnnotations writes gateways that need defaults (the
// image from the flag, then from the namespace), one through v1alpha1, and
// one on a host another namespace owns, and finds in the API server's
// audit log what admission did to each: the defaults and where the image
// came from, the request's version, the rules that denied and the holder
// (the audit log is the admins': it names the holder).
func TestAdmissionAuditAnnotations(t *testing.T) {
	operatortest.Start(t, env, operatortest.Options{Webhooks: &webhooks.Options{DefaultImage: flagImage, DefaultReplicas: 2}})
	ctx := t.Context()
	annotated := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "audit-",
		Annotations: map[string]string{v1.DefaultImageAnnotation: "registry.example.com/team-gateway:2.0"}}}
	require.NoError(t, env.Client.Create(ctx, annotated))
	plain := testenv.NewNamespace(t, env.Client, "audit")

	fromFlag := gateway(plain, "from-flag", "Flag.Audit.Example.com", nil)
	require.NoError(t, env.Client.Create(ctx, fromFlag))
	fromNamespace := gateway(annotated.Name, "from-namespace", "ns.audit.example.com", ptr.To[int32](3))
	require.NoError(t, env.Client.Create(ctx, fromNamespace))
	conflicting := gateway(annotated.Name, "conflicting", "flag.audit.example.com", ptr.To[int32](3))
	conflicting.Spec.Image = "nginx:1.27"
	require.Error(t, env.Client.Create(ctx, conflicting), "a host another namespace owns")
	legacy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1alpha1", "kind": "APIGateway",
		"metadata": map[string]any{"name": "legacy", "namespace": plain},
		"spec": map[string]any{"image": "nginx:1.27", "replicas": int64(2), "routes": []any{map[string]any{
			"host": "legacy.audit.example.com", "serviceName": "svc", "servicePort": int64(80)}}},
	}}
	require.NoError(t, env.Client.Create(ctx, legacy))

	mutating, validating := "mapigateway-v1.example.com/", "vapigateway-v1.example.com/"
	assertAudit(t, plain, "from-flag", map[string]string{
		mutating + webhooks.AuditDefaults:         "image,replicas,host",
		mutating + webhooks.AuditImageSource:      "operator-flag",
		mutating + webhooks.AuditRequestVersion:   "v1",
		validating + webhooks.AuditRequestVersion: "v1",
	})
	assertAudit(t, annotated.Name, "from-namespace", map[string]string{
		mutating + webhooks.AuditDefaults:    "image",
		mutating + webhooks.AuditImageSource: "namespace-annotation",
	})
	assertAudit(t, plain, "legacy", map[string]string{
		validating + webhooks.AuditRequestVersion: "v1alpha1",
	})
	assertAudit(t, annotated.Name, "conflicting", map[string]string{
		validating + webhooks.AuditDeniedRules:     "hostOwned",
		validating + webhooks.AuditConflictHolders: plain + "/from-flag",
	})
}

func gateway(ns, name, host string, replicas *int32) *v1.APIGateway {
	return &v1.APIGateway{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.APIGatewaySpec{
		Replicas: replicas,
		Routes:   []v1.Route{{Host: v1.Hostname(host), BackendService: v1.BackendService{Name: "svc", Port: 80}}},
	}}
}

// auditEvent is what the test reads of an audit event.
type auditEvent struct {
	Verb      string `json:"verb"`
	Stage     string `json:"stage"`
	ObjectRef struct {
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"objectRef"`
	Annotations map[string]string `json:"annotations"`
}

// assertAudit waits (bounded) for the ResponseComplete event of the create
// of namespace/name in the audit log and checks its annotations hold want.
func assertAudit(t *testing.T, namespace, name string, want map[string]string) {
	t.Helper()
	var got map[string]string
	require.Eventually(t, func() bool {
		got = findCreate(t, namespace, name)
		return got != nil
	}, 30*time.Second, 100*time.Millisecond, "no audit event for the create of %s/%s", namespace, name)
	for k, v := range want {
		assert.Equal(t, v, got[k], "%s/%s: audit annotation %s (all: %v)", namespace, name, k, got)
	}
}

func findCreate(t *testing.T, namespace, name string) map[string]string {
	f, err := os.Open(auditLog)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if !strings.Contains(line, `"`+name+`"`) {
			continue
		}
		var e auditEvent
		require.NoError(t, json.Unmarshal([]byte(line), &e))
		if e.Verb == "create" && e.Stage == "ResponseComplete" && e.ObjectRef.Namespace == namespace && e.ObjectRef.Name == name {
			return e.Annotations
		}
	}
	require.NoError(t, scanner.Err())
	return nil
}
