package validation

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateHost checks a route host: a lower-case DNS name, optionally with
// a leading "*." wildcard, and never an IP address. The host is written
// into the proxy configuration, so this is part of the security boundary.
func validateHost(host string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch maxLength := rules().host.maxLength; {
	case host == "":
		err = field.Required(fld, "a DNS name such as api.example.com")
	case len(host) > maxLength:
		err = field.TooLong(fld, host, maxLength)
	case isIP(host) || isIP(strings.TrimPrefix(host, "*.")):
		err = field.Invalid(fld, host, "must be a DNS name, not an IP address")
	case isTopLevelWildcard(host):
		err = field.Invalid(fld, host, fmt.Sprintf(
			`a wildcard must keep at least two labels after "*.", as in *.example.com: %s would claim every name under %q`, host, host[2:]))
	case !validHost(host):
		err = field.Invalid(fld, host,
			`must be a lower-case DNS name such as api.example.com, optionally starting with "*.", `+
				`with labels of at most 63 characters`+hostHint(host))
	case isPublicSuffixWildcard(host):
		err = field.Invalid(fld, host, fmt.Sprintf(
			`a wildcard may not cover a public suffix: %s would claim every name registered under %q `+
				`(the Public Suffix List); name a domain of your own, as in *.example.co.uk`, host, host[2:]))
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleHost)}
}

// isIP reports whether s is an IP address. Only digits and dots (IPv4) or a
// string with a colon (IPv6) can be one, so other strings, every DNS name
// among them, skip the parser.
func isIP(s string) bool {
	if !strings.Contains(s, ":") && strings.ContainsFunc(s, func(r rune) bool { return r != '.' && (r < '0' || r > '9') }) {
		return false
	}
	return net.ParseIP(s) != nil
}

// validHost reports whether host is a DNS name (IsDNSName) or "*." and one
// of at least two labels, and not an IP address.
func validHost(host string) bool {
	name := strings.TrimPrefix(host, "*.")
	return len(host) <= rules().host.maxLength && IsDNSName(name) && !isIP(name) && !isTopLevelWildcard(host)
}

// isTopLevelWildcard reports whether host is "*." and a single label, such
// as *.com: one gateway would take every name of a top-level domain (or of
// a single-label internal domain), which no tenant may claim.
func isTopLevelWildcard(host string) bool {
	label, ok := strings.CutPrefix(host, "*.")
	return ok && !strings.Contains(label, ".") && IsDNSName(label)
}

// isPublicSuffixWildcard reports whether host is "*." and a public suffix,
// such as *.co.uk or *.github.io: a suffix under which anyone may
// register names, so one gateway would claim names of unrelated owners.
// Both the ICANN and the private part of the Public Suffix List count.
// The schema cannot say this (the list is too large for CEL); admission
// and the renderer both call this, so a gateway stored while the webhook
// was down is refused by the renderer and claims nothing.
func isPublicSuffixWildcard(host string) bool {
	domain, ok := strings.CutPrefix(host, "*.")
	if !ok {
		return false
	}
	suffix, _ := publicsuffix.PublicSuffix(domain)
	return suffix == domain
}

// IsDNSName reports whether name is a DNS-1123 subdomain whose labels are
// at most 63 bytes long, as DNS requires (validation.IsDNS1123Subdomain
// lets longer labels through). It is written without a regular expression:
// it runs for every route of every admission request and every render.
// TestNameChecksMatchApimachinery holds it to apimachinery's check.
func IsDNSName(name string) bool {
	if len(name) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(name, ".") {
		if !isLabel(label, validation.DNS1123LabelMaxLength, isAlnum) {
			return false
		}
	}
	return true
}

// isDNS1035Label is validation.IsDNS1035Label without a regular expression
// (TestNameChecksMatchApimachinery holds it to apimachinery's check).
func isDNS1035Label(name string) bool {
	return isLabel(name, validation.DNS1035LabelMaxLength, func(c byte) bool { return 'a' <= c && c <= 'z' })
}

// isLabel reports whether label is 1 to maxLen lower-case letters, digits
// and '-', starts with a byte first accepts and ends with a letter or digit.
func isLabel(label string, maxLen int, first func(byte) bool) bool {
	if label == "" || len(label) > maxLen || !first(label[0]) || !isAlnum(label[len(label)-1]) {
		return false
	}
	for i := 1; i < len(label)-1; i++ {
		if c := label[i]; c != '-' && !isAlnum(c) {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// hostHint explains the usual mistakes: a URL, a port, a misplaced
// wildcard, upper case or a trailing dot (the last two are normally fixed
// by the mutating webhook).
func hostHint(host string) string {
	candidate := host
	if _, rest, ok := strings.Cut(candidate, "://"); ok {
		candidate = rest
	}
	candidate, _, _ = strings.Cut(candidate, "/")
	if i := strings.LastIndexByte(candidate, ':'); i >= 0 {
		if _, err := strconv.Atoi(candidate[i+1:]); err == nil {
			candidate = candidate[:i]
		}
	}
	candidate = NormalizeHost(candidate)
	if hint := suggest(host, candidate, validHost); hint != "" {
		return hint + " (a host is a name only: no scheme, port or path)"
	}
	if strings.Contains(strings.TrimPrefix(host, "*."), "*") {
		return `; "*" is allowed only as the whole first label, as in *.example.com`
	}
	return ""
}

// NormalizeHost is the canonical spelling of host: its ASCII letters in
// lower case and a single trailing dot (the DNS root of a fully qualified
// name) removed. The mutating webhook rewrites hosts into it; validation
// suggests it. Only ASCII is folded: Unicode case folding maps some
// non-ASCII letters onto ASCII ones (the Kelvin sign K becomes k), and a
// host that is not ASCII must reach validation as the user wrote it and be
// rejected there. It works on bytes so that even invalid UTF-8 passes
// through unchanged.
func NormalizeHost(host string) string {
	// Only a single trailing dot is the root: "a.com.." is malformed and
	// stays as it is for validation to reject, which also keeps
	// NormalizeHost idempotent.
	if strings.HasSuffix(host, ".") && !strings.HasSuffix(host, "..") {
		host = host[:len(host)-1]
	}
	// Most hosts are already lower case: keep them, without a copy.
	if !strings.ContainsFunc(host, func(r rune) bool { return 'A' <= r && r <= 'Z' }) {
		return host
	}
	b := []byte(host)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// HostsConflict reports whether routes on hosts a and b compete for
// requests: the same host, or a wildcard and a host it matches (one label
// more: *.example.com matches api.example.com, not a.b.example.com).
// Under Strict, a host and every host it conflicts with belong to one
// namespace.
func HostsConflict(a, b string) bool {
	if a == b {
		return true
	}
	wa, wb := strings.HasPrefix(a, "*."), strings.HasPrefix(b, "*.")
	if wa == wb {
		return false
	}
	if wb {
		a, b = b, a
	}
	return HostFamily(b) == a[2:]
}

// HostFamily is the domain a host is a name of: api.example.com and
// *.example.com are both of example.com. Only hosts of one family can
// conflict.
func HostFamily(host string) string {
	_, rest, _ := strings.Cut(host, ".")
	return rest
}

// IsWildcard reports whether host starts with "*.".
func IsWildcard(host string) bool { return strings.HasPrefix(host, "*.") }

// Covers reports whether the owner of host owned owns name too: name is
// owned itself or lies below it. x.shop.example.com and *.shop.example.com
// are below shop.example.com (a name below a host shares its cookies);
// a.example.com, x.a.example.com and *.a.example.com are below
// *.example.com, and example.com is not. A DomainBinding's domain covers
// names the same way. The admission policy for HTTPRoutes and Ingresses
// holds the same rule in CEL, tested against TestCovers' cases.
func Covers(owned, name string) bool {
	return owned == name || strings.HasSuffix(name, "."+strings.TrimPrefix(owned, "*."))
}

// Overlap reports whether two hosts cannot belong to two namespaces: one
// covers the other.
func Overlap(a, b string) bool { return Covers(a, b) || Covers(b, a) }
