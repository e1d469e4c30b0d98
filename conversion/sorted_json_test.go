package conversion

import (
	"encoding/json"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	v1 "example.com/apigateway-operator/api/v1"
)

// checkSortedJSON fails unless sortedV1OnlyJSON makes of full exactly the
// bytes v1OnlyJSONViaMaps makes, with and without the routes. full is
// what encoding/json wrote, which sortedV1OnlyJSON must always read.
func checkSortedJSON(t *testing.T, full []byte) {
	t.Helper()
	for _, plainRoutes := range []bool{false, true} {
		want, err := v1OnlyJSONViaMaps(full, plainRoutes)
		require.NoError(t, err)
		got, err := sortedV1OnlyJSON(full, plainRoutes)
		require.NoError(t, err, "%s", full)
		require.Equal(t, string(want), string(got), "plain routes %t, from %s", plainRoutes, full)
	}
}

func TestFuzzSortedV1OnlyJSONMatchesMaps(t *testing.T) {
	f := newFiller(rand.NewSource(rand.Int63()))
	for range fuzzIterations {
		spec := &v1.APIGatewaySpec{}
		f.Fill(spec)
		full, err := json.Marshal(spec)
		require.NoError(t, err)
		checkSortedJSON(t, full)
	}
}

// TestSortedV1OnlyJSONStrings covers the strings the random ones rarely
// hold: what encoding/json escapes, and names whose order depends on
// decoding them.
func TestSortedV1OnlyJSONStrings(t *testing.T) {
	odd := []string{
		"", "plain", `<script>&amp;</script>`, `quote " and \ backslash`, "\x00\x01\x1f\x7f", "line\u2028para\u2029",
		"ü", "😀", "\xff invalid UTF-8", "\ufffd", "tab\tnew\nline", "/slash/",
	}
	limits := corev1.ResourceList{}
	for i, s := range odd {
		limits[corev1.ResourceName(s)] = *resource.NewQuantity(int64(i), resource.DecimalSI)
	}
	for name, spec := range map[string]v1.APIGatewaySpec{
		"odd strings everywhere": {
			Image: odd[2], IngressClassName: ptr.To(odd[3]),
			Routes: []v1.Route{{Host: odd[4], Path: odd[5], PathType: v1.PathType(odd[6]), BackendService: v1.BackendService{Name: odd[7]}}},
			TLS:    []v1.GatewayTLS{{Hosts: odd, SecretName: odd[8]}},
		},
		"odd resource names, claims before limits": {
			Resources: &corev1.ResourceRequirements{Limits: limits, Requests: limits, Claims: []corev1.ResourceClaim{{Name: odd[2], Request: odd[9]}}},
		},
		"no routes":    {Routes: nil, TLS: []v1.GatewayTLS{}},
		"empty routes": {Routes: []v1.Route{}, Image: "x", Replicas: ptr.To[int32](-1)},
	} {
		t.Run(name, func(t *testing.T) {
			full, err := json.Marshal(spec)
			require.NoError(t, err)
			checkSortedJSON(t, full)
		})
	}
}

// FuzzSortedV1OnlyJSON feeds any JSON to both: where both read it, they
// must agree, which is what makes sortedV1OnlyJSON safe for a field v1
// gains later, of whatever shape.
func FuzzSortedV1OnlyJSON(f *testing.F) {
	for _, seed := range []string{
		`{"image":"a","replicas":2,"routes":[{"host":"h","path":"/","pathType":"Exact","backendService":{"name":"s","port":80}}],"tls":[{"hosts":["h"],"secretName":"t"}]}`,
		`{"z":1,"a":[{"backendService":1,"b":[[{"backendService":2}]]}],"routes":{"backendService":3}}`,
		`{"routes":[{"backendService":1},2,[{"backendService":3}]], "x" : -1.5e+07 , "\u0041":"\u003c","<":"\ud83d\ude00"}`,
		`null`, `[]`, `{"a":{"a":{"a":{}}}}`, `{"a":1}{"b":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, full []byte) {
		for _, plainRoutes := range []bool{false, true} {
			want, err := v1OnlyJSONViaMaps(full, plainRoutes)
			if err != nil {
				return
			}
			got, err := sortedV1OnlyJSON(full, plainRoutes)
			if err != nil {
				return // v1OnlyJSON falls back to the maps
			}
			require.Equal(t, string(want), string(got), "plain routes %t", plainRoutes)
		}
	})
}

// BenchmarkV1OnlyJSON compares the two ways to the same bytes on the
// 10-route spec of benchGateway.
func BenchmarkV1OnlyJSON(b *testing.B) {
	full, err := json.Marshal(benchGateway().Spec)
	require.NoError(b, err)
	for name, encode := range map[string]func([]byte, bool) (json.RawMessage, error){
		"maps": v1OnlyJSONViaMaps, "sorted": sortedV1OnlyJSON,
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encode(full, false); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
