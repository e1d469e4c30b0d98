package validation

import (
	"fmt"
	"net/netip"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// A route's source ranges (issue 34) limit the client addresses it
// serves. Their bounds are the v1 schema's (markers in
// api/v1/sourcerange_types.go, read by rules); the form of one CIDR is
// CanonicalCIDR here and the CEL rule on v1.CIDR in the schema, the same
// test written for the two evaluators: net/netip's ParsePrefix, which the
// API server's isCIDR and cidr() call too, then the masked network
// written back must be the string itself. The renderer writes the
// prefixes CanonicalCIDR returns, never a tenant's string.

var routeSourceRanges = field.NewPath("sourceRanges")

// cidrMessage is how the schema's CEL rule on v1.CIDR refuses a string;
// the Go rule refuses it with the same words.
const cidrMessage = "must be a network in canonical form, such as 10.0.0.0/8, 203.0.113.7/32 or 2001:db8::/32: " +
	"its address with no bits set past the prefix length, IPv6 in lower case with zeros compressed, not IPv4-mapped"

// CanonicalCIDR parses s as the schema's CEL rule on v1.CIDR reads it
// (isCIDR(self) && string(cidr(self).masked()) == self): an IPv4 or IPv6
// prefix, not IPv4-mapped, written exactly as its masked form prints. It
// returns false for anything else.
func CanonicalCIDR(s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil || p.Addr().Is4In6() || p.Masked().String() != s {
		return netip.Prefix{}, false
	}
	return p, true
}

// validateSourceRanges checks a route's source ranges: at least one list,
// each of at most its maxItems canonical CIDRs, each once (the lists are
// sets: a repeated entry is reported once, at its second index, as the
// API server reports it).
func validateSourceRanges(s *v1.SourceRanges, fld *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	if len(s.Allow) == 0 && len(s.Deny) == 0 {
		return field.ErrorList{field.Required(fld, "allow or deny, such as {allow: [10.0.0.0/8, 2001:db8::/32]}").WithOrigin(RuleSourceRanges)}
	}
	// Each list is a set: eachCondition's check of a list keyed by one
	// string, the network itself.
	network := func(c v1.CIDR) string { return string(c) }
	check := func(c v1.CIDR, f *field.Path) field.ErrorList { return validateCIDR(string(c), f) }
	limits := rules()
	errs := eachCondition(s.Allow, fld.Child("allow"), limits.sourceAllow, network, check)
	errs = append(errs, eachCondition(s.Deny, fld.Child("deny"), limits.sourceDeny, network, check)...)
	return errs.WithOrigin(RuleSourceRanges)
}

// validateCIDR checks one network, with a hint for a prefix written
// otherwise than canonically.
func validateCIDR(s string, fld *field.Path) field.ErrorList {
	switch maxLength := rules().cidr.maxLength; {
	case s == "":
		return field.ErrorList{field.Required(fld, "a network such as 10.0.0.0/8 or 2001:db8::/32")}
	case len(s) > maxLength:
		return field.ErrorList{field.TooLong(fld, "", maxLength)}
	}
	if _, ok := CanonicalCIDR(s); ok {
		return nil
	}
	hint := ""
	if p, err := netip.ParsePrefix(s); err == nil && !p.Addr().Is4In6() {
		hint = fmt.Sprintf("; did you mean %q?", p.Masked().String())
	} else if _, err := netip.ParseAddr(s); err == nil && !strings.Contains(s, "/") {
		hint = "; a single address is a /32 (IPv4) or /128 (IPv6) network"
	}
	return field.ErrorList{field.Invalid(fld, s, cidrMessage+hint)}
}

// SourceRangesString renders a route's source ranges for the routes
// command, such as "allow 10.0.0.0/8, 2001:db8::/32; deny 10.1.0.0/16";
// "" for none.
func SourceRangesString(s *v1.SourceRanges) string {
	if s == nil {
		return ""
	}
	var parts []string
	for _, l := range []struct {
		verb  string
		cidrs []v1.CIDR
	}{{"allow", s.Allow}, {"deny", s.Deny}} {
		if len(l.cidrs) == 0 {
			continue
		}
		texts := make([]string, len(l.cidrs))
		for i, c := range l.cidrs {
			texts[i] = string(c)
		}
		parts = append(parts, l.verb+" "+strings.Join(texts, ", "))
	}
	return strings.Join(parts, "; ")
}
