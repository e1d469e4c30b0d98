package conversion

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/randfill"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

// fuzzIterations is how many random objects each round trip converts. It
// costs a minute of `make test` per 10,000 under -race, where these pure
// functions gain nothing from it; every run draws a new seed, and
// FuzzRoundTrip (make fuzz) explores the same properties natively.
const fuzzIterations = 2000

// fuzzerFuncs fill objects the way the API server could hand them to us:
// blank TypeMeta, valid metadata, sane quantities (the apimachinery
// fuzzers), plus route lists that hit the interesting cases more often than
// chance: every pathType including unset, and routes that share host and
// path; the one access log format; and exposures of both types, most of
// them with parentRefs, whose optional fields are set or not.
func fuzzerFuncs(_ runtimeserializer.CodecFactory) []any {
	return []any{
		// Only the values the schema admits: conversion restores nothing
		// a v1 object cannot hold (validation.WithinSizeLimits).
		func(p *v1.PathType, c randfill.Continue) {
			*p = []v1.PathType{v1.PathTypePrefix, v1.PathTypeExact, ""}[c.Intn(3)]
		},
		func(t *v1.MatchType, c randfill.Continue) {
			*t = []v1.MatchType{v1.MatchExact, v1.MatchPresent}[c.Intn(2)]
		},
		func(m *v1.HTTPMethod, c randfill.Continue) {
			*m = []v1.HTTPMethod{"GET", "POST", "PATCH"}[c.Intn(3)]
		},
		func(m *v1.CORSMethod, c randfill.Continue) {
			*m = []v1.CORSMethod{"PUT", "DELETE", "*"}[c.Intn(3)]
		},
		func(s *v1.RedirectScheme, c randfill.Continue) {
			*s = []v1.RedirectScheme{"http", "https", ""}[c.Intn(3)]
		},
		func(t *v1.RedirectPathType, c randfill.Continue) {
			*t = []v1.RedirectPathType{v1.ReplaceFullPath, v1.ReplacePrefixMatch}[c.Intn(2)]
		},
		func(r *v1.RetryCondition, c randfill.Continue) {
			*r = []v1.RetryCondition{v1.RetryOnConnectError, v1.RetryOnTimeout, v1.RetryOnHTTP502, v1.RetryOnHTTP503, v1.RetryOnHTTP504}[c.Intn(5)]
		},
		func(u *v1.ConfigUpdateStrategy, c randfill.Continue) {
			*u = []v1.ConfigUpdateStrategy{v1.ConfigUpdateReload, v1.ConfigUpdateRollout, ""}[c.Intn(3)]
		},
		func(f *v1.AccessLogFormat, _ randfill.Continue) { *f = v1.AccessLogJSON },
		func(r *v1.Route, c randfill.Continue) {
			c.FillNoCustom(r)
			r.MaxBodySize = []string{"", "0", "10m", "9999g"}[c.Intn(4)]
		},
		func(s *v1.APIGatewaySpec, c randfill.Continue) {
			c.FillNoCustom(s)
			if len(s.Routes) > 0 && c.Bool() {
				twin := *s.Routes[0].DeepCopy()
				c.Fill(&twin.PathType)
				c.Fill(&twin.BackendService)
				s.Routes = append(s.Routes, twin)
			}
			// The filler calls the Exposure function below for the field
			// itself, so it is never nil unless unset here: unset, the
			// Ingress default, is what most gateways have.
			if c.Intn(3) == 0 {
				s.Exposure = nil
			}
		},
		func(e *v1.Exposure, c randfill.Continue) {
			e.Type = []v1.ExposureType{v1.ExposureIngress, v1.ExposureHTTPRoute, v1.ExposureHTTPRoute}[c.Intn(3)]
			if e.Type != v1.ExposureIngress || c.Intn(4) == 0 {
				e.HTTPRoute = &v1.HTTPRouteExposure{}
				c.Fill(e.HTTPRoute)
			}
		},
		func(h *v1.HTTPRouteExposure, c randfill.Continue) {
			c.FillNoCustom(h)
			if len(h.ParentRefs) > 0 && c.Bool() {
				// Another listener of the first Gateway.
				twin := *h.ParentRefs[0].DeepCopy()
				twin.SectionName = nil
				c.Fill(&twin.SectionName)
				h.ParentRefs = append(h.ParentRefs, twin)
			}
		},
	}
}

func newFiller(src rand.Source) *randfill.Filler {
	codecs := runtimeserializer.NewCodecFactory(runtime.NewScheme())
	return fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, fuzzerFuncs), src, codecs).
		NilChance(0.3).NumElements(0, 4)
}

// annotationValues are the DataAnnotation values a fuzzed object is given
// besides none and random text: the look-alikes that must stay a user's.
var annotationValues = []string{
	"", "{}", "null", `{"spec":{}}`, `{"spec":null}`, `{"annotation":"x"}`, `{"annotation":null}`,
	`{"spec":{"routes":[]}}`, `{"spec":{"tls":[]}}`, `{"spec":{"ingressClassName":"nginx"}} `,
}

// setAnnotation gives obj, at random, no DataAnnotation, random text, a
// look-alike or (for v1 objects, where anything goes) a value in our format.
func setAnnotation(c *randfill.Filler, r *rand.Rand, annotations *map[string]string, allowOurs bool) {
	var value string
	switch r.Intn(5) {
	case 0, 1:
		return
	case 2:
		c.Fill(&value)
	case 3:
		value = annotationValues[r.Intn(len(annotationValues))]
	case 4:
		if !allowOurs {
			return
		}
		var spec v1.APIGatewaySpec
		c.Fill(&spec)
		var ok bool
		var err error
		if value, ok, err = annotationFor(&spec, nil); err != nil || !ok {
			value = "{}"
		}
	}
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[DataAnnotation] = value
}

// checkV1RoundTrip converts hub to v1alpha1 and back and fails unless it
// gets hub again.
func checkV1RoundTrip(t *testing.T, hub *v1.APIGateway) {
	t.Helper()
	before := hub.DeepCopy()
	spoke := &v1alpha1.APIGateway{}
	require.NoError(t, V1ToV1alpha1(hub, spoke))
	after := &v1.APIGateway{}
	V1alpha1ToV1(spoke, after)
	if !apiequality.Semantic.DeepEqual(before, after) {
		t.Fatalf("v1 -> v1alpha1 -> v1 changed the object (-before +after):\n%s\nv1alpha1 was %+v", cmp.Diff(before, after), spoke)
	}
	if !apiequality.Semantic.DeepEqual(before, hub) {
		t.Fatalf("conversion changed its source:\n%s", cmp.Diff(before, hub))
	}
}

// checkV1alpha1RoundTrip converts spoke to v1 and back and fails unless it
// gets spoke again.
func checkV1alpha1RoundTrip(t *testing.T, spoke *v1alpha1.APIGateway) {
	t.Helper()
	before := spoke.DeepCopy()
	hub := &v1.APIGateway{}
	V1alpha1ToV1(spoke, hub)
	after := &v1alpha1.APIGateway{}
	require.NoError(t, V1ToV1alpha1(hub, after))
	if !apiequality.Semantic.DeepEqual(before, after) {
		t.Fatalf("v1alpha1 -> v1 -> v1alpha1 changed the object (-before +after):\n%s\nv1 was %+v", cmp.Diff(before, after), hub)
	}
	if !apiequality.Semantic.DeepEqual(before, spoke) {
		t.Fatalf("conversion changed its source:\n%s", cmp.Diff(before, spoke))
	}
}

func TestFuzzV1RoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	f := newFiller(r)
	for range fuzzIterations {
		hub := &v1.APIGateway{}
		f.Fill(hub)
		setAnnotation(f, r, &hub.Annotations, true)
		checkV1RoundTrip(t, hub)
	}
}

func TestFuzzV1alpha1RoundTrip(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	f := newFiller(r)
	for range fuzzIterations {
		spoke := &v1alpha1.APIGateway{}
		f.Fill(spoke)
		setAnnotation(f, r, &spoke.Annotations, false)
		checkV1alpha1RoundTrip(t, spoke)
	}
}

// TestFuzzV1alpha1EditsKeepV1Data is the read-modify-write of a v1alpha1
// client: whatever it changes among the fields v1alpha1 has (image,
// replicas, backends, status, labels) must reach v1 with every v1-only field
// intact, exactly as if the same edit had been made through v1.
func TestFuzzV1alpha1EditsKeepV1Data(t *testing.T) {
	r := rand.New(rand.NewSource(rand.Int63()))
	f := newFiller(r)
	for range fuzzIterations {
		hub := &v1.APIGateway{}
		f.Fill(hub)
		spoke := &v1alpha1.APIGateway{}
		require.NoError(t, V1ToV1alpha1(hub, spoke))

		want := hub.DeepCopy()
		f.Fill(&spoke.Spec.Image)
		want.Spec.Image = spoke.Spec.Image
		f.Fill(&spoke.Spec.Replicas)
		want.Spec.Replicas = copyInt32(spoke.Spec.Replicas)
		for i := range spoke.Spec.Routes {
			f.Fill(&spoke.Spec.Routes[i].ServiceName)
			f.Fill(&spoke.Spec.Routes[i].ServicePort)
			want.Spec.Routes[i].BackendService = v1.BackendService{Name: spoke.Spec.Routes[i].ServiceName, Port: spoke.Spec.Routes[i].ServicePort}
		}
		f.Fill(&spoke.Status)
		want.Status = *spoke.Status.DeepCopy()
		f.Fill(&spoke.Labels)
		want.Labels = spoke.Labels

		got := &v1.APIGateway{}
		V1alpha1ToV1(spoke, got)
		if !apiequality.Semantic.DeepEqual(want, got) {
			t.Fatalf("a v1alpha1 edit lost or changed v1 data (-want +got):\n%s", cmp.Diff(want, got))
		}
	}
}

// FuzzRoundTrip is the native fuzz target: the fuzzer's bytes drive randfill
// to build one v1 and one v1alpha1 object, and its string becomes their
// DataAnnotation (when not empty), so it also explores what a user may
// write under that name. Both must survive the round trip.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("seed"), "")
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, exactUsers)
	f.Add([]byte("tls"), tlsOnly)
	f.Add([]byte("look-alike"), `{"annotation":"x"}`)
	f.Fuzz(func(t *testing.T, data []byte, annotation string) {
		// Objects reach conversion as JSON, which cannot carry invalid
		// UTF-8: the encoder would replace it, so it is no input of ours.
		annotation = strings.ToValidUTF8(annotation, "\uFFFD")
		c := randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 4).
			Funcs(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, fuzzerFuncs)(runtimeserializer.CodecFactory{})...)

		hub := &v1.APIGateway{}
		c.Fill(hub)
		spoke := &v1alpha1.APIGateway{}
		c.Fill(spoke)
		if annotation != "" {
			hub.Annotations = map[string]string{DataAnnotation: annotation}
			spoke.Annotations = map[string]string{DataAnnotation: annotation}
		}
		checkV1RoundTrip(t, hub)
		if _, ours := decodeAnnotation(annotation); ours {
			// A value in our format describes v1-only data for some v1
			// object, not necessarily for this one: the spoke round trip
			// holds only for the spoke V1ToV1alpha1 wrote from it.
			spoke = &v1alpha1.APIGateway{}
			hubFromAnnotation := &v1.APIGateway{}
			V1alpha1ToV1(&v1alpha1.APIGateway{ObjectMeta: hub.ObjectMeta}, hubFromAnnotation)
			require.NoError(t, V1ToV1alpha1(hubFromAnnotation, spoke))
		}
		checkV1alpha1RoundTrip(t, spoke)
	})
}
