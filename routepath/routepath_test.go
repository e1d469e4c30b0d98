package routepath

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecode(t *testing.T) {
	tests := map[string]struct {
		path    string
		want    string
		wantErr string
	}{
		"plain":                   {path: "/users/", want: "/users/"},
		"every allowed mark":      {path: "/a-b._~!&()*+,=:@/", want: "/a-b._~!&()*+,=:@/"},
		"encoded unicode letter":  {path: "/caf%C3%A9", want: "/café"},
		"encoded literal percent": {path: "/100%25", want: "/100%"},
		"encoded slash":           {path: "/a%2Fb", want: "/a/b"},
		"encoded space":           {path: "/a%20b", wantErr: `decodes to "/a b", which contains ' '`},
		"encoded quote":           {path: "/a%22", wantErr: `which contains '"'`},
		"encoded semicolon":       {path: "/a%3B", wantErr: `which contains ';'`},
		"encoded dollar":          {path: "/%24host", wantErr: `which contains '$'`},
		"encoded brace":           {path: "/%7D", wantErr: `which contains '}'`},
		"encoded backslash":       {path: "/%5C", wantErr: `which contains '\\'`},
		"encoded newline":         {path: "/a%0Ab", wantErr: `which contains '\n'`},
		"encoded dot dot":         {path: "/a/%2E%2E/b", wantErr: `contains "/../"`},
		"encoded trailing dot":    {path: "/a/%2E", wantErr: `which contains "/."`},
		"encoded double slash":    {path: "/a%2F/b", wantErr: `contains "//"`},
		"invalid UTF-8":           {path: "/%FF", wantErr: "decodes to invalid UTF-8"},
		"unicode line separator":  {path: "/a%E2%80%A8b", wantErr: "U+2028"},
		"no-break space":          {path: "/a%C2%A0b", wantErr: "U+00A0"},
		"C1 control":              {path: "/a%C2%85b", wantErr: "U+0085"},
		"zero-width space":        {path: "/a%E2%80%8Bb", want: "/a\u200bb"},
		"private use":             {path: "/%EE%80%80", want: "/\ue000"},
		"malformed escape":        {path: "/%zz", wantErr: "invalid percent-encoding"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(tc.path)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestDotSegment(t *testing.T) {
	tests := map[string]string{
		"/": "", "/a/b/": "", "/a.b/..c/...": "", "/.well-known/": "",
		"//": "//", "/a//b": "//", "/a/./b": "/./", "/a/../b": "/../", "/a/.": "/.", "/a/..": "/..", "/..": "/..",
	}
	for p, want := range tests {
		assert.Equal(t, want, DotSegment(p), p)
	}
}

func TestMatchPath(t *testing.T) {
	tests := map[string]struct {
		path   string
		prefix bool
		want   string
	}{
		"empty is the root":              {path: "", prefix: true, want: "/"},
		"root prefix stays":              {path: "/", prefix: true, want: "/"},
		"prefix trailing slash trimmed":  {path: "/users/", prefix: true, want: "/users"},
		"prefix without slash":           {path: "/users", prefix: true, want: "/users"},
		"exact keeps its trailing slash": {path: "/users/", want: "/users/"},
		"escapes decoded":                {path: "/%75sers", prefix: true, want: "/users"},
		"escaped trailing slash trimmed": {path: "/users%2F", prefix: true, want: "/users"},
		"literal percent through %25":    {path: "/100%25", want: "/100%"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := MatchPath(tc.path, tc.prefix)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	_, err := MatchPath("/a%252Fb", false)
	assert.ErrorContains(t, err, "encoded '/'")
}
