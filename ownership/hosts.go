package ownership

import "strings"

// Conflicting reports whether routes on hosts a and b compete for
// requests: the same host, or a wildcard and a host it matches (one label
// more: *.example.com matches api.example.com, not a.b.example.com).
// Under Strict, a host and every host it conflicts with belong to one
// namespace.
func Conflicting(a, b string) bool {
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
	return Family(b) == a[2:]
}

// Family is the domain a host is a name of: api.example.com and
// *.example.com are both of example.com. Only hosts of one family can
// conflict.
func Family(host string) string {
	_, rest, _ := strings.Cut(host, ".")
	return rest
}

// IsWildcard reports whether host starts with "*.".
func IsWildcard(host string) bool { return strings.HasPrefix(host, "*.") }
