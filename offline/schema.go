package offline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structurallisttype "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/operation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"sigs.k8s.io/yaml"

	"example.com/apigateway-operator/manifests/crd"
)

// versionSchema is what the API server builds from the CRD for one served
// version (customresource_handler.go's getOrCreateServingInfoFor): the
// structural schema (defaults pruned as there), the OpenAPI validator and
// the CEL validator.
type versionSchema struct {
	version    string
	structural *structuralschema.Structural
	validator  apiservervalidation.SchemaValidator
	cel        *cel.Validator
	// scale is the version's scale subresource, nil without one.
	scale *apiextensionsv1.CustomResourceSubresourceScale
	// deprecation is the warning every request in a deprecated version
	// gets, empty for another version.
	deprecation string
}

// Schemas are the embedded CRD's, by version name.
type Schemas struct {
	Group, Kind string
	versions    map[string]*versionSchema
}

// LoadSchemas builds the schemas of the CRD embedded in the binary.
func LoadSchemas() (*Schemas, error) { return schemasOf(crd.APIGateways) }

func schemasOf(data []byte) (*Schemas, error) {
	def := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(data, def); err != nil {
		return nil, fmt.Errorf("reading the embedded CRD: %w", err)
	}
	s := &Schemas{Group: def.Spec.Group, Kind: def.Spec.Names.Kind, versions: map[string]*versionSchema{}}
	for i := range def.Spec.Versions {
		v := &def.Spec.Versions[i]
		if !v.Served || v.Schema == nil {
			continue
		}
		vs, err := newVersionSchema(v.Name, v.Schema)
		if err != nil {
			return nil, fmt.Errorf("the embedded CRD's %s schema: %w", v.Name, err)
		}
		if v.Subresources != nil {
			vs.scale = v.Subresources.Scale
		}
		if v.Deprecated {
			// The API server's default (defaultDeprecationWarning) also
			// names the newest version to use; the CRD sets its own.
			vs.deprecation = fmt.Sprintf("%s/%s %s is deprecated", def.Spec.Group, v.Name, def.Spec.Names.Kind)
			if v.DeprecationWarning != nil {
				vs.deprecation = *v.DeprecationWarning
			}
		}
		s.versions[v.Name] = vs
	}
	return s, nil
}

func newVersionSchema(name string, val *apiextensionsv1.CustomResourceValidation) (*versionSchema, error) {
	internal := &apiextensions.CustomResourceValidation{}
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(val, internal, nil); err != nil {
		return nil, err
	}
	s, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	s = s.DeepCopy()
	if err := structuraldefaulting.PruneDefaults(s); err != nil {
		return nil, err
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, err
	}
	return &versionSchema{version: name, structural: s, validator: validator, cel: cel.NewValidator(s, true, celconfig.PerCallLimit)}, nil
}

// version returns the schema of a served version, nil for another.
func (s *Schemas) version(name string) *versionSchema { return s.versions[name] }

// decode does what the API server's decoder does to a custom resource in
// strict field validation (unstructuredSchemaCoercer.apply, then the
// defaulter): it prunes the fields the schema does not know, returning
// their paths, which strict validation refuses, and applies the schema's
// defaults. An error is a malformed object the API server refuses as a
// bad request.
func (vs *versionSchema) decode(u *unstructured.Unstructured) ([]string, error) {
	kind, apiVersion := u.GetKind(), u.GetAPIVersion()
	objectMeta, foundMeta, unknown, err := schemaobjectmeta.GetObjectMetaWithOptions(u.Object, schemaobjectmeta.ObjectMetaOptions{ReturnUnknownFieldPaths: true})
	if err != nil {
		return nil, err
	}
	unknown = append(unknown, structuralpruning.PruneWithOptions(u.Object, vs.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true})...)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(u.Object, vs.structural)
	ferr, paths := schemaobjectmeta.CoerceWithOptions(nil, u.Object, vs.structural, false, schemaobjectmeta.CoerceOptions{ReturnUnknownFieldPaths: true})
	if ferr != nil {
		return nil, ferr
	}
	unknown = append(unknown, paths...)
	u.SetKind(kind)
	u.SetAPIVersion(apiVersion)
	if foundMeta {
		if err := schemaobjectmeta.SetObjectMeta(u.Object, objectMeta); err != nil {
			return nil, err
		}
	}
	vs.setDefaults(u)
	return unknown, nil
}

// setDefaults applies the schema's defaults, as the API server does after
// decoding and again after the mutating webhooks.
func (vs *versionSchema) setDefaults(u *unstructured.Unstructured) {
	structuraldefaulting.Default(u.Object, vs.structural)
}

// validate is the custom resource strategy's PrepareForCreate and Validate
// (registry/customresource: strategy.go and validator.go) for a create:
// type, object metadata, the OpenAPI schema, embedded objects, list types,
// and the CEL rules unless an earlier error blocks them.
func (vs *versionSchema) validate(ctx context.Context, u *unstructured.Unstructured, group, kind string) field.ErrorList {
	delete(u.Object, "status") // the status subresource: create cannot set it
	u.SetGeneration(1)
	var errs field.ErrorList
	if u.GetKind() != kind {
		errs = append(errs, field.Invalid(field.NewPath("kind"), u.GetKind(), "must be "+kind))
	}
	if want := group + "/" + vs.version; u.GetAPIVersion() != want {
		errs = append(errs, field.Invalid(field.NewPath("apiVersion"), u.GetAPIVersion(), "must be "+want))
	}
	if len(errs) > 0 {
		return errs
	}
	errs = append(errs, validateObjectMeta(ctx, u)...)
	errs = append(errs, apiservervalidation.ValidateCustomResource(nil, u.UnstructuredContent(), vs.validator)...)
	errs = append(errs, vs.validateScale(u)...)
	errs = append(errs, schemaobjectmeta.Validate(ctx, nil, u.Object, vs.structural, false)...)
	errs = append(errs, structurallisttype.ValidateListSetsAndMaps(nil, vs.structural, u.Object)...)
	if blocking := blockingError(errs); blocking != nil {
		return append(errs, blocking.WithOrigin(RuleCEL))
	}
	celErrs, _ := vs.cel.Validate(ctx, nil, vs.structural, u.Object, nil, celconfig.RuntimeCELCostBudget)
	for _, e := range celErrs {
		if e.Origin == "" {
			e.Origin = RuleCEL
		}
	}
	return append(errs, celErrs...)
}

func validateObjectMeta(ctx context.Context, u *unstructured.Unstructured) field.ErrorList {
	fld := field.NewPath("metadata")
	raw, ok := u.Object["metadata"]
	m := &metav1.ObjectMeta{}
	if ok && raw != nil {
		asMap, isMap := raw.(map[string]any)
		if !isMap {
			return field.ErrorList{field.Invalid(fld, raw, fmt.Sprintf("expected map[string]interface{}, got %T", raw))}
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(asMap, m); err != nil {
			return field.ErrorList{field.Invalid(fld, raw, err.Error())}
		}
	}
	return apimachineryvalidation.ValidateObjectMetaDeclaratively(ctx, operation.Create, m, nil, true, apimachineryvalidation.NameIsDNSSubdomain, fld,
		utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta))
}

// validateScale is validator.go's ValidateScaleSpec and ValidateScaleStatus:
// the replicas the scale subresource points at are integers from 0 to
// MaxInt32, and its label selector a string. The paths are the CRD's
// JSONPaths, leading dot and all, as the API server reports them.
func (vs *versionSchema) validateScale(u *unstructured.Unstructured) field.ErrorList {
	if vs.scale == nil {
		return nil
	}
	var errs field.ErrorList
	for _, p := range []string{vs.scale.SpecReplicasPath, vs.scale.StatusReplicasPath} {
		replicas, _, err := unstructured.NestedInt64(u.Object, strings.Split(strings.TrimPrefix(p, "."), ".")...)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(p), replicas, err.Error()))
		case replicas < 0:
			errs = append(errs, field.Invalid(field.NewPath(p), replicas, "should be a non-negative integer"))
		case replicas > math.MaxInt32:
			errs = append(errs, field.Invalid(field.NewPath(p), replicas, fmt.Sprintf("should be less than or equal to %v", math.MaxInt32)))
		}
	}
	if p := vs.scale.LabelSelectorPath; p != nil {
		selector, _, err := unstructured.NestedString(u.Object, strings.Split(strings.TrimPrefix(*p, "."), ".")...)
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath(*p), selector, err.Error()))
		}
	}
	return errs
}

// standardFinalizers are the finalizers Kubernetes itself defines.
var standardFinalizers = []string{metav1.FinalizerOrphanDependents, metav1.FinalizerDeleteDependents, "kubernetes"}

// finalizerWarnings is the custom resource strategy's WarningsOnCreate
// (generateWarningsFromObj, validateKubeFinalizerName): a finalizer that is
// not a qualified name, or not domain-qualified, gets a warning.
func finalizerWarnings(u *unstructured.Unstructured) []string {
	fld := field.NewPath("metadata", "finalizers").String()
	finalizers := slices.Clone(u.GetFinalizers())
	slices.Sort(finalizers)
	var warnings []string
	for _, f := range slices.Compact(finalizers) {
		for _, msg := range utilvalidation.IsQualifiedName(f) {
			warnings = append(warnings, fmt.Sprintf("%s: %q: %s", fld, f, msg))
		}
		if !strings.Contains(f, "/") && !slices.Contains(standardFinalizers, f) {
			if strings.Contains(f, ".") {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers", fld, f))
			} else {
				warnings = append(warnings, fmt.Sprintf("%s: %q: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers", fld, f))
			}
		}
	}
	return warnings
}

// blockingError is strategy.go's hasBlockingErr: CEL rules are not run on
// an object with a field of the wrong type or over its size limits, whose
// cost could not be bounded.
func blockingError(errs field.ErrorList) *field.Error {
	for _, e := range errs {
		if e.Type == field.ErrorTypeNotSupported || e.Type == field.ErrorTypeRequired || e.Type == field.ErrorTypeTypeInvalid || e.Type == field.ErrorTypeTooLong || e.Type == field.ErrorTypeTooMany {
			return field.Invalid(nil, nil, "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation")
		}
	}
	return nil
}
