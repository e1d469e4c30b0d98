package conversion

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
)

func TestV1alpha1AnnotationBytes(t *testing.T) {
	longExact := make([]v1.Route, 100)
	for i := range longExact {
		longExact[i] = hubRoute("api.example.com", "/"+strings.Repeat("a&", 511)+string(rune('a'+i%26)), v1.PathTypeExact, "s", 80)
	}
	tests := map[string]struct {
		gw      *v1.APIGateway
		overMax bool
	}{
		"plain: no annotation": {gw: hubGateway(nil, v1.APIGatewaySpec{Routes: []v1.Route{hubRoute("a.example.com", "/", v1.PathTypePrefix, "s", 80)}})},
		"own annotations count": {gw: hubGateway(map[string]string{"team": strings.Repeat("x", 300<<10)},
			v1.APIGatewaySpec{Routes: []v1.Route{hubRoute("a.example.com", "/", v1.PathTypePrefix, "s", 80)}}), overMax: true},
		// 100 Exact routes of 1,023-byte paths: about 105 KB unescaped,
		// 620 KB when every '&' took six bytes.
		"100 long Exact routes fit": {gw: hubGateway(nil, v1.APIGatewaySpec{Routes: longExact})},
		"with a large own annotation they do not": {gw: hubGateway(map[string]string{"note": strings.Repeat("x", 150<<10)},
			v1.APIGatewaySpec{Routes: longExact}), overMax: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := V1alpha1AnnotationBytes(tc.gw)
			require.NoError(t, err)
			alpha := &v1alpha1.APIGateway{}
			require.NoError(t, V1ToV1alpha1(tc.gw, alpha))
			want := 0
			for k, v := range alpha.Annotations {
				want += len(k) + len(v)
			}
			assert.Equal(t, want, got, "must count what conversion writes")
			assert.Equal(t, tc.overMax, got > MaxV1alpha1AnnotationBytes, "size %d", got)
		})
	}
}

// TestV1alpha1AnnotationBytesBound holds the cheap bound the webhook
// checks first, and the limits policy's CEL bound (every 2nd object: CEL
// is slower), above the exact size for random objects with every field v1
// has, random strings, annotations in our format and foreign text
// included (fuzz_test.go's filler).
func TestV1alpha1AnnotationBytesBound(t *testing.T) {
	p := newLimitsPolicy(t)
	f := newFiller(rand.NewSource(1))
	r := rand.New(rand.NewSource(2))
	for i := range 5000 {
		gw := &v1.APIGateway{}
		f.Fill(gw)
		setAnnotation(f, r, &gw.Annotations, true)
		exact, err := V1alpha1AnnotationBytes(gw)
		require.NoError(t, err)
		require.GreaterOrEqual(t, V1alpha1AnnotationBytesBound(gw), exact, "object %d: %+v", i, gw.Spec)
		if i%2 == 0 {
			bound, _ := p.boundOf(t, gw)
			require.GreaterOrEqual(t, bound, int64(exact), "the policy's bound, object %d: %+v %v", i, gw.Spec, gw.Annotations)
		}
	}
}
