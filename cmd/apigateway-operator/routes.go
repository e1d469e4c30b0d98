package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/offline"
	"example.com/apigateway-operator/ownership"
)

const routesSynopsis = `Usage: apigateway-operator routes [-f FILE|DIR|-] [flags]

Prints the route table: a line per route of every APIGateway, with its host,
path, pathType, gateway (namespace/name), backends with their shares of the
requests, timeouts, prefix rewrite, and whether its gateway serves it or
which gateway holds it; when some route has them, its rules, redirect,
source ranges, authentication (AUTH: basic:SECRET, external:SERVICE:PORT)
and CORS origins. Without -f it reads the cluster of the kubeconfig
(--kubeconfig, --context): it lists APIGateways and IngressClasses in every
namespace and writes nothing. With -f it reads files instead, each
APIGateway defaulted and judged alone as validate judges it; if one is
refused, its errors are printed and no table.

When gateways ask for one route, the operator's own rule decides: the first
claim wins, a host to the namespace that claimed it first (see
--namespace-ownership), a route to the gateway that claimed it first in one
ingress class or on one parent Gateway. The claims are those recorded in
each gateway's status.claims (kubectl get -o yaml keeps them); a gateway
without recorded claims claims after every recorded one, in input order.
Exit status: 0 printed, 1 an APIGateway refused, 2 unusable input or a
cluster that cannot be read.`

// routesOptions are routes' flags.
type routesOptions struct {
	judge     validateOptions
	output    string
	ownership string
}

func runRoutes(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o := routesOptions{judge: validateOptions{output: "text", routeTable: true,
		defaultImage: defaults.DefaultImage, defaultReplicas: int(defaults.DefaultReplicas)}}
	fs := newFlagSet("routes", routesSynopsis, stdout)
	fs.Var(&o.judge.files, "f", "File, directory (its .yaml, .yml and .json files) or - for standard input; repeatable. Without it, the cluster's APIGateways.")
	fs.StringVar(&o.output, "o", "table", "Output: table (aligned columns) or json.")
	fs.StringVar(&o.judge.namespace, "namespace", "default", "With -f: namespace of the objects that name none.")
	fs.StringVar(&o.judge.kubeconfig, "kubeconfig", "", "The kubeconfig of the cluster to read (default: $KUBECONFIG, then ~/.kube/config).")
	fs.StringVar(&o.judge.context, "context", "", "The kubeconfig context to read (default: the current one).")
	fs.StringVar(&o.ownership, "namespace-ownership", string(ownership.Strict), "The operator's --namespace-ownership. "+namespaceOwnershipUsage)
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	o.judge.files = append(o.judge.files, fs.Args()...)
	policy, err := parseOwnership(o.ownership)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if o.output != "table" && o.output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: want table or json\n", o.output)
		return 2
	}
	ctx := context.Background()
	opts := offline.RouteOptions{Policy: policy}
	var gws []v1.APIGateway
	code := 0
	if len(o.judge.files) == 0 {
		var warnings []string
		gws, opts.Classes, warnings, err = offline.ClusterRoutes(ctx, o.judge.kubeconfig, o.judge.context)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "Warning: %s\n", w)
		}
	} else {
		code, gws, err = o.fileGateways(ctx, stdin, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if code != 0 {
		return code
	}
	if err := writeRoutes(offline.Routes(gws, opts), o.output, stdout); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	return 0
}

// fileGateways are the input's APIGateways in their v1 form, defaulted;
// each one refused gets its errors on stderr, and code 1.
func (o *routesOptions) fileGateways(ctx context.Context, stdin io.Reader, stderr io.Writer) (int, []v1.APIGateway, error) {
	if o.judge.kubeconfig != "" || o.judge.context != "" {
		return 0, nil, fmt.Errorf("-f reads files, --kubeconfig and --context a cluster: give one or the other")
	}
	report, err := o.judge.validate(ctx, stdin)
	if err != nil {
		return 0, nil, err
	}
	code := 0
	var gws []v1.APIGateway
	for _, obj := range report.Objects {
		switch {
		case !obj.Valid:
			_, line := objectLine(obj, io.Discard, stderr)
			fmt.Fprint(stderr, line)
			code = 1
		case obj.Gateway != nil:
			gws = append(gws, *obj.Gateway)
		}
	}
	return code, gws, nil
}

// writeRoutes prints rows as a table, or as JSON: {"routes": [...]}.
func writeRoutes(rows []offline.RouteRow, output string, w io.Writer) error {
	if output == "json" {
		if rows == nil {
			rows = []offline.RouteRow{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Routes []offline.RouteRow `json:"routes"`
		}{rows})
	}
	return offline.WriteRouteTable(w, rows)
}
