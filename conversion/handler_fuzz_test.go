package conversion

import (
	"encoding/json"
	"math/rand"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	sigsjson "sigs.k8s.io/json"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1alpha1"
	"example.com/apigateway-operator/test/testenv"
)

// handlerFuzzObjects is how many random objects each direction sends
// through the handler: that it matches the pure functions, which the
// round trips above test on many more, and FuzzConvertHandler fuzzes.
const handlerFuzzObjects = 500

// TestFuzzHandlerMatchesPureFunctions proves that the handler, which
// decodes and encodes with json/v2, converts exactly as the pure functions
// do on objects decoded by apimachinery, which controller-runtime's handler
// used: random objects are sent as encoding/json writes them, in reviews of
// random size (so both the serial and the parallel path run), and each
// converted object must decode, again with apimachinery, to the pure
// functions' result, and its JSON must be the same as what encoding/json
// writes for that result.
func TestFuzzHandlerMatchesPureFunctions(t *testing.T) {
	decoder := runtimeserializer.NewCodecFactory(testenv.NewScheme()).UniversalDeserializer()
	h := NewWebhookHandler()
	r := rand.New(rand.NewSource(rand.Int63()))
	f := newFiller(r)

	t.Run("v1 to v1alpha1", func(t *testing.T) {
		fuzzHandler(t, h, r, decoder, v1alpha1APIVersion, func() (runtime.Object, runtime.Object) {
			hub := &v1.APIGateway{}
			f.Fill(hub)
			setAnnotation(f, r, &hub.Annotations, true)
			hub.TypeMeta = metav1.TypeMeta{APIVersion: v1APIVersion, Kind: gatewayKind}
			return hub, &v1alpha1.APIGateway{}
		}, func(src, dst runtime.Object) {
			require.NoError(t, V1ToV1alpha1(src.(*v1.APIGateway), dst.(*v1alpha1.APIGateway)))
		})
	})
	t.Run("v1alpha1 to v1", func(t *testing.T) {
		fuzzHandler(t, h, r, decoder, v1APIVersion, func() (runtime.Object, runtime.Object) {
			spoke := &v1alpha1.APIGateway{}
			if r.Intn(2) == 0 {
				// One that V1ToV1alpha1 wrote, so that the annotation's
				// data is restored.
				hub := &v1.APIGateway{}
				f.Fill(hub)
				require.NoError(t, V1ToV1alpha1(hub, spoke))
			} else {
				f.Fill(spoke)
				setAnnotation(f, r, &spoke.Annotations, false)
			}
			spoke.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1APIVersion, Kind: gatewayKind}
			return spoke, &v1.APIGateway{}
		}, func(src, dst runtime.Object) {
			V1alpha1ToV1(src.(*v1alpha1.APIGateway), dst.(*v1.APIGateway))
		})
	})
}

// fuzzHandler sends handlerFuzzObjects objects made by newObject to h, for
// conversion to desired, and compares each result with what convert makes
// of the object apimachinery decodes.
func fuzzHandler(t *testing.T, h http.Handler, r *rand.Rand, decoder runtime.Decoder, desired string,
	newObject func() (src, dst runtime.Object), convert func(src, dst runtime.Object),
) {
	for sent := 0; sent < handlerFuzzObjects; {
		n := min(1+r.Intn(2*parallelThreshold), handlerFuzzObjects-sent)
		sent += n
		raws := make([]string, n)
		wants := make([]runtime.Object, n)
		for i := range raws {
			src, dst := newObject()
			raw, err := json.Marshal(src)
			require.NoError(t, err)
			raws[i] = string(raw)
			decoded, _, err := decoder.Decode(raw, nil, nil)
			require.NoError(t, err)
			convert(decoded, dst)
			setTypeMeta(dst, desired)
			wants[i] = dst
		}
		code, resp := post(t, h, review(desired, raws...))
		require.Equal(t, http.StatusOK, code)
		got := requireSuccess(t, resp, desired, n)
		for i, want := range wants {
			decoded, _, err := decoder.Decode(got[i].Raw, nil, nil)
			require.NoError(t, err)
			if !apiequality.Semantic.DeepEqual(want, decoded) {
				t.Fatalf("the handler converted differently (-pure +handler):\n%s\nsent %s", cmp.Diff(want, decoded), raws[i])
			}
			wantJSON, err := json.Marshal(want)
			require.NoError(t, err)
			require.JSONEq(t, string(wantJSON), string(got[i].Raw), "sent %s", raws[i])
		}
	}
}

func setTypeMeta(obj runtime.Object, apiVersion string) {
	obj.GetObjectKind().SetGroupVersionKind(schema.FromAPIVersionAndKind(apiVersion, gatewayKind))
}

// FuzzConvertHandler sends arbitrary bodies to the conversion endpoint:
// it never panics, answers 400 with a message for what is not a
// ConversionReview, and 200 with a Success or Failure result for one, in
// which case a success converts every object. Run it with
//
//	go test ./conversion -run '^$' -fuzz FuzzConvertHandler -fuzztime 30s
func FuzzConvertHandler(f *testing.F) {
	gw := `{"apiVersion":"example.com/v1","kind":"APIGateway","metadata":{"name":"a","namespace":"n"},` +
		`"spec":{"routes":[{"host":"a.com","path":"/x/","pathType":"Exact","backendService":{"name":"s","port":80}}],` +
		`"tls":[{"hosts":["a.com"],"secretName":"t"}]}}`
	alpha := `{"apiVersion":"example.com/v1alpha1","kind":"APIGateway","metadata":{"name":"b"},` +
		`"spec":{"routes":[{"host":"b.com","prefix":"/","serviceName":"s","servicePort":80}]}}`
	for _, seed := range []string{
		review("example.com/v1alpha1", gw, gw), review("example.com/v1", alpha), review("example.com/v1", gw),
		review("example.com/v2", gw), review("example.com/v1alpha1", `{"apiVersion":"v1","kind":"Pod"}`),
		review("example.com/v1alpha1", `{"spec":{"routes":"x"}}`), `{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}`,
		`{}`, `null`, `[`, "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	h := NewWebhookHandler()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := send(h, http.MethodPost, string(body))
		switch rec.Code {
		case http.StatusBadRequest:
			require.NotEmpty(t, strings.TrimSpace(rec.Body.String()), "a 400 must say why")
			return
		case http.StatusOK:
		default:
			t.Fatalf("answered %d: %s", rec.Code, rec.Body.String())
		}
		out := &apiextensionsv1.ConversionReview{}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), out), "%.500s", rec.Body.String())
		require.NotNil(t, out.Response)
		in := &apiextensionsv1.ConversionReview{}
		// As the API server reads JSON: member names are case-sensitive
		// ("oBjeCts" is not "objects"), which encoding/json would ignore.
		require.NoError(t, sigsjson.UnmarshalCaseSensitivePreserveInts(body, in), "a review the handler accepted")
		switch out.Response.Result.Status {
		case metav1.StatusSuccess:
			require.Len(t, out.Response.ConvertedObjects, len(in.Request.Objects))
		case metav1.StatusFailure:
			require.NotEmpty(t, out.Response.Result.Message)
			require.Empty(t, out.Response.ConvertedObjects)
		default:
			t.Fatalf("result %q", out.Response.Result.Status)
		}
	})
}
