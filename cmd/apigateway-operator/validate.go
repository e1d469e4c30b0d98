package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/offline"
)

const validateSynopsis = `Usage: apigateway-operator validate -f FILE|DIR|- [flags]

Checks APIGateway manifests (YAML or JSON, several documents per file, both
versions) as the API server and the operator's webhooks would judge them:
the CRD's schema and CEL rules, strict field validation, conversion of
v1alpha1, defaulting, the webhooks' rules and warnings, and host and path
conflicts with the gateways before them in the input (and in the cluster
with --kubeconfig or --context). Other kinds are skipped with a note;
Namespace and Service objects supply the default image and the ports.
Needs no cluster. Exit status: 0 valid, 1 invalid, 2 unusable input.`

// validateOptions are validate's flags.
type validateOptions struct {
	files           files
	output          string
	namespace       string
	defaultImage    string
	defaultReplicas int
	namespaceImages files
	trustedProxies  string
	kubeconfig      string
	context         string
	// routeTable judges for the routes command: each APIGateway alone,
	// its status kept (offline.Options.EachAlone, KeepStatus).
	routeTable bool
}

func runValidate(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var o validateOptions
	fs := newFlagSet("validate", validateSynopsis, stdout)
	fs.Var(&o.files, "f", "File, directory (its .yaml, .yml and .json files) or - for standard input; repeatable.")
	fs.StringVar(&o.output, "o", "text", "Output: text (kubectl-like) or json.")
	fs.StringVar(&o.namespace, "namespace", "default", "Namespace of the objects that name none.")
	fs.StringVar(&o.defaultImage, "default-image", defaults.DefaultImage, "The operator's --default-gateway-image: spec.image of gateways without one.")
	fs.IntVar(&o.defaultReplicas, "default-replicas", int(defaults.DefaultReplicas), "The operator's --default-replicas: spec.replicas of gateways without one.")
	fs.Var(&o.namespaceImages, "namespace-default-image", "NAMESPACE=IMAGE: the namespace's example.com/default-gateway-image annotation; repeatable.")
	fs.StringVar(&o.trustedProxies, "gateway-trusted-proxies", "", "The operator's --gateway-trusted-proxies: without any, routes' sourceRanges get the webhook's warning.")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Also check conflicts with the APIGateways of this cluster (read only).")
	fs.StringVar(&o.context, "context", "", "The kubeconfig context to read the cluster's APIGateways from (implies reading the cluster).")
	if code := parseFlags(fs, args, stderr); code >= 0 {
		return code
	}
	o.files = append(o.files, fs.Args()...)
	report, err := o.validate(context.Background(), stdin)
	if err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if err := writeReport(report, o.output, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "error: %v\n", err)
		return 2
	}
	if !report.Valid() {
		return 1
	}
	return 0
}

// validate reads the input and judges it; an error is unusable input.
func (o *validateOptions) validate(ctx context.Context, stdin io.Reader) (offline.Report, error) {
	if o.output != "text" && o.output != "json" {
		return offline.Report{}, fmt.Errorf("-o %q: want text or json", o.output)
	}
	opts := offline.Options{
		Defaults:             defaults.Operator{Image: o.defaultImage, Replicas: int32(o.defaultReplicas)},
		Namespace:            o.namespace,
		NamespaceAnnotations: map[string]map[string]string{},
		EachAlone:            o.routeTable,
		KeepStatus:           o.routeTable,
	}
	proxies, err := parseTrustedProxies(o.trustedProxies)
	if err != nil {
		return offline.Report{}, err
	}
	opts.TrustsProxies = len(proxies) > 0
	// The operator's own --default-replicas range.
	if o.defaultReplicas < 0 || o.defaultReplicas > int(validation.MaxReplicas()) {
		return offline.Report{}, fmt.Errorf("--default-replicas: want 0 to %d, got %d", validation.MaxReplicas(), o.defaultReplicas)
	}
	for _, ni := range o.namespaceImages {
		ns, image, ok := strings.Cut(ni, "=")
		if !ok || ns == "" || image == "" {
			return offline.Report{}, fmt.Errorf("--namespace-default-image %q: want NAMESPACE=IMAGE", ni)
		}
		opts.NamespaceAnnotations[ns] = map[string]string{v1.DefaultImageAnnotation: image}
	}
	docs, err := offline.Read(o.files, stdin)
	if err != nil {
		return offline.Report{}, err
	}
	if o.kubeconfig != "" || o.context != "" {
		if opts.Gateways, err = offline.ClusterGateways(ctx, o.kubeconfig, o.context); err != nil {
			return offline.Report{}, err
		}
	}
	checker, err := offline.NewChecker()
	if err != nil {
		return offline.Report{}, err
	}
	return checker.Validate(ctx, docs, opts), nil
}

// writeReport prints the report: for json one document with every object,
// for text a line per object on stdout and the errors and warnings on
// stderr, as kubectl prints a server dry run.
func writeReport(r offline.Report, output string, stdout, stderr io.Writer) error {
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Valid bool `json:"valid"`
			offline.Report
		}{r.Valid(), r})
	}
	var errs []error
	for _, o := range r.Objects {
		for _, w := range o.Warnings {
			_, err := fmt.Fprintf(stderr, "Warning: %s\n", w)
			errs = append(errs, err)
		}
		_, err := io.WriteString(objectLine(o, stdout, stderr))
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// objectLine is the line for one object and where it goes.
func objectLine(o offline.Object, stdout, stderr io.Writer) (io.Writer, string) {
	where := fmt.Sprintf("%s#%d", o.File, o.Document)
	switch {
	case o.Note != "":
		return stdout, fmt.Sprintf("%s %s/%s (%s): %s\n", o.APIVersion, strings.ToLower(o.Kind), o.Name, where, o.Note)
	case o.Valid:
		return stdout, fmt.Sprintf("apigateway.example.com/%s valid (%s, namespace %s)\n", o.Name, where, o.Namespace)
	}
	lines := make([]string, len(o.Errors))
	for i, p := range o.Errors {
		lines[i] = p.Message
		if p.Field != "" {
			lines[i] = p.Field + ": " + p.Message
		}
		if p.Rule != "" {
			lines[i] += " [rule " + p.Rule + "]"
		}
	}
	body := lines[0]
	if len(lines) > 1 {
		body = "\n* " + strings.Join(lines, "\n* ")
	}
	return stderr, fmt.Sprintf("Error from %s: The APIGateway %q is invalid: %s\n", where, o.Name, body)
}
