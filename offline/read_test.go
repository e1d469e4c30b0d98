package offline

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // kind/name#index of each document
		err      bool
	}{
		{name: "several documents", in: "kind: A\napiVersion: v1\nmetadata: {name: a}\n---\nkind: B\napiVersion: v1\nmetadata: {name: b}\n", want: []string{"A/a#0", "B/b#1"}},
		{name: "empty documents are not counted", in: "---\n# only a comment\n---\nkind: A\napiVersion: v1\nmetadata: {name: a}\n---\n", want: []string{"A/a#0"}},
		{name: "JSON", in: `{"kind": "A", "apiVersion": "v1", "metadata": {"name": "a"}}`, want: []string{"A/a#0"}},
		{name: "a List's items share its index", in: "kind: List\napiVersion: v1\nitems:\n- {kind: A, apiVersion: v1, metadata: {name: a}}\n- {kind: B, apiVersion: v1, metadata: {name: b}}\n",
			want: []string{"A/a#0", "B/b#0"}},
		{name: "not YAML", in: "a: [b\n", err: true},
		{name: "no kind", in: "apiVersion: v1\nmetadata: {name: a}\n", err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			docs, err := Parse("f.yaml", []byte(tc.in))
			if tc.err {
				require.Error(t, err)
				assert.True(t, errors.Is(err, ErrUnusable), "%v", err)
				return
			}
			require.NoError(t, err)
			got := make([]string, len(docs))
			for i, d := range docs {
				assert.Equal(t, "f.yaml", d.File)
				got[i] = d.Object.GetKind() + "/" + d.Object.GetName() + "#" + strconv.Itoa(d.Index)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestRead: a directory gives its YAML and JSON files in order, not those
// of its subdirectories (kubectl's -f without -R), and "-" reads stdin.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	obj := func(name string) string { return "kind: A\napiVersion: v1\nmetadata: {name: " + name + "}\n" }
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(obj("b")), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte(`{"kind":"A","apiVersion":"v1","metadata":{"name":"a"}}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a manifest"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sub", "c.yaml"), []byte(obj("c")), 0o600))

	docs, err := Read([]string{dir, "-"}, strings.NewReader(obj("stdin")))
	require.NoError(t, err)
	var names []string
	for _, d := range docs {
		names = append(names, d.Object.GetName())
	}
	assert.Equal(t, []string{"a", "b", "stdin"}, names)
	assert.Equal(t, "-", docs[2].File)

	_, err = Read(nil, nil)
	assert.ErrorIs(t, err, ErrUnusable)
	_, err = Read([]string{filepath.Join(dir, "missing.yaml")}, nil)
	assert.ErrorIs(t, err, ErrUnusable)
}

func TestConvert(t *testing.T) {
	parse := func(s string) *unstructured.Unstructured {
		docs, err := Parse("in.yaml", []byte(s))
		require.NoError(t, err)
		require.Len(t, docs, 1)
		return docs[0].Object
	}
	v1GW := parse(gwHead + "spec:\n  image: nginx:1.27\n  ingressClassName: internal\n  routes:\n  - {host: a.example.com, path: /x, pathType: Exact, backendService: {name: s, port: 80}}\n")
	alpha, err := Convert(v1GW, "v1alpha1")
	require.NoError(t, err)
	assert.Equal(t, "example.com/v1alpha1", alpha.GetAPIVersion())
	assert.Contains(t, alpha.GetAnnotations(), "conversion.example.com/v1-spec", "what v1alpha1 cannot say is kept")
	_, hasStatus := alpha.Object["status"]
	assert.False(t, hasStatus, "no empty status")
	_, hasTimestamp, _ := unstructured.NestedFieldNoCopy(alpha.Object, "metadata", "creationTimestamp")
	assert.False(t, hasTimestamp, "no null creationTimestamp")

	back, err := Convert(alpha, "v1")
	require.NoError(t, err)
	assert.Equal(t, v1GW.Object, back.Object, "the round trip gives the object back")

	same, err := Convert(v1GW, "v1")
	require.NoError(t, err)
	assert.Equal(t, v1GW.Object, same.Object, "an object in the asked version is left as it is")

	_, err = Convert(parse("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), "v1")
	assert.ErrorContains(t, err, "not an APIGateway")
	_, err = Convert(v1GW, "v2")
	assert.ErrorContains(t, err, "unknown version")
	_, err = Convert(parse(gwHead+"spec: {replicas: two}\n"), "v1alpha1")
	assert.ErrorContains(t, err, "decoding the APIGateway")
}
