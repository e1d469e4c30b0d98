package controller

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservercel "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/render"
)

// parityCase is a gateway's name and one route, as a user writes them,
// and whether the API admits them. Every other field of the gateway is
// valid.
type parityCase struct {
	name  string // "" for parityName
	route v1.Route
	valid bool
}

const parityName = "parity"

// TestValidationParity sends one table of names, hosts, paths, pathTypes,
// backends and traffic settings through the three layers that judge them,
// and demands the same verdict from each, and on a refusal the same
// fields:
//
//   - the real API server, with the CRD installed and no webhook, so its
//     schema and CEL rules alone decide, as while the webhook is down (a
//     server-side dry run: nothing is stored);
//   - package validation, which admission runs;
//   - the renderer, which refuses to write what it does not trust.
//
// The schema's rules are a second copy of the package's, kept because they
// guard the API when no webhook answers; this test is what keeps the two
// copies one rule.
func TestValidationParity(t *testing.T) {
	for name, tc := range parityCases() {
		t.Run(name, func(t *testing.T) {
			gw := parityGateway(tc)
			api := apiServerVerdict(t, gw)
			pkg := fields(validation.Validate(nil, gw))
			_, err := render.Config(gw, render.Options{})
			rendered := renderFields(t, err)

			assert.Equal(t, !tc.valid, len(api) > 0, "API server: refused %v", api)
			assert.Equal(t, !tc.valid, len(pkg) > 0, "validation package: refused %v", pkg)
			assert.Equal(t, !tc.valid, len(rendered) > 0, "renderer: refused %v", rendered)
			assert.Equal(t, api, pkg, "the API server and the validation package refuse different fields")
			assert.Equal(t, pkg, rendered, "the validation package and the renderer refuse different fields")
		})
	}
}

// parityCases are the table: every kind of name, host, path, pathType,
// backend and traffic setting (trafficParityCases) the rules tell apart,
// on both sides of each limit.
func parityCases() map[string]parityCase {
	ok := v1.Route{Host: "api.example.com", Path: "/users/", PathType: v1.PathTypePrefix,
		BackendService: v1.BackendService{Name: "user-service", Port: 8080}}
	cases := map[string]parityCase{}
	add := func(kind, value string, valid bool, set func(*parityCase)) {
		tc := parityCase{route: ok, valid: valid}
		set(&tc)
		cases[fmt.Sprintf("%s %q", kind, truncate(value))] = tc
	}
	for value, valid := range map[string]bool{
		"gw": true, "a": true, "my-gateway-2": true, strings.Repeat("a", 63): true,
		strings.Repeat("a", 64): false, "dotted.gw": false, "1gateway": false, "Gateway": false,
		"gw-": false, "-gw": false, "a_b": false, "a--b": true,
	} {
		add("name", value, valid, func(tc *parityCase) { tc.name = value })
	}
	for value, valid := range parityHosts() {
		add("host", value, valid, func(tc *parityCase) { tc.route.Host = v1.Hostname(value) })
	}
	for value, valid := range parityPaths() {
		add("path", value, valid, func(tc *parityCase) { tc.route.Path = v1.HTTPPath(value) })
	}
	for value, valid := range map[string]bool{"Prefix": true, "Exact": true, "": false, "Regex": false, "prefix": false} {
		add("pathType", value, valid, func(tc *parityCase) { tc.route.PathType = v1.PathType(value) })
	}
	backendNames := map[string]bool{
		"svc": true, "a": true, strings.Repeat("s", 63): true, strings.Repeat("s", 64): false, "": false,
		"1svc": false, "Svc": false, "svc.ns": false, "svc-": false, `web";return 200;#`: false,
	}
	for _, s := range hostileStrings() {
		backendNames[s] = false
	}
	for value, valid := range backendNames {
		add("backend name", value, valid, func(tc *parityCase) { tc.route.BackendService.Name = v1.ServiceName(value) })
	}
	for value, valid := range map[int32]bool{1: true, 80: true, 65535: true, 0: false, -1: false, 65536: false} {
		add("backend port", fmt.Sprint(value), valid, func(tc *parityCase) { tc.route.BackendService.Port = value })
	}
	trafficParityCases(add)
	return cases
}

func parityHosts() map[string]bool {
	label63 := strings.Repeat("a", 63)
	return map[string]bool{
		"api.example.com": true, "a": true, "localhost": true, "xn--bcher-kva.example": true,
		"*.example.com": true, "*.eu.example.com": true, "a-b.c-d.example": true,
		label63 + ".example.com": true, strings.Repeat("a", 64) + ".example.com": false,
		maximalHost(1, false): true, maximalHost(2, true): true, "a" + maximalHost(3, false): false,
		"*.com": false, "*.internal": false, "*": false, "*.": false, "*.*.example.com": false,
		"a.*.example.com": false, "*api.example.com": false, "api.example.com.": false, "API.example.com": false,
		"bad_host": false, "-api.example.com": false, "api-.example.com": false, "a..b": false, ".a": false,
		"api example.com": false, "api.example.com:80": false, "https://api.example.com": false,
		"bücher.example": false, "api.example.com;": false, "$host": false, "": false,
		"10.0.0.1": false, "*.10.0.0.1": false, "::1": false, "[::1]": false, "1.2.3.4.5": true,
		// No IP address to either parser: a leading zero is refused in
		// IPv4 (Go's net.ParseIP and the API server's isIP agree).
		"010.0.0.1": true,
	}
}

func parityPaths() map[string]bool {
	return map[string]bool{
		"/": true, "/users/": true, "/users": true, "/a-b._~!&()*+,=:@/": true, "/.well-known/x": true,
		"/a..b/...": true, "/" + strings.Repeat("a", 1023): true, "/" + strings.Repeat("a", 1024): false,
		"": false, "users": false, "a/": false, "/a b": false, "/a;b": false, "/a{b": false, `/a"b`: false,
		"/a'b": false, "/$host": false, "/a#b": false, "/a?b": false, `/a\b`: false, "/café": false,
		"/a\x00": false, "/a\nb": false,
		// Dot and empty segments, written and encoded.
		"/a//b": false, "/a/./b": false, "/a/../b": false, "/a/.": false, "/a/..": false, "//": false,
		"/a%2Fb": true, "/a%2F/b": false, "/a/%2E%2E/b": false, "/a/%2e": false, "/a%2F%2E%2E": false,
		"/a/%2E%2Eb": true, "/a%2F.x": true,
		// Encoded slashes once decoded: the Ingress API refuses them.
		"/a%252Fb": false, "/a%25%32%46": false, "/a%252f": false, "/100%25": true, "/100%2525": true,
		// Well-formed escapes only.
		"/a%": false, "/a%2": false, "/a%zz": false, "/%%41": false, "/%41": true, "/%75sers": true,
		// Escaped characters the path may not hold, control characters
		// and whitespace.
		"/a%20b": false, "/a%22": false, "/a%23": false, "/%24host": false, "/a%27": false, "/a%3B": false,
		"/a%3c": false, "/a%3E": false, "/a%3F": false, "/a%5B": false, "/a%5C": false, "/a%5d": false,
		"/a%5E": false, "/a%60": false, "/a%7B": false, "/a%7C": false, "/a%7d": false, "/a%7F": false,
		"/a%00": false, "/a%0A": false, "/a%0d%0a": false, "/a%1F": false, "/a%21%26%2B%3D": true,
		// UTF-8: well formed, not a control or space.
		"/caf%C3%A9": true, "/caf%c3%a9": true, "/%F0%9F%98%80": true, "/%E2%82%AC": true, "/%EF%BF%BD": true,
		"/%FF": false, "/%C3": false, "/%C3%28": false, "/%C0%AF": false, "/%E0%80%AF": false,
		"/%ED%A0%80": false, "/%F4%90%80%80": false, "/%F8%88%80%80%80": false, "/%80": false,
		"/a%C2%A0b": false, "/a%C2%85": false, "/a%C2%9F": false, "/a%C2%A1": true, "/a%E1%9A%80": false,
		"/a%E2%80%80": false, "/a%E2%80%8A": false, "/a%E2%80%8B": true, "/a%E2%80%A8": false,
		"/a%E2%80%A9": false, "/a%E2%80%AF": false, "/a%E2%81%9F": false, "/a%E3%80%80": false,
		"/a%E3%80%81": true, "/a%EE%80%80": true,
	}
}

func truncate(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", s[:30], len(s))
	}
	return s
}

// parityGateway is a valid gateway with tc's name and its one route.
func parityGateway(tc parityCase) *v1.APIGateway {
	gw := gateway(parityName, tc.route)
	if tc.name != "" {
		gw.Name = tc.name
	}
	gw.Namespace, gw.UID, gw.Generation = "default", "", 0
	gw.Spec.Image, gw.Spec.Replicas = "nginx:1.27", ptr.To[int32](2)
	return gw
}

// apiServerVerdict creates gw as a dry run and returns the distinct fields
// of the API server's refusal, none when it admits gw. The object is sent
// as written, empty strings included, so the schema's defaults do not
// fill in what the case leaves empty.
func apiServerVerdict(t *testing.T, gw *v1.APIGateway) []string {
	t.Helper()
	r := gw.Spec.Routes[0]
	// The traffic settings as JSON writes them: each is optional, and an
	// empty one is unset to every layer, so omitempty drops nothing a
	// layer would judge.
	route, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&r)
	require.NoError(t, err)
	maps.Copy(route, map[string]any{
		"host": string(r.Host), "path": string(r.Path), "pathType": string(r.PathType),
		"backendService": map[string]any{"name": string(r.BackendService.Name), "port": int64(r.BackendService.Port)},
	})
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1.GroupVersion.String(), "kind": "APIGateway",
		"metadata": map[string]any{"name": gw.Name, "namespace": gw.Namespace},
		"spec": map[string]any{
			"image": gw.Spec.Image, "replicas": int64(*gw.Spec.Replicas),
			"routes": []any{route},
		},
	}}
	err = env.Client.Create(t.Context(), obj, client.DryRunAll)
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status) && apierrors.IsInvalid(err), "not a verdict on the object: %v", err)
	var got []string
	root := false
	for _, c := range status.Status().Details.Causes {
		if c.Field == rootField {
			root = true
			continue
		}
		got = append(got, c.Field)
	}
	// The CRD's one rule at the object's root is the name rule (only a
	// root rule may read metadata.name, and a CRD cannot point its errors
	// at a metadata field), so the API server reports it at the root.
	// Beside other errors, a root cause says instead that the root rule
	// was not checked.
	if root && len(got) == 0 {
		got = append(got, "metadata.name")
	}
	return distinct(got)
}

// rootField is how a StatusCause names the object's root: the field path
// of the CRD's root-level rules.
const rootField = "<nil>"

// renderFields are the distinct fields of the renderer's refusal.
func renderFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status), "the renderer refused without field errors: %v", err)
	var got []string
	for _, c := range status.Status().Details.Causes {
		got = append(got, c.Field)
	}
	return distinct(got)
}

// fields are the distinct fields of errs.
func fields(errs field.ErrorList) []string {
	var got []string
	for _, e := range errs {
		got = append(got, e.Field)
	}
	return distinct(got)
}

func distinct(fields []string) []string {
	slices.Sort(fields)
	return slices.Compact(fields)
}

// TestPathParityOverUnicode holds the CRD's rules on a path to package
// validation's for every Unicode code point, percent-encoded as UTF-8:
// the schema lists as encoded bytes the control and whitespace characters
// the package finds with unicode.IsControl and unicode.IsSpace, and only
// checking every code point shows the list complete. The path's rules run
// in the API server's own CEL validator, in process (the table above sends
// its cases through a real API server; a million of them would take
// minutes). Code points go in chunks as long as a path may be, and a chunk
// a layer refuses is split until each refusal is pinned to one code point.
func TestPathParityOverUnicode(t *testing.T) {
	schema := crdPathSchema(t)
	celRefuses := func(path string) bool {
		errs, _ := schema.validator.Validate(t.Context(), field.NewPath("path"), schema.structural, path, nil, celconfig.RuntimeCELCostBudget)
		return len(errs) > 0
	}
	pkgRefuses := func(path string) bool {
		r := v1.Route{Host: "api.example.com", Path: v1.HTTPPath(path), PathType: v1.PathTypePrefix, BackendService: v1.BackendService{Name: "s", Port: 80}}
		return len(validation.ValidateRoute(&r, field.NewPath("spec", "routes"), 0)) > 0
	}
	refused := 0
	var check func(lo, hi rune)
	check = func(lo, hi rune) {
		path := encodedPath(lo, hi)
		cel, pkg := celRefuses(path), pkgRefuses(path)
		switch {
		case !cel && !pkg:
			return
		case hi-lo == 1:
			require.Equal(t, pkg, cel, "U+%04X (%s): the package refuses it: %v; the schema: %v", lo, path, pkg, cel)
			refused++
			return
		}
		mid := lo + (hi-lo)/2
		check(lo, mid)
		check(mid, hi)
	}
	const chunk = 80 // 80 four-byte code points, 12 characters each, fit in 1024
	for lo := rune(utf8.RuneSelf); lo <= unicode.MaxRune; lo += chunk {
		hi := min(lo+chunk, unicode.MaxRune+1)
		if lo < 0xE000 && hi > 0xD800 {
			// Surrogates have no UTF-8 form; their ranges go alone.
			check(lo, max(lo, 0xD800))
			check(min(hi, 0xE000), hi)
			continue
		}
		check(lo, hi)
	}
	// The C1 controls and the 19 non-ASCII White_Space characters.
	assert.Equal(t, 32+19-1, refused, "U+0085 is both")
}

// encodedPath is "/" and the code points lo to hi-1, surrogates left out,
// each percent-encoded as UTF-8.
func encodedPath(lo, hi rune) string {
	var b strings.Builder
	b.WriteByte('/')
	for r := lo; r < hi; r++ {
		if 0xD800 <= r && r < 0xE000 {
			continue
		}
		for _, c := range []byte(string(r)) {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// pathSchema is the v1 CRD's schema of a route's path, with its CEL rules
// compiled as the API server compiles them.
type pathSchema struct {
	structural *structuralschema.Structural
	validator  *apiservercel.Validator
}

func crdPathSchema(t *testing.T) pathSchema {
	t.Helper()
	props := crdSchema(t, "v1").Properties["spec"].Properties["routes"].Items.Schema.Properties["path"]
	var internal apiextensions.JSONSchemaProps
	require.NoError(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&props, &internal, nil))
	s, err := structuralschema.NewStructural(&internal)
	require.NoError(t, err)
	v := apiservercel.NewValidator(s, false, celconfig.PerCallLimit)
	require.NotNil(t, v, "the path schema has no CEL rules")
	return pathSchema{structural: s, validator: v}
}

// TestV1alpha1SchemaRepeatsV1Rules: a write through v1alpha1 meets the
// v1alpha1 schema only, before conversion, so while the webhook is down
// its rules on names, hosts, prefixes and Service names are all that
// guards the proxy configuration. They must be the v1 rules the table
// above holds to the package, word for word.
func TestV1alpha1SchemaRepeatsV1Rules(t *testing.T) {
	v1Schema, v1alpha1Schema := crdSchema(t, "v1"), crdSchema(t, "v1alpha1")
	route := func(s *apiextensionsv1.JSONSchemaProps) map[string]apiextensionsv1.JSONSchemaProps {
		return s.Properties["spec"].Properties["routes"].Items.Schema.Properties
	}
	v1Route, v1alpha1Route := route(v1Schema), route(v1alpha1Schema)
	assert.Equal(t, v1Schema.XValidations, v1alpha1Schema.XValidations, "the name rule")
	assert.Equal(t, v1Route["host"].XValidations, v1alpha1Route["host"].XValidations, "host")
	assert.Equal(t, v1Route["path"].XValidations, v1alpha1Route["prefix"].XValidations, "path and prefix")
	assert.Equal(t, v1Route["backendService"].Properties["name"].XValidations, v1alpha1Route["serviceName"].XValidations, "Service name")
}

// crdSchema is the schema of version of the CRD in manifests/crd/bases.
func crdSchema(t *testing.T, version string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(env.Root, "manifests", "crd", "bases", "example.com_apigateways.yaml"))
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.UnmarshalStrict(data, crd))
	i := slices.IndexFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == version })
	require.GreaterOrEqual(t, i, 0, "no version %s", version)
	return crd.Spec.Versions[i].Schema.OpenAPIV3Schema
}
