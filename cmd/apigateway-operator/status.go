package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"example.com/apigateway-operator/inspect"
	"example.com/apigateway-operator/offline"
)

const statusSynopsis = `Usage: apigateway-operator status NAME [-n NAMESPACE] [flags]

Prints one APIGateway as the cluster of the kubeconfig (--kubeconfig,
--context) has it: its conditions; each child the operator built for it
(ConfigMap, Deployment, Service, Ingress or HTTPRoutes, PodDisruptionBudget,
NetworkPolicy) and whether it is ready; each gateway pod and the
configuration its nginx serves (current, or not yet), with the newest one
it refused and nginx's words; the parent Gateways' verdicts on its
HTTPRoutes; and the routes it claimed, since when, and which it lost. It
reads the gateway's namespace only and writes nothing.

The pods are asked through the API server's pod proxy on their status port,
which needs get on pods/proxy; without it each pod says why it is unknown.
Exit status: 0 printed, 1 no such gateway, 2 unusable flags or a cluster
that cannot be read.`

// statusOptions are status' flags.
type statusOptions struct {
	namespace, kubeconfig, context, output string
}

func runStatus(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	var o statusOptions
	fs := newFlagSet("status", statusSynopsis, stdout)
	fs.StringVar(&o.namespace, "n", "", "The gateway's namespace (default: the kubeconfig context's).")
	fs.StringVar(&o.namespace, "namespace", "", "Same as -n.")
	fs.StringVar(&o.output, "o", "table", "Output: table or json.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "The kubeconfig of the cluster to read (default: $KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&o.context, "context", "", "The kubeconfig context to read (default: the current one).")
	// Flags may follow NAME, as kubectl takes them.
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "error: name the APIGateway (see --help)")
		return 2
	}
	name, rest := fs.Arg(0), fs.Args()[1:]
	if code := parseFlags(fs, rest, stderr); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "error: one APIGateway at a time, not also %q\n", fs.Arg(0))
		return 2
	}
	if o.output != "table" && o.output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: want table or json\n", o.output)
		return 2
	}
	return o.run(context.Background(), name, stdout, stderr)
}

func (o statusOptions) run(ctx context.Context, name string, stdout, stderr io.Writer) int {
	cfg, ns, err := offline.ClusterConfig(o.kubeconfig, o.context, "apigateway-operator-status")
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if o.namespace != "" {
		ns = o.namespace
	}
	in, warnings, err := inspect.Read(ctx, cfg, ns, name)
	if apierrors.IsNotFound(err) {
		fmt.Fprintf(stderr, "error: no APIGateway %s in namespace %s\n", name, ns)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "Warning: %s\n", w)
	}
	report := inspect.Build(in)
	if o.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(report)
	} else {
		err = inspect.WriteTable(stdout, report)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	return 0
}
