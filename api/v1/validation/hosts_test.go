package validation

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHostsConflict(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"api.example.com", "api.example.com", true},
		{"*.example.com", "api.example.com", true},
		{"api.example.com", "*.example.com", true},
		{"*.example.com", "*.example.com", true},
		{"*.example.com", "a.b.example.com", false},
		{"*.example.com", "example.com", false},
		{"*.b.example.com", "*.example.com", false},
		{"www.example.com", "api.example.com", false},
	} {
		assert.Equal(t, tc.want, HostsConflict(tc.a, tc.b), "%s %s", tc.a, tc.b)
	}
}
