package testenv

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// RefusedAt asserts that the API server refused a write with err, naming
// field among its causes (where `kubectl apply` points the user) and
// saying says.
func RefusedAt(t *testing.T, err error, field, says string) {
	t.Helper()
	require.Error(t, err, "admitted")
	var status apierrors.APIStatus
	require.ErrorAs(t, err, &status)
	details := status.Status().Details
	require.NotNil(t, details, "%v", err)
	var fields []string
	for _, cause := range details.Causes {
		fields = append(fields, cause.Field)
	}
	assert.Contains(t, fields, field, "%v", err)
	assert.Contains(t, err.Error(), says)
}
