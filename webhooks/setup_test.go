package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	ctrl "sigs.k8s.io/controller-runtime"
)

func TestSetupWithManagerRejectsBadOptions(t *testing.T) {
	tests := map[string]struct {
		opts    Options
		wantErr string
	}{
		"image with a space": {opts: Options{DefaultImage: "nginx :1", DefaultReplicas: 1}, wantErr: `default gateway image "nginx :1"`},
		"negative replicas":  {opts: Options{DefaultReplicas: -1}, wantErr: "default replicas -1: must be from 0 to 100"},
		"101 replicas":       {opts: Options{DefaultReplicas: 101}, wantErr: "default replicas 101: must be from 0 to 100"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			require.NotNil(t, env, "no control plane")
			mgr, err := ctrl.NewManager(env.Config, env.ManagerOptions())
			require.NoError(t, err)
			err = SetupWithManager(mgr, tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
		})
	}
}
