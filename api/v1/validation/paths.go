package validation

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"example.com/apigateway-operator/routepath"
)

// validatePath checks a route path. The path is written into the proxy
// configuration, so this is the security boundary against configuration
// injection: only whitelisted characters (routepath.IsPathByte), no dot
// segments, and percent signs only as well-formed escapes whose decoded
// form is safe too (routepath.Decode), as nginx decodes before matching.
func validatePath(p string, fld *field.Path) field.ErrorList {
	return pathErrors(p, fld).WithOrigin(RulePath)
}

func pathErrors(p string, fld *field.Path) field.ErrorList {
	switch maxLength := rules().path.maxLength; {
	case p == "":
		return field.ErrorList{field.Required(fld, `a path starting with "/", such as "/" or "/users/"`)}
	case len(p) > maxLength:
		return field.ErrorList{field.TooLong(fld, p, maxLength)}
	}
	if bad := badPathChars(p); len(bad) > 0 {
		return field.ErrorList{field.Invalid(fld, p,
			"must hold only letters, digits and - . _ ~ / ! & ( ) * + , = : @ %; found "+strings.Join(bad, ", ")+pathCharHint(p))}
	}
	var errs field.ErrorList
	if !strings.HasPrefix(p, "/") {
		errs = append(errs, field.Invalid(fld, p, `must start with "/"`+suggest(p, "/"+p, func(s string) bool { return routepath.DotSegment(s) == "" })))
	}
	if routepath.DotSegment(p) != "" {
		errs = append(errs, field.Invalid(fld, p, `must not contain empty, "." or ".." segments`+suggest(p, cleanPath(p), func(string) bool { return true })))
	}
	if msg := checkPercentEncoding(p); msg != "" {
		errs = append(errs, field.Invalid(fld, p, msg))
	} else if strings.Contains(p, "%") && len(errs) == 0 {
		// Only escapes can make the decoded form differ from p, which
		// passed the same checks above.
		if _, err := routepath.Decode(p); err != nil {
			errs = append(errs, field.Invalid(fld, p, "must be safe once percent-decoded: "+err.Error()))
		}
	}
	return errs
}

// badPathChars lists, quoted and without repeats, up to five characters of
// p that a path may not hold.
func badPathChars(p string) []string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r >= utf8.RuneSelf || !routepath.IsPathByte(byte(r)) }) {
		return nil
	}
	var bad []string
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if size == 1 && routepath.IsPathByte(p[i]) {
			i++
			continue
		}
		q := strconv.QuoteRune(r)
		if r == utf8.RuneError && size == 1 {
			q = fmt.Sprintf("byte 0x%02x (not UTF-8)", p[i])
		}
		if !slices.Contains(bad, q) {
			bad = append(bad, q)
		}
		if len(bad) == 5 {
			return append(bad, "...")
		}
		i += size
	}
	return bad
}

func pathCharHint(p string) string {
	switch {
	case strings.ContainsAny(p, "?#"):
		return "; a query string or fragment is not part of the path"
	case strings.ContainsFunc(p, unicode.IsSpace):
		return "; a path may not hold spaces, not even percent-encoded: use '-' or '_'"
	}
	return ""
}

// cleanPath removes dot and empty segments the way a client would, keeping
// a trailing slash, to suggest what the user probably meant.
func cleanPath(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// checkPercentEncoding returns why p's percent escapes are malformed, or "".
// An escape must be "%" and two hex digits, and must not encode a control
// character: %00 or %0d%0a smuggled through a proxy are classic attacks.
func checkPercentEncoding(p string) string {
	for i := strings.IndexByte(p, '%'); i >= 0; i = strings.IndexByte(p, '%') {
		if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
			return `"%" must start a percent-encoded byte such as %C3%A9 (write "%25" for a literal "%")`
		}
		b, _ := strconv.ParseUint(p[i+1:i+3], 16, 8)
		if b < 0x20 || b == 0x7f {
			return fmt.Sprintf("must not percent-encode a control character (%s)", p[i:i+3])
		}
		p = p[i+3:]
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
