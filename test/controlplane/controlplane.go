// Package controlplane starts and stops a local Kubernetes control plane:
// etcd, kube-apiserver and, when asked, kube-controller-manager, from the
// binaries `make k8s` builds into bin/k8s. It also runs further processes
// beside them (the operator binary, for `make run`) and stops those first.
// The tests' harness (test/testenv) and `make run` (hack/run) both start
// their control plane with it.
//
// Everything lives in one directory, temporary (removed by Stop) or kept
// between runs:
//
//	etcd/            etcd's data
//	pki/             the API server's serving certificate, the service
//	                 account signing key, the users' bearer tokens
//	logs/<name>.log  each component's output
//	pids/<name>.pid  each running process; pids/run.pid is the lock
//	kubeconfig       the administrator's kubeconfig
//	node/            the node's files (Options.Node), emptied at each start
//
// A kept directory is locked while a control plane runs in it. A run that
// was killed before it could stop its processes leaves their pid files
// behind; the next New stops those processes before anything starts.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"example.com/apigateway-operator/test/ports"
)

// Admin is the user in system:masters every control plane has.
const Admin = "admin"

// The components' names, which are also their binaries', pid files' and
// logs'.
const (
	apiServer         = "kube-apiserver"
	controllerManager = "kube-controller-manager"
)

// Default bounds of Options.StartTimeout and Options.StopTimeout.
const (
	DefaultStartTimeout = time.Minute
	DefaultStopTimeout  = 20 * time.Second
)

// Options say what to start and where.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	BinDir string
	// Dir keeps the data, certificates, tokens, logs and pid files between
	// runs. Empty means a temporary directory, which Stop removes.
	Dir string
	// Fresh empties Dir first: the control plane starts with an empty
	// cluster.
	Fresh bool
	// EtcdPort and APIServerPort are ports on 127.0.0.1; 0 reserves one
	// (test/ports) until Stop, which no other process can take meanwhile,
	// not even between a restart's stop and start.
	EtcdPort, APIServerPort int
	// APIServerFlags add kube-apiserver flags or replace the launcher's
	// (see apiServerArgs), by name without the leading dashes.
	APIServerFlags map[string]string
	// Controllers are the kube-controller-manager controllers to run, by
	// their --controllers names; none means no kube-controller-manager.
	Controllers []string
	// WebhookClientHost, when set, makes the API server present a client
	// certificate to the admission webhooks at this host ("127.0.0.1:9443"
	// as their URLs name it, or "*" for any): see WriteWebhookClientAuth
	// and ControlPlane.WebhookClientAuth. Options.APIServerFlags may still
	// replace its flag.
	WebhookClientHost string
	// Users authenticate with bearer tokens besides Admin; RBAC decides
	// what they may do. Their tokens are kept in Dir between runs.
	Users []User
	// StartTimeout bounds each component's start (DefaultStartTimeout when
	// zero); StopTimeout bounds the wait after SIGTERM, before SIGKILL
	// (DefaultStopTimeout when zero).
	StartTimeout, StopTimeout time.Duration
	// Node, when set, starts a node too (see NodeOptions): the process
	// must run in the namespaces EnterNodeNamespaces makes. The node
	// lifecycle controller runs then, whatever Controllers say (it lifts
	// the taint a kubelet registers its Node with); Deployments need the
	// "deployment-controller" and "replicaset-controller" Controllers
	// besides.
	Node *NodeOptions
	// Log, when set, is told each step ("Starting etcd on ...").
	Log func(msg string)
}

// User is an identity the API server knows by a bearer token.
type User struct {
	Name   string
	Groups []string
}

// ServiceAccount is the user a ServiceAccount's token authenticates as, so
// that RBAC bindings to the ServiceAccount apply to it.
func ServiceAccount(namespace, name string) User {
	return User{
		Name:   "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace},
	}
}

// ControlPlane is a control plane's directory, and its processes once
// started.
type ControlPlane struct {
	opts  Options
	dir   string
	temp  bool
	lock  *os.File
	ports portNumbers
	// reserved are the ports reserved for the components, released by
	// Stop once they have stopped.
	reserved []*ports.Port
	// ca is the bundle that verifies the API server's serving certificate.
	ca     []byte
	tokens map[string]string
	// webhookClientAuth is what Options.WebhookClientHost wrote.
	webhookClientAuth WebhookClientAuth
	// procs are the running processes in the order they started.
	procs []*Process
	// node is what the node of Options.Node set up, for Stop to undo.
	node *node
}

// New takes the directory: it creates it, locks it when it is kept, stops
// what a killed run left running in it and, with Options.Fresh, empties it.
// Nothing is started yet.
func New(opts Options) (*ControlPlane, error) {
	if opts.StartTimeout == 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	c := &ControlPlane{opts: opts, dir: opts.Dir}
	if c.dir == "" {
		dir, err := os.MkdirTemp("", "controlplane-")
		if err != nil {
			return nil, err
		}
		c.dir, c.temp = dir, true
	} else if err := c.take(); err != nil {
		return nil, err
	}
	if err := makeLayout(c.dir); err != nil {
		return nil, errors.Join(err, c.release())
	}
	return c, nil
}

// Dir is the control plane's directory.
func (c *ControlPlane) Dir() string { return c.dir }

// Start starts etcd, kube-apiserver, when Options.Controllers names any,
// kube-controller-manager and, with Options.Node, the node, each waited
// for until ready (the node until its Node is Ready). It writes the
// administrator's kubeconfig into the directory. Whatever it returns, Stop
// stops what was started and releases the directory.
func (c *ControlPlane) Start(ctx context.Context) error {
	if err := c.preparePKI(time.Now()); err != nil {
		return err
	}
	// The options' flags replace those the launcher adds.
	flags := map[string]string{}
	if c.opts.Node != nil {
		maps.Copy(flags, apiServerNodeFlags)
	}
	if host := c.opts.WebhookClientHost; host != "" {
		a, err := WriteWebhookClientAuth(c.path(pkiDir), host, time.Now())
		if err != nil {
			return fmt.Errorf("the webhook client certificate: %w", err)
		}
		c.webhookClientAuth = a
		maps.Copy(flags, a.Flags)
	}
	maps.Copy(flags, c.opts.APIServerFlags)
	c.ports = portNumbers{etcd: c.opts.EtcdPort, apiServer: c.opts.APIServerPort}
	for _, port := range []*int{&c.ports.etcd, &c.ports.apiServer} {
		if err := c.reserve(port); err != nil {
			return err
		}
	}
	if err := c.startEtcd(ctx); err != nil {
		return err
	}
	if err := c.startAPIServer(ctx, flags); err != nil {
		return err
	}
	if err := c.WriteKubeconfig(c.path(kubeconfigFile), Admin); err != nil {
		return err
	}
	controllers := c.opts.Controllers
	if c.opts.Node != nil {
		controllers = withNodeControllers(controllers)
	}
	if len(controllers) > 0 {
		if _, err := c.StartControllers(ctx, controllers); err != nil {
			return err
		}
	}
	if c.opts.Node == nil {
		return nil
	}
	return c.startNode(ctx)
}

// StartControllers runs kube-controller-manager with controllers (their
// --controllers names), as Start does for Options.Controllers: for a test
// that needs them beside a control plane others share, and stops them with
// StopProcess when it ends. One kube-controller-manager runs at a time.
func (c *ControlPlane) StartControllers(ctx context.Context, controllers []string) (*Process, error) {
	if c.find(controllerManager) != nil {
		return nil, errors.New(controllerManager + " already runs")
	}
	c.log("Starting " + controllerManager + " (" + strings.Join(controllers, ", ") + ")")
	// kube-controller-manager serves nothing to probe (--secure-port=0):
	// it is running once it runs.
	return c.Run(ctx, Command{
		Name: controllerManager,
		Path: filepath.Join(c.opts.BinDir, controllerManager),
		Args: controllerManagerArgs(c.path(kubeconfigFile), controllers),
	})
}

func (c *ControlPlane) startEtcd(ctx context.Context) error {
	c.log(fmt.Sprintf("Starting etcd on 127.0.0.1:%d", c.ports.etcd))
	url := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcd)
	_, err := c.Run(ctx, Command{
		Name:  "etcd",
		Path:  filepath.Join(c.opts.BinDir, "etcd"),
		Args:  etcdArgs(c.path(etcdDir), url),
		Ready: ReadyWhenOK(url + "/health"),
	})
	return err
}

func (c *ControlPlane) startAPIServer(ctx context.Context, flags map[string]string) error {
	c.log("Starting kube-apiserver on " + c.APIServerURL())
	cfg, err := c.Config(Admin)
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	client.Timeout = 5 * time.Second
	args := apiServerArgs(c.dir, c.ports, serviceAccountsMade(c.opts.Controllers), flags)
	_, err = c.Run(ctx, Command{
		Name: apiServer,
		Path: filepath.Join(c.opts.BinDir, apiServer),
		Args: args,
		// Ready once its bootstrap has made the default namespace,
		// which clients may use at once.
		Ready: func(ctx context.Context) error {
			if err := get(ctx, client, cfg.Host+"/readyz"); err != nil {
				return err
			}
			return get(ctx, client, cfg.Host+"/api/v1/namespaces/default")
		},
	})
	return err
}

// reserve reserves a port for *port when it is 0 (see test/ports): etcd and
// kube-apiserver cannot bind port 0 and report the port they got, so they
// are told one that no other process can take before they bind it.
func (c *ControlPlane) reserve(port *int) error {
	if *port != 0 {
		return nil
	}
	p, err := ports.Reserve()
	if err != nil {
		return err
	}
	c.reserved = append(c.reserved, p)
	*port = p.Number
	return nil
}

// serviceAccountsMade is whether a controller makes each namespace's
// default ServiceAccount, without which the ServiceAccount admission
// plugin refuses every Pod.
func serviceAccountsMade(controllers []string) bool {
	for _, c := range controllers {
		if c == "serviceaccount-controller" || c == "serviceaccount" || c == "*" {
			return true
		}
	}
	return false
}

// APIServerURL is the address of the API server.
func (c *ControlPlane) APIServerURL() string {
	return "https://127.0.0.1:" + strconv.Itoa(c.ports.apiServer)
}

// Config reaches the API server as user (Admin or one of Options.Users).
func (c *ControlPlane) Config(user string) (*rest.Config, error) {
	token, ok := c.tokens[user]
	if !ok {
		return nil, fmt.Errorf("no user %q: add it to Options.Users", user)
	}
	return &rest.Config{
		Host:            c.APIServerURL(),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.ca},
	}, nil
}

// WriteKubeconfig writes a kubeconfig for user (Admin or one of
// Options.Users) to path. It names the API server's certificate file, so a
// certificate renewed by a later run is trusted without rewriting it; the
// port is rewritten at every start.
func (c *ControlPlane) WriteKubeconfig(path, user string) error {
	token, ok := c.tokens[user]
	if !ok {
		return fmt.Errorf("no user %q: add it to Options.Users", user)
	}
	ctxName := user + "@local"
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"local": {
			Server:               c.APIServerURL(),
			CertificateAuthority: c.path(servingCertFile),
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{user: {Token: token}},
		Contexts:       map[string]*clientcmdapi.Context{ctxName: {Cluster: "local", AuthInfo: user}},
		CurrentContext: ctxName,
	}
	data, err := clientcmd.Write(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// WebhookClientAuth is the API server's client certificate for the
// admission webhooks and its CA, made by Start when
// Options.WebhookClientHost is set.
func (c *ControlPlane) WebhookClientAuth() WebhookClientAuth { return c.webhookClientAuth }

// Processes are the running processes in the order they started.
func (c *ControlPlane) Processes() []*Process { return c.procs }

// RestartAPIServer stops the kube-apiserver as Stop would and starts it
// again with the same flags, port, certificates and tokens, so that every
// client made before reaches it again unchanged; etcd, and so the cluster's
// data, stay. Its log goes on after the first run's. A reserved port
// (Options.APIServerPort 0) stays reserved in between; a port the options
// gave may be taken meanwhile, and then the start fails.
//
// A kube-apiserver with watches open may drain them for longer than
// Options.StopTimeout and be killed: a crash and restart rather than a
// clean one, which is still what was asked, so only Options.Log is told.
func (c *ControlPlane) RestartAPIServer(ctx context.Context) error {
	p := c.find(apiServer)
	if p == nil {
		return errors.New(apiServer + " is not running")
	}
	c.log("Restarting " + apiServer + " on " + c.APIServerURL())
	return c.restart(ctx, p)
}

// Stop stops the processes, the last started first (so the operator
// finishes its requests while the API server is there; etcd goes last),
// each with SIGTERM and, after Options.StopTimeout or as soon as ctx is
// done, SIGKILL. With a node (Options.Node), it then kills the containers
// the kubelet left running and containerd's shims, removes the node's
// cgroup and unmounts what the node mounted. It then releases the
// directory (removing it when temporary). The error names the processes
// that had to be killed.
func (c *ControlPlane) Stop(ctx context.Context) error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		errs = append(errs, c.procs[i].stop(ctx, c.opts.StopTimeout))
	}
	c.procs = nil
	errs = append(errs, c.stopNode())
	for _, p := range c.reserved {
		errs = append(errs, p.Release())
	}
	c.reserved = nil
	return errors.Join(append(errs, c.release())...)
}

func (c *ControlPlane) log(msg string) {
	if c.opts.Log != nil {
		c.opts.Log(msg)
	}
}

// ReadyWhenOK is a Command.Ready for a process that serves url (a
// /readyz, a /health): ready once a GET of it answers 200.
func ReadyWhenOK(url string) func(context.Context) error {
	client := &http.Client{Timeout: 5 * time.Second}
	return func(ctx context.Context) error { return get(ctx, client, url) }
}

// get fails unless url answers 200.
func get(ctx context.Context, client *http.Client, url string) error {
	_, err := getBody(ctx, client, url)
	return err
}

// getBody is get that returns what a 200 carried.
func getBody(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// EtcdURL is the address of etcd's client port.
func (c *ControlPlane) EtcdURL() string {
	return "http://127.0.0.1:" + strconv.Itoa(c.ports.etcd)
}
