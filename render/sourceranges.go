package render

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// A route's source ranges (routes[].sourceRanges) with stock nginx: a geo
// block maps the client's address to "1" (refused) or "0", and each of
// the route's locations answers 403 when it is "1", as its first
// rewrite-module directive after naming the route. So the refusal comes
// before the rules' hand-over to their named locations, before a route
// without backendService answers 404, and before the rate limit (whose
// limit_req runs in a later phase) counts the request.
//
// geo reads the client's address as the realip module left it: the peer,
// or, for a peer in --gateway-trusted-proxies (set_real_ip_from), the
// address that proxy reported in X-Forwarded-For. An untrusted peer's
// X-Forwarded-For changes nothing. IPv4-mapped IPv6 peers are looked up
// as the IPv4 address they map (geo does so), which is why the schema
// refuses IPv4-mapped networks: they would never match.
//
// geo picks the longest prefix that holds the address, while the API's
// rule is "deny wins over allow" (sourceEntries turns one into the
// other). Only prefixes the renderer parsed itself (validation.
// CanonicalCIDR) are written, printed by net/netip: no tenant string
// reaches the file.

// sourceVariablePrefix starts the name of a geo variable of source
// ranges; the rest is a hash of its entries, so routes with the same
// ranges share one block.
const sourceVariablePrefix = "agw_src_"

// A sourceEntry is one network of a geo block and whether its clients
// are refused.
type sourceEntry struct {
	prefix  netip.Prefix
	refused bool
}

// wholeFamilies are the networks that hold every address of a family:
// each family's default, written as networks rather than with geo's
// "default" (which is both), so that a tenant's 0.0.0.0/0 or ::/0 can
// replace its family's without nginx warning of a duplicate network.
var wholeFamilies = []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}

// sourceEntries are the geo entries for allow and deny, whose longest
// prefix holding an address decides as the API says: refused when a deny
// network holds it, else served when allow is empty or one of its
// networks holds it. Two networks are either nested or disjoint, so it is
// enough to leave out each allow network that a deny network holds
// (equal included): wherever an address is in a deny network, the longest
// network holding it is then a deny network or one inside it. Each
// family's whole network is refused when allow is not empty. Sorted by
// family, address and length: same ranges, same bytes.
func sourceEntries(allow, deny []netip.Prefix) []sourceEntry {
	refused := map[netip.Prefix]bool{}
	for _, f := range wholeFamilies {
		refused[f] = len(allow) > 0
	}
	for _, a := range allow {
		if !slices.ContainsFunc(deny, func(d netip.Prefix) bool { return holds(d, a) }) {
			refused[a] = false
		}
	}
	for _, d := range deny {
		refused[d] = true
	}
	entries := make([]sourceEntry, 0, len(refused))
	for p, r := range refused {
		entries = append(entries, sourceEntry{p, r})
	}
	slices.SortFunc(entries, func(a, b sourceEntry) int {
		return cmp.Or(a.prefix.Addr().Compare(b.prefix.Addr()), cmp.Compare(a.prefix.Bits(), b.prefix.Bits()))
	})
	return entries
}

// holds reports whether network outer holds every address of inner.
func holds(outer, inner netip.Prefix) bool {
	return outer.Bits() <= inner.Bits() && outer.Contains(inner.Addr())
}

// writeSourceRanges gives t the geo block of r's source ranges and the
// location lines that refuse what it refuses. Each network is parsed
// again here (validation.CanonicalCIDR, the rule admission applied) and
// written as net/netip prints it; one that does not parse refuses the
// route.
func writeSourceRanges(t *routeTraffic, s *v1.SourceRanges, fld *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	parse := func(list string, cidrs []v1.CIDR) []netip.Prefix {
		out := make([]netip.Prefix, 0, len(cidrs))
		for i, c := range cidrs {
			p, ok := validation.CanonicalCIDR(string(c))
			if !ok {
				errs = append(errs, field.Invalid(fld.Child(list).Index(i), c,
					"the renderer writes only IPv4 and IPv6 networks in canonical form").WithOrigin(validation.RuleSourceRanges))
				continue
			}
			out = append(out, p)
		}
		return out
	}
	allow, deny := parse("allow", s.Allow), parse("deny", s.Deny)
	if len(errs) > 0 {
		return errs
	}
	var lines strings.Builder
	for _, e := range sourceEntries(allow, deny) {
		fmt.Fprintf(&lines, "    %s %d;\n", e.prefix.String(), boolDigit(e.refused))
	}
	name := sourceVariablePrefix + shortID(lines.String())
	t.sourceGeo = fmt.Sprintf("# routes[].sourceRanges: 1 refuses the client's address.\ngeo $%s {\n%s}\n", name, lines.String())
	t.sourceCheck = fmt.Sprintf("%sif ($%s) {\n%s    return 403;\n%s}\n", indent, name, indent, indent)
	return nil
}

func boolDigit(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The bytes source ranges add, measured on what writeSourceRanges
// writes: the check is 75 bytes in each location; a geo block is 91
// bytes besides its networks (the comment, its first line with the
// variable's 16 hex digits, its closing brace), and a network's line is
// the network and 8 bytes.
const (
	sourceCheckBytes   = 80
	sourceGeoBytes     = 96
	sourceNetworkBytes = 8
)

// sourceRangesBound bounds what r's source ranges add to each of its
// locations. Their geo block, which routes with the same ranges share,
// sizeBound counts once per distinct ranges (sourceGeoBound).
func sourceRangesBound(r *v1.Route) (location, http int) {
	if r.SourceRanges == nil {
		return 0, 0
	}
	return sourceCheckBytes, 0
}

// sourceGeoBound bounds the geo block of s: a line per network, and one
// per family's whole network.
func sourceGeoBound(s *v1.SourceRanges) int {
	total := sourceGeoBytes
	for _, f := range wholeFamilies {
		total += len(f.String()) + sourceNetworkBytes
	}
	for _, c := range slices.Concat(s.Allow, s.Deny) {
		total += len(c) + sourceNetworkBytes
	}
	return total
}
