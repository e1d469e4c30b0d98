// Package routepath defines what a route path means to nginx and the
// Ingress: the characters it may hold as written (IsPathByte), its empty
// and dot segments (DotSegment), its percent-decoded form and whether that
// form is safe (Decode, CheckDecoded), and the normal form routes are told
// apart by (MatchPath). The validation package (api/v1/validation) turns
// these into field errors; the renderer and the Ingress builder use the
// normal form. One definition, so the layers can never disagree.
package routepath

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsPathByte reports whether c may appear in a route path: letters, digits
// and - . _ ~ / ! & ( ) * + , = : @ %. Everything else, in particular
// whitespace, control characters, quotes, braces, ';', '$', '#' and '\',
// could end or alter a directive of the generated nginx configuration. The
// CRD schema's rule on path allows the same characters.
func IsPathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~/!&()*+,=:@%", c) >= 0
}

// DotSegment returns the first empty, "." or ".." segment of p as it
// appears there ("//", "/./", "/../", or a final "/." or "/.."), or "" when
// p has none. nginx normalises such segments away before it matches a
// location, so a route path holding one could never match as written.
func DotSegment(p string) string {
	for _, seg := range []string{"//", "/./", "/../"} {
		if strings.Contains(p, seg) {
			return seg
		}
	}
	for _, end := range []string{"/..", "/."} {
		if strings.HasSuffix(p, end) {
			return end
		}
	}
	return ""
}

// Decode percent-decodes a route path the way nginx decodes request paths
// before matching locations, and checks the result with CheckDecoded.
func Decode(path string) (string, error) {
	decoded, err := url.PathUnescape(path)
	if err != nil {
		return "", fmt.Errorf("invalid percent-encoding: %w", err)
	}
	return decoded, CheckDecoded(decoded)
}

// CheckDecoded refuses a decoded path that nginx would normalise away (so
// its location could never match), that is not UTF-8, or that holds
// characters with a meaning inside a quoted nginx string, control
// characters or whitespace.
func CheckDecoded(p string) error {
	if seg := DotSegment(p); seg != "" {
		return fmt.Errorf("decodes to %q, which contains %q", p, seg)
	}
	// The Ingress API refuses an encoded slash in a path, and an Ingress
	// controller would decode it again: a route could never reach it.
	if strings.Contains(p, "%2f") || strings.Contains(p, "%2F") {
		return fmt.Errorf("decodes to %q, which contains an encoded '/' (%%2F) that the Ingress API refuses", p)
	}
	if !utf8.ValidString(p) {
		return fmt.Errorf("decodes to invalid UTF-8")
	}
	for _, c := range p {
		if c < utf8.RuneSelf {
			if !IsPathByte(byte(c)) {
				return fmt.Errorf("decodes to %q, which contains %q", p, c)
			}
			continue
		}
		// The contract's words: no whitespace or control characters. Both
		// sets are fixed (Unicode never adds to Cc, and White_Space is
		// stable), so the CRD's CEL can list them as encoded bytes and
		// agree exactly; the rest of Unicode is letters, marks and symbols
		// that mean nothing to nginx.
		if unicode.IsControl(c) || unicode.IsSpace(c) {
			return fmt.Errorf("decodes to %q, which contains %U", p, c)
		}
	}
	return nil
}
