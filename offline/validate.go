// Package offline judges APIGateway manifests as the API server and the
// operator's webhooks would, with no cluster: the embedded CRD's schema and
// CEL rules (evaluated by apiextensions-apiserver's own packages), the
// admission policies and the mutating webhook's matchConditions (evaluated
// by the API server's own packages, through package admit), the conversion
// webhook's functions, the defaults table (api/v1/defaults) and
// admit.Validate. The validate and convert subcommands are built on it.
package offline

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"example.com/apigateway-operator/admit"
	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
)

// Options are what the API server and the webhooks would know besides the
// objects.
type Options struct {
	// Defaults are the operator's --default-image and --default-replicas.
	Defaults defaults.Operator
	// Namespace is the namespace of objects that name none, as kubectl's
	// current namespace would be.
	Namespace string
	// NamespaceAnnotations are the annotations of namespaces by name (the
	// example.com/default-gateway-image one matters); Namespace objects in
	// the input add theirs.
	NamespaceAnnotations map[string]map[string]string
	// Gateways are APIGateways already in a cluster: the input's routes
	// must not conflict with theirs.
	Gateways []v1.APIGateway
	// EachAlone judges each APIGateway as if it were the only one: no
	// conflicts with Gateways or the input's others (the routes command
	// decides between them as the reconciler does, Routes).
	EachAlone bool
	// KeepStatus keeps each admitted APIGateway's status as the input
	// has it (kubectl get -o yaml writes the claims there), where a create
	// would drop it: Object.Gateway then carries it.
	KeepStatus bool
	// TrustsProxies is whether the operator has --gateway-trusted-proxies:
	// without, routes' sourceRanges get the webhook's warning.
	TrustsProxies bool
}

// Problem is one error about an object.
type Problem struct {
	// Field is the field path, as the API server reports it; empty for an
	// error about the whole request.
	Field string `json:"field,omitempty"`
	// Rule names the rule broken: a webhook rule's id (field.Error.Origin),
	// the schema's, or strictFieldValidation for an unknown field.
	Rule string `json:"rule,omitempty"`
	// Message is what the API server says, without the field path.
	Message string `json:"message"`
}

// Object is the verdict on one document.
type Object struct {
	File       string `json:"file"`
	Document   int    `json:"document"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name,omitempty"`
	// Valid is true for an APIGateway the API server would admit.
	Valid    bool      `json:"valid"`
	Errors   []Problem `json:"errors,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`
	// Note says why a document that is not an APIGateway was not judged.
	Note string `json:"note,omitempty"`

	// Gateway is the admitted object in its v1 form, defaulted.
	Gateway *v1.APIGateway `json:"-"`
}

// Report is the verdict on all documents, in input order.
type Report struct {
	Objects []Object `json:"objects"`
}

// Valid reports whether every APIGateway is admitted.
func (r *Report) Valid() bool {
	return !slices.ContainsFunc(r.Objects, func(o Object) bool { return !o.Valid })
}

// Checker judges documents; it holds the CRD's compiled schemas and the
// compiled admission policies.
type Checker struct {
	schemas  *Schemas
	policy   *admit.DefaultsPolicy
	warnings *admit.WarningsPolicy
}

// NewChecker compiles the embedded CRD and admission policies.
func NewChecker() (*Checker, error) {
	s, err := LoadSchemas()
	if err != nil {
		return nil, err
	}
	p, err := admit.CompiledDefaults()
	if err != nil {
		return nil, err
	}
	w, err := admit.CompiledWarnings()
	if err != nil {
		return nil, err
	}
	return &Checker{schemas: s, policy: p, warnings: w}, nil
}

// Rules that are not the webhooks' (field.Error.Origin) name the stage.
const (
	RuleStrictFields = "strictFieldValidation"
	// RuleSchema is the CRD's OpenAPI schema (and the object metadata's
	// rules), RuleCEL its x-kubernetes-validations rules.
	RuleSchema  = "schema"
	RuleCEL     = "cel"
	RuleDecode  = "decode"
	RuleVersion = "servedVersion"
)

// Validate judges every document in order. Each APIGateway is checked
// against the cluster's gateways and the admitted gateways before it in
// the input, as `kubectl apply -f` would create them one after another:
// of two gateways with one route, the second is refused.
func (c *Checker) Validate(ctx context.Context, docs []Document, opts Options) Report {
	if opts.Namespace == "" {
		opts.Namespace = "default"
	}
	annotations, ports := c.related(docs, opts)
	var admitted []v1.APIGateway
	if !opts.EachAlone {
		admitted = slices.Clone(opts.Gateways)
	}
	report := Report{Objects: make([]Object, 0, len(docs))}
	for _, d := range docs {
		o := Object{File: d.File, Document: d.Index, APIVersion: d.Object.GetAPIVersion(), Kind: d.Object.GetKind(),
			Namespace: d.Object.GetNamespace(), Name: d.Object.GetName(), Valid: true}
		if !IsAPIGateway(d.Object) {
			o.Note = "not an APIGateway: not checked"
			if d.Object.GetKind() == "Namespace" || d.Object.GetKind() == "Service" {
				o.Note = "not an APIGateway: read for the APIGateways' defaults and warnings"
			}
			report.Objects = append(report.Objects, o)
			continue
		}
		if o.Namespace == "" {
			o.Namespace = opts.Namespace
		}
		gw, errs, warnings := c.admit(ctx, d.Object.DeepCopy(), o.Namespace, opts.Defaults, annotations[o.Namespace],
			admit.RelatedObjects{Gateways: admitted, ServicePorts: ports[o.Namespace], TrustsProxies: opts.TrustsProxies})
		if len(errs) == 0 && opts.KeepStatus {
			errs = keepStatus(d.Object, gw)
		}
		o.Errors, o.Warnings, o.Valid = errs, warnings, len(errs) == 0
		if o.Valid {
			o.Gateway = gw
			if !opts.EachAlone {
				admitted = append(admitted, *gw)
			}
		}
		report.Objects = append(report.Objects, o)
	}
	return report
}

// keepStatus sets gw's status to u's, of either version (their statuses
// have one shape).
func keepStatus(u *unstructured.Unstructured, gw *v1.APIGateway) []Problem {
	status, ok := u.Object["status"].(map[string]any)
	if !ok {
		return nil
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status, &gw.Status); err != nil {
		return []Problem{{Field: "status", Rule: RuleDecode, Message: err.Error()}}
	}
	return nil
}

// related gathers what the webhooks read from the cluster, from the input:
// namespaces' annotations and Services' ports, by namespace.
func (c *Checker) related(docs []Document, opts Options) (map[string]map[string]string, map[string]map[string][]int32) {
	annotations := maps.Clone(opts.NamespaceAnnotations)
	if annotations == nil {
		annotations = map[string]map[string]string{}
	}
	ports := map[string]map[string][]int32{}
	for _, d := range docs {
		switch d.Object.GroupVersionKind() {
		case corev1.SchemeGroupVersion.WithKind("Namespace"):
			annotations[d.Object.GetName()] = d.Object.GetAnnotations()
		case corev1.SchemeGroupVersion.WithKind("Service"):
			svc := &corev1.Service{}
			if runtime.DefaultUnstructuredConverter.FromUnstructured(d.Object.Object, svc) != nil {
				continue
			}
			ns := svc.Namespace
			if ns == "" {
				ns = opts.Namespace
			}
			if ports[ns] == nil {
				ports[ns] = map[string][]int32{}
			}
			for _, p := range svc.Spec.Ports {
				ports[ns][svc.Name] = append(ports[ns][svc.Name], p.Port)
			}
			if _, ok := ports[ns][svc.Name]; !ok {
				ports[ns][svc.Name] = []int32{}
			}
		}
	}
	return annotations, ports
}

// admit is what a create of u goes through in the API server, in its
// order: decoding with strict field validation and the schema's defaults,
// the mutating webhook (through v1 for a v1alpha1 object), the schema's
// defaults again, the CRD's validation and CEL rules in u's own version,
// and the validating webhook on the v1 form. It stops at the first stage
// that refuses u, as the API server does.
func (c *Checker) admit(ctx context.Context, u *unstructured.Unstructured, namespace string, op defaults.Operator,
	nsAnnotations map[string]string, related admit.RelatedObjects) (*v1.APIGateway, []Problem, []string) {
	version := u.GroupVersionKind().Version
	vs := c.schemas.version(version)
	if vs == nil {
		return nil, []Problem{{Rule: RuleVersion, Message: fmt.Sprintf("no matches for kind %q in version %q: the CRD serves %s",
			u.GetKind(), u.GetAPIVersion(), strings.Join(Versions, " and "))}}, nil
	}
	gw, problems, warnings := c.admitVersion(ctx, u, vs, namespace, op, nsAnnotations, related)
	if vs.deprecation != "" {
		warnings = append([]string{vs.deprecation}, warnings...)
	}
	return gw, problems, warnings
}

// admitVersion is admit for an object of a served version.
func (c *Checker) admitVersion(ctx context.Context, u *unstructured.Unstructured, vs *versionSchema, namespace string, op defaults.Operator,
	nsAnnotations map[string]string, related admit.RelatedObjects) (*v1.APIGateway, []Problem, []string) {
	u.SetNamespace(namespace)
	unknown, err := vs.decode(u)
	if err != nil {
		return nil, []Problem{{Rule: RuleDecode, Message: err.Error()}}, nil
	}
	if len(unknown) > 0 {
		problems := make([]Problem, len(unknown))
		for i, p := range unknown {
			problems[i] = Problem{Field: p, Rule: RuleStrictFields, Message: fmt.Sprintf("strict decoding error: unknown field %q", p)}
		}
		return nil, problems, nil
	}
	if problems := c.mutate(ctx, u, vs, op, nsAnnotations); len(problems) > 0 {
		return nil, problems, nil
	}
	if errs := vs.validate(ctx, u, c.schemas.Group, c.schemas.Kind); len(errs) > 0 {
		return nil, problemsOf(errs, RuleSchema), nil
	}
	strategyWarnings := finalizerWarnings(u)
	gw, err := toV1(u)
	if err != nil {
		return nil, []Problem{{Rule: RuleDecode, Message: err.Error()}}, nil
	}
	v1Form, err := fromV1(gw, v1.GroupVersion.Version)
	if err != nil {
		return nil, []Problem{{Rule: RuleDecode, Message: err.Error()}}, nil
	}
	// The warnings policy's, then the validating webhook's.
	warnings := slices.Concat(strategyWarnings, c.warnings.Warnings(ctx, v1Form))
	errs, webhookWarnings := admit.Validate(nil, gw, related)
	warnings = append(warnings, webhookWarnings...)
	if len(errs) > 0 {
		return nil, problemsOf(errs, ""), warnings
	}
	return gw, nil, warnings
}

// mutate is what admission's mutating stage does to u: the defaults
// policy, on the object as sent (a v1 one: a v1alpha1 object reaches it
// through the conversion webhook, and the table the policy is generated
// from then defaults it below), then the mutating webhook when its
// matchConditions match u's v1 form, which the API server hands it; the
// webhook's patch (defaults.Patch) is applied to that form and written back
// in u's version, then the schema's defaults are applied again, as the API
// server does after a patch.
func (c *Checker) mutate(ctx context.Context, u *unstructured.Unstructured, vs *versionSchema, op defaults.Operator, nsAnnotations map[string]string) []Problem {
	if vs.version == v1.GroupVersion.Version {
		// A failure is the policy's failurePolicy's (Ignore).
		if patched, err := c.policy.Apply(ctx, u, op.PolicyData(), nsAnnotations); err == nil {
			u.Object = patched.Object
			vs.setDefaults(u)
		}
	}
	v1Form := u
	if vs.version != v1.GroupVersion.Version {
		gw, err := toV1(u)
		if err != nil {
			return []Problem{{Rule: RuleDecode, Message: "conversion webhook: " + err.Error()}}
		}
		if v1Form, err = fromV1(gw, v1.GroupVersion.Version); err != nil {
			return []Problem{{Rule: RuleDecode, Message: "conversion webhook: " + err.Error()}}
		}
	}
	if call, err := admit.CallsMutatingWebhook(ctx, v1Form); err != nil {
		return []Problem{{Rule: RuleDecode, Message: "the mutating webhook's matchConditions: " + err.Error()}}
	} else if !call {
		return nil
	}
	ops := defaults.Patch(v1Form.Object, op.Params(nsAnnotations))
	if len(ops) == 0 {
		return nil
	}
	patched, err := applyOps(v1Form.Object, ops)
	if err != nil {
		return []Problem{{Rule: RuleDecode, Message: "the mutating webhook's patch: " + err.Error()}}
	}
	if vs.version == v1.GroupVersion.Version {
		u.Object = patched
	} else {
		gw, err := toV1(&unstructured.Unstructured{Object: patched})
		if err != nil {
			return []Problem{{Rule: RuleDecode, Message: err.Error()}}
		}
		back, err := fromV1(gw, vs.version)
		if err != nil {
			return []Problem{{Rule: RuleDecode, Message: "converting the defaulted object back: " + err.Error()}}
		}
		u.Object["spec"] = back.Object["spec"]
		u.SetAnnotations(back.GetAnnotations())
		u.SetLabels(back.GetLabels())
	}
	vs.setDefaults(u)
	return nil
}

// applyOps applies a JSON patch to obj as the API server applies the
// webhook's, and returns the patched object.
func applyOps(obj map[string]any, ops []defaults.Op) (map[string]any, error) {
	doc, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, err
	}
	if doc, err = patch.Apply(doc); err != nil {
		return nil, err
	}
	// As the API server decodes it: whole numbers as int64.
	var out map[string]any
	return out, utiljson.Unmarshal(doc, &out)
}

// problemsOf turns field errors into problems; rule names errors without an
// Origin.
func problemsOf(errs field.ErrorList, rule string) []Problem {
	out := make([]Problem, 0, len(errs))
	for _, e := range errs {
		r := e.Origin
		if r == "" {
			r = rule
		}
		out = append(out, Problem{Field: e.Field, Rule: r, Message: e.ErrorBody()})
	}
	return out
}
