package faults

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/charts"
	"example.com/apigateway-operator/test/controlplane"
	"example.com/apigateway-operator/test/ports"
	"example.com/apigateway-operator/test/testenv"
)

const (
	// waitFor bounds every wait for the operator or the control plane.
	waitFor = 2 * time.Minute
	tick    = 100 * time.Millisecond
	image   = "nginx:1.27"
	// operatorNS holds the operator's Lease, Secret and namespaced RBAC.
	operatorNS = "apigateway-operator-system"
	// replicasGroup is the group of the replicas' users, bound to the
	// operator's roles as manifests/rbac binds its ServiceAccount.
	replicasGroup = "apigateway-operator-replicas"
)

// The replicas' users: one identity each, so the audit log tells their
// writes apart (in a cluster, the pod name in the token's extra does).
var replicas = []string{"apigateway-operator-a", "apigateway-operator-b"}

// leaseDuration is the replicas' --leader-elect-lease-duration.
const leaseDuration = 8 * time.Second

// Leader election timings of the replicas: shorter than the defaults
// (15 s, 10 s, 2 s) to keep the tests short, with the same shape.
var leaderArgs = []string{
	"--leader-elect",
	"--leader-election-namespace=" + operatorNS,
	"--leader-elect-lease-duration=" + leaseDuration.String(),
	"--leader-elect-renew-deadline=6s",
	"--leader-elect-retry-period=1s",
}

var (
	root string
	// operatorBin is the operator as `make build` builds it;
	// faultBin the same with -tags faultinject (its clock can be skewed).
	operatorBin, faultBin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if root, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "faults-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	operatorBin, faultBin = filepath.Join(dir, "apigateway-operator"), filepath.Join(dir, "apigateway-operator-faultinject")
	// Both at once: they share every package but main.
	errs := make(chan error, 2)
	for out, tags := range map[string]string{operatorBin: "", faultBin: "faultinject"} {
		go func() {
			build := exec.Command("go", "build", "-tags="+tags, "-o", out, "./cmd/apigateway-operator")
			build.Dir = root
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("building the operator (tags %q): %w\n%s", tags, err, out)
				return
			}
			errs <- nil
		}()
	}
	if err := errors.Join(<-errs, <-errs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// cluster is a control plane of one test with manifests/local installed.
type cluster struct {
	cp     *controlplane.ControlPlane
	cfg    *rest.Config
	client client.Client
	dir    string
	// auditLog is the API server's audit log, when asked for.
	auditLog string
	// webhookPort is where the installed webhook configurations point.
	webhookPort int
	// chart is what clusterOptions.watchNamespaces installed.
	chart []*unstructured.Unstructured
}

type clusterOptions struct {
	// audit records the replicas' requests of these verbs in auditLog.
	audit []string
	// apiServerFlags add kube-apiserver flags.
	apiServerFlags map[string]string
	// watchNamespaces, when set, installs the chart in namespaced mode
	// for them (they are created first) instead of manifests/local, and
	// the operator runs as its ServiceAccount (operatorUser), which the
	// chart's RBAC binds, instead of as the replicas.
	watchNamespaces []string
}

// writeVerbs are the verbs of every write.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection"}

// auditPolicy records the replicas' requests of some verbs at Metadata
// level: who, what, when, and the answer's code.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  users: [%s]
  verbs: [%s]
- level: None
`

// startCluster starts a control plane for the test, installs
// manifests/local with the webhooks at a port it picks (webhookPort) and
// lets the replicas' users do what the operator's ServiceAccount may.
func startCluster(t *testing.T, opts clusterOptions) *cluster {
	t.Helper()
	binDir := os.Getenv("KUBEBUILDER_ASSETS")
	if binDir == "" {
		binDir = filepath.Join(root, "bin", "k8s")
	}
	c := &cluster{dir: t.TempDir()}
	flags := maps.Clone(opts.apiServerFlags)
	if flags == nil {
		flags = map[string]string{}
	}
	users := []controlplane.User{controlplane.ServiceAccount(operatorNS, operatorSA)}
	if len(opts.watchNamespaces) == 0 {
		users = nil
		for _, r := range replicas {
			users = append(users, controlplane.User{Name: r, Groups: []string{replicasGroup}})
		}
	}
	if len(opts.audit) > 0 {
		var names []string
		for _, u := range users {
			names = append(names, `"`+u.Name+`"`)
		}
		policy := filepath.Join(c.dir, "audit-policy.yaml")
		require.NoError(t, os.WriteFile(policy, []byte(fmt.Sprintf(auditPolicy, strings.Join(names, ", "), strings.Join(opts.audit, ", "))), 0o600))
		c.auditLog = filepath.Join(c.dir, "audit.log")
		maps.Copy(flags, map[string]string{"audit-policy-file": policy, "audit-log-path": c.auditLog, "audit-log-format": "json"})
	}
	cp, err := controlplane.New(controlplane.Options{
		BinDir: binDir, APIServerFlags: flags, Users: users,
		// A replica drains for up to --graceful-shutdown-timeout (5 s).
		StartTimeout: waitFor, StopTimeout: 15 * time.Second,
	})
	require.NoError(t, err)
	c.cp = cp
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
		if err := cp.Stop(context.Background()); err != nil {
			t.Log(err)
		}
	})
	start := time.Now()
	require.NoError(t, cp.Start(t.Context()))
	c.webhookPort = ports.For(t)
	c.cfg, err = cp.Config(controlplane.Admin)
	require.NoError(t, err)
	c.cfg.QPS, c.cfg.Burst = 200, 400
	c.client, err = client.New(c.cfg, client.Options{Scheme: testenv.NewScheme()})
	require.NoError(t, err)
	if len(opts.watchNamespaces) > 0 {
		c.installNamespaced(t, opts.watchNamespaces)
		t.Logf("control plane up and the chart installed (watchNamespaces %v) in %s", opts.watchNamespaces, time.Since(start).Round(time.Millisecond))
		return c
	}
	out, err := cp.InstallLocal(t.Context(), root, c.webhookURL())
	require.NoError(t, err, "%s", out)
	c.bindReplicas(t)
	t.Logf("control plane up and manifests/local installed in %s", time.Since(start).Round(time.Millisecond))
	return c
}

func (c *cluster) webhookURL() string { return "https://127.0.0.1:" + strconv.Itoa(c.webhookPort) }

// installNamespaced creates the release's namespace and watched, and
// installs the chart into the first with watchNamespaces set to the
// others, as a platform team would (docs/platform.md): its webhooks then
// point at webhookPort.
func (c *cluster) installNamespaced(t *testing.T, watched []string) {
	t.Helper()
	for _, ns := range append([]string{operatorNS}, watched...) {
		require.NoError(t, c.client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	helm, err := testenv.HelmBin(root)
	require.NoError(t, err)
	objs, out, err := c.cp.InstallChart(t.Context(), controlplane.Chart{
		Helm: helm, Dir: filepath.Join(root, charts.Dir), Namespace: operatorNS,
		Set: []string{"watchNamespaces={" + strings.Join(watched, ",") + "}"},
	}, c.webhookURL())
	require.NoError(t, err, "%s", out)
	c.chart = objs
}

// managerArgs are the arguments the installed chart's Deployment gives
// the operator.
func (c *cluster) managerArgs(t *testing.T) []string {
	t.Helper()
	for _, o := range c.chart {
		if o.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		require.NoError(t, err)
		for _, ct := range containers {
			if m := ct.(map[string]any); m["name"] == "manager" {
				args, _, err := unstructured.NestedStringSlice(m, "args")
				require.NoError(t, err)
				return args
			}
		}
	}
	require.FailNow(t, "the chart installed no Deployment with a manager container")
	return nil
}

// bindReplicas binds the operator's roles to the replicas' group, beside
// manifests/rbac's bindings to its ServiceAccount.
func (c *cluster) bindReplicas(t *testing.T) {
	t.Helper()
	subjects := []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: replicasGroup}}
	meta := metav1.ObjectMeta{Name: replicasGroup}
	require.NoError(t, c.client.Create(t.Context(), &rbacv1.ClusterRoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "apigateway-operator"}}))
	meta.Namespace = operatorNS
	require.NoError(t, c.client.Create(t.Context(), &rbacv1.RoleBinding{ObjectMeta: meta, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "apigateway-operator"}}))
	c.policiesTrustReplicas(t)
}

// operatorUser is the operator's ServiceAccount as the admission policies
// of manifests/policy name it.
const operatorUser = "system:serviceaccount:" + operatorNS + ":" + operatorSA

// operatorSA is the operator's ServiceAccount, in operatorNS.
const operatorSA = "apigateway-operator"

// policiesTrustReplicas lets the replicas' group pass the admission
// policies that name the operator's ServiceAccount (who may write
// status.claims, and the bounds on what the operator writes) as the
// ServiceAccount does: the replicas need identities of their own, which
// the audit log tells apart.
func (c *cluster) policiesTrustReplicas(t *testing.T) {
	t.Helper()
	replicasIn := "'" + replicasGroup + "' in request.userInfo.groups"
	is := "request.userInfo.username == '" + operatorUser + "'"
	isNot := "request.userInfo.username != '" + operatorUser + "'"
	list := &admissionregistrationv1.ValidatingAdmissionPolicyList{}
	require.NoError(t, c.client.List(t.Context(), list))
	changed := 0
	for i := range list.Items {
		p := &list.Items[i]
		for j := range p.Spec.MatchConditions {
			e := &p.Spec.MatchConditions[j].Expression
			before := *e
			*e = strings.ReplaceAll(*e, is, "("+is+" || "+replicasIn+")")
			*e = strings.ReplaceAll(*e, isNot, "("+isNot+" && !("+replicasIn+"))")
			if *e != before {
				changed++
			}
		}
		require.NoError(t, c.client.Update(t.Context(), p))
	}
	require.Equal(t, 4, changed, "the policies that name the operator's ServiceAccount (manifests/policy/operator.yaml, hosts.yaml)")
}

// logTails prints the end of every log of the control plane's processes.
func (c *cluster) logTails(t *testing.T) {
	for _, p := range c.cp.Processes() {
		data, err := os.ReadFile(p.Log())
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		t.Logf("--- %s (last lines):\n%s", p.Name(), strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
}

// operator is one running replica.
type operator struct {
	*controlplane.Process
	user        string
	webhookPort int
}

type operatorOptions struct {
	// user is one of replicas.
	user string
	// bin is operatorBin unless set.
	bin string
	// server is the API server's URL as the replica reaches it (a
	// proxy's); the API server's own when empty.
	server string
	// webhookPort is the replica's; a reserved one when 0.
	webhookPort int
	env         []string
	args        []string
}

// startOperator runs a replica, as its user, until it is ready (its
// webhook server serves a certificate the bundles trust); the control
// plane stops it first when the test ends.
func (c *cluster) startOperator(t *testing.T, o operatorOptions) *operator {
	t.Helper()
	if o.bin == "" {
		o.bin = operatorBin
	}
	kubeconfig := filepath.Join(c.dir, o.user+".kubeconfig")
	require.NoError(t, c.cp.WriteKubeconfig(kubeconfig, o.user))
	if o.server != "" {
		cfg, err := clientcmd.LoadFromFile(kubeconfig)
		require.NoError(t, err)
		for _, cl := range cfg.Clusters {
			cl.Server = o.server
		}
		require.NoError(t, clientcmd.WriteToFile(*cfg, kubeconfig))
	}
	probePort, metricsPort := ports.For(t), ports.For(t)
	if o.webhookPort == 0 {
		o.webhookPort = ports.For(t)
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--webhook-port=" + strconv.Itoa(o.webhookPort),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probePort),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort),
		"--cert-mode=self-signed",
		"--cert-extra-hosts=127.0.0.1,localhost",
		"--cert-secret-namespace=" + operatorNS,
		"--default-gateway-image=" + image,
		"--graceful-shutdown-timeout=5s",
		"--zap-encoder=console",
		"--zap-log-level=info",
	}, o.args...)
	start := time.Now()
	p, err := c.cp.Run(t.Context(), controlplane.Command{
		Name:  o.user,
		Path:  o.bin,
		Args:  args,
		Env:   o.env,
		Ready: controlplane.ReadyWhenOK(fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort)),
	})
	require.NoError(t, err)
	t.Logf("%s ready in %s (pid %d)", o.user, time.Since(start).Round(time.Millisecond), p.Pid())
	return &operator{Process: p, user: o.user, webhookPort: o.webhookPort}
}

// log is what the replica has written so far.
func (o *operator) log(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(o.Log())
	require.NoError(t, err)
	return string(data)
}

// awaitLeading waits until the replica has logged that it holds the
// lease.
func (o *operator) awaitLeading(t *testing.T) {
	t.Helper()
	const leads = "Successfully acquired lease"
	require.Eventually(t, func() bool { return strings.Contains(o.log(t), leads) }, waitFor, tick, "%s never logged %q", o.user, leads)
}

// awaitExit waits until the replica has exited and returns how.
func (o *operator) awaitExit(t *testing.T) error {
	t.Helper()
	select {
	case <-o.Done():
		return o.Err()
	case <-time.After(waitFor):
		t.Fatalf("%s still runs after %s", o.user, waitFor)
		return nil
	}
}

// gateway is a complete gateway with one route per path, on a host of its
// own.
func gateway(ns, name string, replicas int32, paths ...string) *v1.APIGateway {
	gw := &v1.APIGateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.APIGatewaySpec{Image: image, Replicas: ptr.To(replicas)},
	}
	for _, p := range paths {
		gw.Spec.Routes = append(gw.Spec.Routes, v1.Route{Host: v1.Hostname(name + "." + ns + ".example.com"), Path: v1.HTTPPath(p), PathType: v1.PathTypePrefix,
			BackendService: v1.BackendService{Name: "backend", Port: 8080}})
	}
	return gw
}

// createGateways creates n gateways named prefix-0, prefix-1, ... in ns,
// each with a route of its own, and returns their keys.
func (c *cluster) createGateways(t *testing.T, ns, prefix string, n int) []client.ObjectKey {
	t.Helper()
	keys := make([]client.ObjectKey, 0, n)
	for i := range n {
		gw := gateway(ns, fmt.Sprintf("%s-%d", prefix, i), 1, "/api/")
		require.NoError(t, c.client.Create(t.Context(), gw))
		keys = append(keys, client.ObjectKeyFromObject(gw))
	}
	return keys
}

// converged says how gw, as the API server has it now, differs from what a
// user expects of a reconciled gateway: status for its generation, a
// Deployment with its replicas, a ConfigMap and an Ingress with its routes,
// a Service; nil when it does not.
func (c *cluster) converged(ctx context.Context, key client.ObjectKey) error {
	gw := &v1.APIGateway{}
	if err := c.client.Get(ctx, key, gw); err != nil {
		return err
	}
	if gw.Status.ObservedGeneration != gw.Generation {
		return fmt.Errorf("%s: status for generation %d, spec at %d", key, gw.Status.ObservedGeneration, gw.Generation)
	}
	ch, err := testenv.GetChildren(ctx, c.client, key)
	if err != nil {
		return err
	}
	if got, want := ptr.Deref(ch.Deployment.Spec.Replicas, 1), ptr.Deref(gw.Spec.Replicas, 1); got != want {
		return fmt.Errorf("%s: Deployment has %d replicas, spec %d", key, got, want)
	}
	var paths []string
	for _, rule := range ch.Ingress.Spec.Rules {
		for _, p := range rule.HTTP.Paths {
			paths = append(paths, p.Path)
		}
	}
	config := strings.Join(slices.Collect(maps.Values(ch.ConfigMap.Data)), "\n")
	for _, r := range gw.Spec.Routes {
		want := strings.TrimSuffix(string(r.Path), "/")
		if want == "" {
			want = "/"
		}
		if !slices.Contains(paths, want) {
			return fmt.Errorf("%s: Ingress paths %v lack %q", key, paths, want)
		}
		if !strings.Contains(config, string(r.Path)) {
			return fmt.Errorf("%s: ConfigMap lacks the route %q", key, r.Path)
		}
	}
	return nil
}

// awaitConverged waits until every gateway of keys has converged.
func (c *cluster) awaitConverged(t *testing.T, keys []client.ObjectKey) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		for _, k := range keys {
			assert.NoError(ct, c.converged(t.Context(), k))
		}
	}, waitFor, 250*time.Millisecond, "the gateways did not converge")
}
