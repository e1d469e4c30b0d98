package controlplane

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPointWebhooksAt: every clientConfig naming a Service names the same
// path under the URL instead; anything else is left as it is.
func TestPointWebhooksAt(t *testing.T) {
	const url = "https://127.0.0.1:4443/"
	svc := func(path string) map[string]any {
		return map[string]any{"service": map[string]any{"name": "op", "namespace": "ops", "path": path}, "caBundle": "Q0E="}
	}
	for _, tc := range []struct {
		name     string
		in, want map[string]any
		wantErr  bool
	}{
		{
			name: "webhooks",
			in: map[string]any{"kind": "ValidatingWebhookConfiguration", "webhooks": []any{
				map[string]any{"name": "a", "clientConfig": svc("/validate")},
				map[string]any{"name": "b", "clientConfig": map[string]any{"url": "https://elsewhere/v"}},
			}},
			want: map[string]any{"kind": "ValidatingWebhookConfiguration", "webhooks": []any{
				map[string]any{"name": "a", "clientConfig": map[string]any{"url": "https://127.0.0.1:4443/validate", "caBundle": "Q0E="}},
				map[string]any{"name": "b", "clientConfig": map[string]any{"url": "https://elsewhere/v"}},
			}},
		},
		{
			name: "conversion",
			in: map[string]any{"kind": "CustomResourceDefinition", "spec": map[string]any{"conversion": map[string]any{
				"strategy": "Webhook", "webhook": map[string]any{"clientConfig": svc("/convert")}}}},
			want: map[string]any{"kind": "CustomResourceDefinition", "spec": map[string]any{"conversion": map[string]any{
				"strategy": "Webhook", "webhook": map[string]any{"clientConfig": map[string]any{"url": "https://127.0.0.1:4443/convert", "caBundle": "Q0E="}}}}},
		},
		{
			name: "a CRD without conversion",
			in:   map[string]any{"kind": "CustomResourceDefinition", "spec": map[string]any{"group": "example.com"}},
			want: map[string]any{"kind": "CustomResourceDefinition", "spec": map[string]any{"group": "example.com"}},
		},
		{
			name: "another kind",
			in:   map[string]any{"kind": "Service", "spec": map[string]any{"service": map[string]any{"path": "/x"}}},
			want: map[string]any{"kind": "Service", "spec": map[string]any{"service": map[string]any{"path": "/x"}}},
		},
		{
			name:    "a Service without a path",
			in:      map[string]any{"kind": "MutatingWebhookConfiguration", "webhooks": []any{map[string]any{"clientConfig": svc("")}}},
			wantErr: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &unstructured.Unstructured{Object: tc.in}
			err := PointWebhooksAt(o, url)
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.Object)
		})
	}
}
