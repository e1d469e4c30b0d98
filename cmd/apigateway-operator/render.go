package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/offline"
	"example.com/apigateway-operator/render"
)

const renderSynopsis = `Usage: apigateway-operator render -f FILE|DIR|- [flags]

Prints the children the operator would create for each APIGateway: the
ConfigMap with the rendered nginx configuration, the Deployment, the Service,
the Ingress and, for two replicas or more, the PodDisruptionBudget, built by
the function the reconciler applies them from.
They are sorted by kind, then namespace and name, so a change to a gateway
shows as a diff of its children. The gateways are judged first, as validate
judges them (both versions, defaulting with --default-image and
--default-replicas, conflicts among the input's gateways); if one is
refused, its errors are printed and no child. The children's owner
references have an empty uid: the API server assigns the gateway's at
create. Needs no cluster. Exit status: 0 rendered, 1 invalid, 2 unusable
input.`

// renderOptions are render's flags: the gateways are read and judged with
// validate's (judge), the children built with the operator's.
type renderOptions struct {
	judge          validateOptions
	output         string
	clusterDomain  string
	trustedProxies string
	reloaderImage  string
}

func runRender(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// judge.output only passes validate's own -o check: render prints
	// children, not validate's report.
	o := renderOptions{judge: validateOptions{output: "text"}}
	fs := newFlagSet("render", renderSynopsis, stdout)
	fs.Var(&o.judge.files, "f", "File, directory (its .yaml, .yml and .json files) or - for standard input; repeatable.")
	fs.StringVar(&o.output, "o", "yaml", "Output: yaml (documents separated by ---) or json (one object, or a List of them).")
	fs.StringVar(&o.judge.namespace, "namespace", "default", "Namespace of the objects that name none.")
	fs.StringVar(&o.judge.defaultImage, "default-image", defaults.DefaultImage, "The operator's --default-gateway-image: spec.image of gateways without one.")
	fs.IntVar(&o.judge.defaultReplicas, "default-replicas", int(defaults.DefaultReplicas), "The operator's --default-replicas: spec.replicas of gateways without one.")
	fs.Var(&o.judge.namespaceImages, "namespace-default-image", "NAMESPACE=IMAGE: the namespace's example.com/default-gateway-image annotation; repeatable.")
	fs.StringVar(&o.clusterDomain, "cluster-domain", render.DefaultClusterDomain, "The operator's --cluster-domain: backends are reached at <service>.<namespace>.svc.<domain>.")
	fs.StringVar(&o.trustedProxies, "gateway-trusted-proxies", "", "The operator's --gateway-trusted-proxies. "+trustedProxiesUsage)
	fs.StringVar(&o.reloaderImage, "reloader-image", fallbackReloaderImage, "The operator's image (its --reloader-image): the gateway pods' init container copies the reloader from it.")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	o.judge.files = append(o.judge.files, fs.Args()...)
	if o.output != "yaml" && o.output != "json" {
		fmt.Fprintf(stderr, "error: -o %q: want yaml or json\n", o.output)
		return 2
	}
	if err := checkClusterDomain(o.clusterDomain); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	proxies, err := parseTrustedProxies(o.trustedProxies)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	report, err := o.judge.validate(context.Background(), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	children, refused := renderReport(report, controller.ChildOptions{
		DefaultImage: o.judge.defaultImage, ClusterDomain: o.clusterDomain, TrustedProxies: proxies, ReloaderImage: o.reloaderImage,
	}, stderr)
	if refused {
		return 1
	}
	if len(children) == 0 {
		fmt.Fprintln(stderr, "no APIGateway in the input: nothing to render")
	}
	if err := writeObjects(children, o.output, stdout); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	return 0
}

// renderReport builds the children of the report's admitted gateways,
// sorted (sortChildren). Warnings, and the errors of each refused gateway
// as validate prints them, go to stderr; refused is true when there were
// errors, and then no child is returned: a preview that left a gateway out
// would read as that gateway losing its children.
func renderReport(r offline.Report, opts controller.ChildOptions, stderr io.Writer) (children []*unstructured.Unstructured, refused bool) {
	for _, obj := range r.Objects {
		for _, w := range obj.Warnings {
			fmt.Fprintf(stderr, "Warning: %s\n", w)
		}
		if !obj.Valid {
			_, line := objectLine(obj, io.Discard, stderr)
			fmt.Fprint(stderr, line)
			refused = true
			continue
		}
		if obj.Gateway == nil {
			continue // not an APIGateway
		}
		desired, err := controller.Children(obj.Gateway, opts)
		if err != nil {
			// Admission and the renderer share their rules, so this
			// means a bug; the operator would report InvalidRoutes.
			fmt.Fprintf(stderr, "Error from %s#%d: the operator would refuse the routes of APIGateway %q: %v\n", obj.File, obj.Document, obj.Name, err)
			refused = true
			continue
		}
		for _, ac := range desired.Objects() {
			u, err := toUnstructured(ac)
			if err != nil {
				fmt.Fprintf(stderr, "Error from %s#%d: APIGateway %q: %v\n", obj.File, obj.Document, obj.Name, err)
				refused = true
				continue
			}
			children = append(children, u)
		}
	}
	if refused {
		return nil, true
	}
	sortChildren(children)
	return children, false
}

// sortChildren orders objects by kind, namespace and name, an order that
// does not depend on the input's, so moving a gateway between files
// changes no line of the output.
func sortChildren(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Or(
			cmp.Compare(a.GetKind(), b.GetKind()),
			cmp.Compare(a.GetNamespace(), b.GetNamespace()),
			cmp.Compare(a.GetName(), b.GetName()))
	})
}

// toUnstructured is an apply configuration as the JSON the operator sends:
// only the fields it sets.
func toUnstructured(ac any) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(data)
}
