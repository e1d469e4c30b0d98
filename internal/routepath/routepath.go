// Package routepath holds the one check of a route path's percent-decoded
// form, shared by the validating webhook (which rejects such a path with a
// field error) and the nginx renderer (which refuses it again, as defense in
// depth), so the two can never disagree about what is safe.
package routepath

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

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
// its location could never match) or that holds characters with a meaning
// inside a quoted nginx string.
func CheckDecoded(p string) error {
	for _, seg := range []string{"//", "/./", "/../"} {
		if strings.Contains(p, seg) {
			return fmt.Errorf("decodes to %q, which contains %q", p, seg)
		}
	}
	if strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..") {
		return fmt.Errorf("decodes to %q, which ends in a '.' or '..' segment", p)
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
			if !isSafeASCII(c) {
				return fmt.Errorf("decodes to %q, which contains %q", p, c)
			}
			continue
		}
		if !unicode.IsPrint(c) || unicode.IsSpace(c) {
			return fmt.Errorf("decodes to %q, which contains %U", p, c)
		}
	}
	return nil
}

// isSafeASCII reports whether c is in the path whitelist: letters, digits
// and - . _ ~ ! & ( ) * + , = : @ % /.
func isSafeASCII(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.ContainsRune("-._~!&()*+,=:@%/", c)
}
