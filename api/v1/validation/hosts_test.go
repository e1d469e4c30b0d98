package validation

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// coverCases are testdata/covers.json: the cases of Covers, which the
// admission policy's CEL form of the rule is tested against too.
type coverCase struct {
	Owned  string `json:"owned"`
	Name   string `json:"name"`
	Covers bool   `json:"covers"`
}

func TestCovers(t *testing.T) {
	raw, err := os.ReadFile("testdata/covers.json")
	require.NoError(t, err)
	var cases []coverCase
	require.NoError(t, json.Unmarshal(raw, &cases))
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		assert.Equal(t, tc.Covers, Covers(tc.Owned, tc.Name), "Covers(%s, %s)", tc.Owned, tc.Name)
		if tc.Covers {
			assert.True(t, Overlap(tc.Name, tc.Owned), "Overlap(%s, %s)", tc.Name, tc.Owned)
		}
	}
}
