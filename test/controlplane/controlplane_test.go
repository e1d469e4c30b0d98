package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
)

func TestAPIServerArgs(t *testing.T) {
	p := portNumbers{etcd: 2379, apiServer: 6443}
	for name, tc := range map[string]struct {
		serviceAccounts bool
		overrides       map[string]string
		want, absent    []string
	}{
		"defaults": {
			want: []string{
				"--etcd-servers=http://127.0.0.1:2379", "--secure-port=6443", "--bind-address=127.0.0.1",
				"--token-auth-file=/d/pki/tokens.csv", "--cert-dir=/d/pki", "--authorization-mode=RBAC",
				"--service-account-issuer=https://127.0.0.1:6443", "--disable-admission-plugins=ServiceAccount",
			},
		},
		"a controller makes the default ServiceAccounts": {
			serviceAccounts: true,
			absent:          []string{"--disable-admission-plugins=ServiceAccount"},
		},
		"an override replaces a default and adds a flag": {
			overrides: map[string]string{"service-cluster-ip-range": "10.0.0.0/16", "admission-control-config-file": "/a.yaml"},
			want:      []string{"--service-cluster-ip-range=10.0.0.0/16", "--admission-control-config-file=/a.yaml"},
			absent:    []string{"--service-cluster-ip-range=10.0.0.0/24"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			args := apiServerArgs("/d", p, tc.serviceAccounts, tc.overrides)
			assert.IsNonDecreasing(t, args, "sorted, so a command line reads the same at every start")
			for _, w := range tc.want {
				assert.Contains(t, args, w)
			}
			for _, a := range tc.absent {
				assert.NotContains(t, args, a)
			}
		})
	}
}

func TestServiceAccountsMade(t *testing.T) {
	for controllers, want := range map[string]bool{
		"":                                    false,
		"garbage-collector-controller":        false,
		"deployment,serviceaccount":           true,
		"namespace,serviceaccount-controller": true,
		"*":                                   true,
	} {
		assert.Equal(t, want, serviceAccountsMade(strings.Split(controllers, ",")), controllers)
	}
}

func TestTokens(t *testing.T) {
	users := []User{{Name: Admin, Groups: []string{"system:masters"}}, ServiceAccount("ns", "sa")}
	data, err := formatTokens(users, map[string]string{Admin: "t1", users[1].Name: "t2"})
	require.NoError(t, err)
	assert.Equal(t, "t1,admin,admin,system:masters\n"+
		`t2,system:serviceaccount:ns:sa,system:serviceaccount:ns:sa,"system:serviceaccounts,system:serviceaccounts:ns"`+"\n",
		string(data), "kube-apiserver's --token-auth-file format: the groups quoted as one field")

	for name, tc := range map[string]struct {
		in   string
		want map[string]string
	}{
		"written by formatTokens": {in: string(data), want: map[string]string{Admin: "t1", users[1].Name: "t2"}},
		"written by hack/run.sh":  {in: "a1,admin,admin,system:masters\nb2,op,op,\"g1,g2\"\n", want: map[string]string{Admin: "a1", "op": "b2"}},
		"empty":                   {in: "", want: map[string]string{}},
		"not CSV: made again":     {in: "\"unterminated\n", want: map[string]string{}},
		"a line without a user":   {in: "t1\n", want: map[string]string{}},
	} {
		assert.Equal(t, tc.want, parseTokens([]byte(tc.in)), name)
	}
}

func TestEnsureTokensKeepsTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.csv")
	first, err := ensureTokens(path, []User{{Name: Admin}})
	require.NoError(t, err)
	second, err := ensureTokens(path, []User{{Name: Admin}, {Name: "op"}})
	require.NoError(t, err)
	assert.Equal(t, first[Admin], second[Admin], "a user's token survives a restart")
	assert.Len(t, second["op"], 48, "a new user gets a token")
	assert.NotEqual(t, second[Admin], second["op"])
}

func TestServingCertFresh(t *testing.T) {
	bundle, _, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", nil, []string{"localhost"})
	require.NoError(t, err)
	now := time.Now()
	for name, tc := range map[string]struct {
		bundle []byte
		now    time.Time
		want   bool
	}{
		"new":                        {bundle, now, true},
		"in its last day":            {bundle, now.Add(364 * 24 * time.Hour), false},
		"expired":                    {bundle, now.Add(2 * 365 * 24 * time.Hour), false},
		"not a certificate":          {[]byte("garbage"), now, false},
		"empty (a half-written one)": {nil, now, false},
	} {
		assert.Equal(t, tc.want, servingCertFresh(tc.bundle, tc.now), name)
	}
}

func TestEnsureServingCertKeepsAFreshOne(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key")
	first, err := ensureServingCert(cert, key, time.Now())
	require.NoError(t, err)
	second, err := ensureServingCert(cert, key, time.Now())
	require.NoError(t, err)
	assert.Equal(t, first, second, "kept: clients that trust it keep working")
	third, err := ensureServingCert(cert, key, time.Now().Add(364*24*time.Hour))
	require.NoError(t, err)
	assert.NotEqual(t, first, third, "made again near its end")
}

func TestNamesPathIn(t *testing.T) {
	args := func(a ...string) []byte { return []byte(strings.Join(a, "\x00") + "\x00") }
	for name, tc := range map[string]struct {
		cmdline []byte
		want    bool
	}{
		"a flag's value inside":        {args("etcd", "--data-dir=/x/run/etcd"), true},
		"an argument inside":           {args("tool", "/x/run/kubeconfig"), true},
		"the directory with a slash":   {args("etcd", "--data-dir=/x/run/"), true},
		"a sibling with a longer name": {args("etcd", "--data-dir=/x/runner/etcd"), false},
		"the directory itself":         {args("tool", "/x/run"), false},
		"elsewhere":                    {args("etcd", "--data-dir=/y/etcd"), false},
		"empty (a kernel thread)":      {nil, false},
	} {
		assert.Equal(t, tc.want, namesPathIn(tc.cmdline, "/x/run"), name)
	}
}

func TestStatRunning(t *testing.T) {
	for stat, want := range map[string]bool{
		"42 (etcd) S 1 42":          true,
		"42 (kube-apiserver) R 1":   true,
		"42 (a) Z (b) S 1":          true, // the name holds ") Z (": the state follows the last ')'
		"42 (etcd) Z 1 42":          false,
		"42 (etcd) X 1 42":          false,
		"42 (etcd)":                 false,
		"garbage without a bracket": false,
	} {
		assert.Equal(t, want, statRunning([]byte(stat)), stat)
	}
}

func TestPidFilesLastStartedFirst(t *testing.T) {
	dir := t.TempDir()
	base := time.Now().Add(-time.Hour)
	for i, name := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "apigateway-operator"} {
		path := filepath.Join(dir, name+".pid")
		require.NoError(t, os.WriteFile(path, []byte("1\n"), 0o600))
		require.NoError(t, os.Chtimes(path, base, base.Add(time.Duration(i)*time.Second)))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.pid"), []byte("1\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600))
	files, err := pidFiles(dir)
	require.NoError(t, err)
	var names []string
	for _, f := range files {
		names = append(names, f.name)
	}
	assert.Equal(t, []string{"apigateway-operator", "kube-controller-manager", "kube-apiserver", "etcd"}, names,
		"stopped in the reverse of their start; the lock is no process")
}

func TestEmptyButKeepsTheLock(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, makeLayout(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, lockFile), []byte("1\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, kubeconfigFile), nil, 0o600))
	require.NoError(t, emptyBut(dir, pidsDir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, pidsDir, entries[0].Name())
	assert.FileExists(t, filepath.Join(dir, lockFile))
}

func TestADirectoryHasOneRunAtATime(t *testing.T) {
	dir := t.TempDir()
	first, err := New(Options{Dir: dir})
	require.NoError(t, err)
	_, err = New(Options{Dir: dir})
	require.ErrorIs(t, err, ErrInUse)
	assert.Contains(t, err.Error(), "another run is using "+dir+" (pid "+strconv.Itoa(os.Getpid())+")")
	require.NoError(t, first.Stop(t.Context()))
	second, err := New(Options{Dir: dir})
	require.NoError(t, err, "Stop releases the directory")
	require.NoError(t, second.Stop(t.Context()))
}

func TestTemporaryDirectoryIsRemoved(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	assert.DirExists(t, filepath.Join(c.Dir(), pidsDir))
	require.NoError(t, c.Stop(t.Context()))
	assert.NoDirExists(t, c.Dir())
}

func TestWriteWebhookClientAuth(t *testing.T) {
	dir := t.TempDir()
	a, err := WriteWebhookClientAuth(dir, "127.0.0.1:9443", time.Now())
	require.NoError(t, err)

	pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	caPEM, err := os.ReadFile(a.CA)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	_, err = leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err, "a webhook that trusts the CA for client certificates admits the API server")
	assert.Equal(t, "kube-apiserver", leaf.Subject.CommonName)

	config, err := os.ReadFile(a.Flags["admission-control-config-file"])
	require.NoError(t, err)
	kubeconfig := filepath.Join(dir, "webhook-kubeconfig.yaml")
	assert.Equal(t, 2, strings.Count(string(config), "kubeConfigFile: "+kubeconfig), "both webhook admission plugins")
	kc, err := os.ReadFile(kubeconfig)
	require.NoError(t, err)
	assert.Contains(t, string(kc), `- name: "127.0.0.1:9443"`, "the user is named after the webhooks' host")
	assert.Contains(t, string(kc), "client-certificate: "+a.Cert)
}

// TestAKilledRunIsCleanedUpAndItsDataKept starts a control plane in a kept
// directory, abandons it as a killed run would (its processes run on, its
// lock is gone), and starts another in the same directory: that one stops
// the first one's processes, finds its data, and leaves nothing running
// when it stops.
func TestAKilledRunIsCleanedUpAndItsDataKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	var logged []string
	opts := Options{
		BinDir:       binDir(t),
		Dir:          dir,
		StartTimeout: 2 * time.Minute,
		Log:          func(msg string) { logged = append(logged, msg) },
	}
	first := start(t, opts)
	abandoned := first.Processes()
	require.Len(t, abandoned, 2)
	// The safety net of a failed test: nothing it started may outlive it.
	t.Cleanup(func() {
		for _, p := range abandoned {
			if recordedHere(p.Pid(), dir) {
				_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
			}
		}
	})
	cs := clientset(t, first)
	_, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(),
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// What SIGKILL leaves: the processes run on, the kernel drops the lock.
	require.NoError(t, first.lock.Close())
	first.lock, first.procs = nil, nil

	logged = nil
	second := start(t, opts)
	for _, p := range abandoned {
		assert.False(t, Running(p.Pid()), "%s of the killed run still runs", p.Name())
		assert.Contains(t, logged, "Stopping "+p.Name()+" ("+"pid "+strconv.Itoa(p.Pid())+") left over from an earlier run")
	}
	_, err = clientset(t, second).CoreV1().ConfigMaps("default").Get(t.Context(), "kept", metav1.GetOptions{})
	require.NoError(t, err, "etcd's data survived")

	procs := second.Processes()
	require.NoError(t, second.Stop(t.Context()))
	for _, p := range procs {
		assert.False(t, recordedHere(p.Pid(), dir), "%s outlived Stop", p.Name())
	}
	files, err := pidFiles(filepath.Join(dir, pidsDir))
	require.NoError(t, err)
	assert.Empty(t, files, "Stop removes the pid files")
	assert.NoFileExists(t, filepath.Join(dir, lockFile))
}

func start(t *testing.T, opts Options) *ControlPlane {
	t.Helper()
	c, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	require.NoError(t, c.Start(t.Context()))
	return c
}

func clientset(t *testing.T, c *ControlPlane) *kubernetes.Clientset {
	t.Helper()
	cfg, err := c.Config(Admin)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cs
}

// binDir is KUBEBUILDER_ASSETS, or bin/k8s of this repository.
func binDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		wd, err := os.Getwd()
		require.NoError(t, err)
		dir = filepath.Join(wd, "..", "..", "bin", "k8s")
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		_, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err, "run `make k8s`")
	}
	return dir
}

// shell is a Command running script in sh, ready once it has run
// `touch "$READY"` (after setting its traps).
func shell(t *testing.T, name, script string) Command {
	t.Helper()
	ready := filepath.Join(t.TempDir(), name+".ready")
	return Command{
		Name: name,
		Path: "/bin/sh",
		Args: []string{"-c", script, name, ready},
		Ready: func(context.Context) error {
			_, err := os.Stat(ready)
			return err
		},
	}
}

func TestStopStopsTheLastStartedFirst(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	order := filepath.Join(t.TempDir(), "order")
	names := []string{"etcd", "kube-apiserver", "apigateway-operator"}
	var pids []int
	for _, name := range names {
		// $0 is the name, $1 the ready file.
		p, err := c.Run(t.Context(), shell(t, name,
			`trap 'echo "$0" >>`+order+`; exit 0' TERM; touch "$1"; while :; do sleep 0.05; done`))
		require.NoError(t, err)
		assert.FileExists(t, filepath.Join(c.Dir(), pidsDir, name+".pid"))
		pids = append(pids, p.Pid())
	}
	require.NoError(t, c.Stop(t.Context()))
	got, err := os.ReadFile(order)
	require.NoError(t, err)
	assert.Equal(t, "apigateway-operator\nkube-apiserver\netcd\n", string(got), "each stopped after the one started after it")
	for _, pid := range pids {
		assert.False(t, Running(pid))
	}
}

func TestStopKillsWhatDoesNotStop(t *testing.T) {
	ignoreTerm := `trap '' TERM; touch "$1"; while :; do sleep 0.05; done`
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	for name, tc := range map[string]struct {
		ctx         context.Context
		stopTimeout time.Duration
		want        string
	}{
		"after StopTimeout":                            {ctx: t.Context(), stopTimeout: 100 * time.Millisecond, want: "did not stop within 100ms: killed it"},
		"at once when told to hurry (a second Ctrl-C)": {ctx: cancelled, stopTimeout: time.Hour, want: "was told to hurry: killed it"},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := New(Options{StopTimeout: tc.stopTimeout})
			require.NoError(t, err)
			p, err := c.Run(t.Context(), shell(t, "stubborn", ignoreTerm))
			require.NoError(t, err)
			err = c.Stop(tc.ctx)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "stubborn (pid "+strconv.Itoa(p.Pid())+") "+tc.want)
			assert.False(t, Running(p.Pid()))
		})
	}
}

func TestRunReportsAnEarlyExitWithItsLog(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop(context.Background())) })
	_, err = c.Run(t.Context(), shell(t, "broken", `echo "bad flag: --nope"; exit 3`))
	var pe *ProcessError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "exited while starting (exit status 3)", pe.What)
	assert.Contains(t, err.Error(), "--- last lines of "+filepath.Join(c.Dir(), logsDir, "broken.log")+":\nbad flag: --nope")
	assert.Empty(t, c.Processes(), "a process that did not start is not stopped again")
	assert.NoFileExists(t, filepath.Join(c.Dir(), pidsDir, "broken.pid"))
}

func TestRestartKeepsItsPlaceAndContinuesItsLog(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop(context.Background())) })
	// $0 is the name, $1 the ready file, written once the line is logged.
	script := `trap 'exit 0' TERM; echo "started $$"; touch "$1"; while :; do sleep 0.05; done`
	var procs []*Process
	for _, name := range []string{"etcd", "kube-apiserver", "apigateway-operator"} {
		p, err := c.Run(t.Context(), shell(t, name, script))
		require.NoError(t, err)
		procs = append(procs, p)
	}
	old := procs[1]
	// So that the restarted process is ready only once it has logged.
	require.NoError(t, os.Remove(old.command.Args[3]))

	require.NoError(t, c.restart(t.Context(), old))
	got := c.Processes()
	require.Len(t, got, 3)
	assert.Equal(t, []*Process{procs[0], got[1], procs[2]}, got, "the others untouched")
	assert.Equal(t, "kube-apiserver", got[1].Name(), "in the first one's place")
	assert.False(t, Running(old.Pid()))
	assert.True(t, Running(got[1].Pid()))
	log, err := os.ReadFile(got[1].Log())
	require.NoError(t, err)
	// (sh may report its sleep's SIGTERM in between.)
	assert.True(t, strings.HasPrefix(string(log), fmt.Sprintf("started %d\n", old.Pid())), "the first run's log is kept:\n%s", log)
	assert.True(t, strings.HasSuffix(string(log), fmt.Sprintf("started %d\n", got[1].Pid())), "the second run's follows:\n%s", log)
	pid, err := os.ReadFile(filepath.Join(c.Dir(), pidsDir, "kube-apiserver.pid"))
	require.NoError(t, err)
	assert.Equal(t, strconv.Itoa(got[1].Pid())+"\n", string(pid))
}

func TestStopProcessForgetsIt(t *testing.T) {
	c, err := New(Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Stop(context.Background())) })
	script := `trap 'exit 0' TERM; touch "$1"; while :; do sleep 0.05; done`
	kept, err := c.Run(t.Context(), shell(t, "kube-apiserver", script))
	require.NoError(t, err)
	stopped, err := c.Run(t.Context(), shell(t, controllerManager, script))
	require.NoError(t, err)
	_, err = c.StartControllers(t.Context(), []string{"garbagecollector"})
	require.ErrorContains(t, err, "kube-controller-manager already runs")

	require.NoError(t, c.StopProcess(t.Context(), stopped))
	assert.Equal(t, []*Process{kept}, c.Processes())
	assert.False(t, Running(stopped.Pid()))
	assert.NoFileExists(t, filepath.Join(c.Dir(), pidsDir, controllerManager+".pid"))
}
