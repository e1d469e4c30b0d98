package render

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// refusedByAPI is the API's rule for source ranges, as
// api/v1/sourcerange_types.go words it: a client in a deny network is
// refused; otherwise it is served when allow is empty or one of its
// networks holds it.
func refusedByAPI(allow, deny []netip.Prefix, addr netip.Addr) bool {
	in := func(ps []netip.Prefix) bool {
		for _, p := range ps {
			if p.Contains(addr) {
				return true
			}
		}
		return false
	}
	return in(deny) || len(allow) > 0 && !in(allow)
}

// refusedByGeo is nginx's geo: the longest network that holds addr
// decides.
func refusedByGeo(entries []sourceEntry, addr netip.Addr) (refused, found bool) {
	best := -1
	for _, e := range entries {
		if e.prefix.Contains(addr) && e.prefix.Bits() > best {
			best, refused = e.prefix.Bits(), e.refused
		}
	}
	return refused, best >= 0
}

// TestSourceEntriesDecideAsTheAPISays: for random allow and deny lists
// drawn from nested and disjoint networks of both families (0.0.0.0/0 and
// ::/0 among them), the geo entries, read longest prefix first, refuse
// exactly the addresses the API's rule refuses, and every address has an
// entry.
func TestSourceEntriesDecideAsTheAPISays(t *testing.T) {
	universe := []string{
		"0.0.0.0/0", "10.0.0.0/8", "10.1.0.0/16", "10.1.2.0/24", "10.1.2.3/32", "10.2.0.0/16", "192.0.2.0/24", "192.0.2.128/25",
		"::/0", "2001:db8::/32", "2001:db8:1::/48", "2001:db8:1::1/128", "2001:db8:2::/48", "fd00::/8",
	}
	addrs := []string{
		"10.1.2.3", "10.1.2.4", "10.1.3.1", "10.2.0.1", "10.3.0.1", "192.0.2.1", "192.0.2.200", "198.51.100.1", "0.0.0.0",
		"2001:db8:1::1", "2001:db8:1::2", "2001:db8:2::1", "2001:db8:3::1", "fd00::1", "2001:db9::1", "::",
	}
	rng := rand.New(rand.NewPCG(34, 4))
	pick := func() []netip.Prefix {
		var out []netip.Prefix
		for _, s := range universe {
			if rng.IntN(4) == 0 {
				out = append(out, netip.MustParsePrefix(s))
			}
		}
		return out
	}
	for range 2000 {
		allow, deny := pick(), pick()
		entries := sourceEntries(allow, deny)
		for _, s := range addrs {
			a := netip.MustParseAddr(s)
			refused, found := refusedByGeo(entries, a)
			require.True(t, found, "no entry holds %s", a)
			require.Equal(t, refusedByAPI(allow, deny, a), refused, "%s with allow %v, deny %v: entries %v", a, allow, deny, entries)
		}
	}
}

// TestRenderSourceRanges: the geo block and the location's check, for
// allow and deny of both families; routes with the same ranges share one
// block; and nginx loads it without a warning (a tenant's 0.0.0.0/0
// replaces the family's default rather than repeating it).
func TestRenderSourceRanges(t *testing.T) {
	office := route("api.example.com", "/office/", v1.PathTypePrefix, "office", 80)
	office.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"10.0.0.0/8", "2001:db8::/32"}, Deny: []v1.CIDR{"10.1.0.0/16", "10.0.0.0/8"}}
	same := route("api.example.com", "/same", v1.PathTypeExact, "office", 80)
	same.SourceRanges = office.SourceRanges
	whole := route("api.example.com", "/whole/", v1.PathTypePrefix, "whole", 80)
	whole.SourceRanges = &v1.SourceRanges{Allow: []v1.CIDR{"0.0.0.0/0"}, Deny: []v1.CIDR{"::/0"}}
	config, err := Config(gateway("sources", office, same, whole), Options{Resolvers: []string{"127.0.0.1"}, TrustedProxies: []string{"10.9.0.0/16"}})
	require.NoError(t, err)

	// 10.0.0.0/8 is denied, so allowing it is left out: deny wins.
	officeGeo := "geo $agw_src_%s {\n    0.0.0.0/0 1;\n    10.0.0.0/8 1;\n    10.1.0.0/16 1;\n    ::/0 1;\n    2001:db8::/32 0;\n}\n"
	wholeGeo := "geo $agw_src_%s {\n    0.0.0.0/0 0;\n    ::/0 1;\n}\n"
	for _, geo := range []string{officeGeo, wholeGeo} {
		pattern := strings.ReplaceAll(regexp.QuoteMeta(fmt.Sprintf(geo, "@")), "@", "[0-9a-f]{16}")
		assert.Len(t, regexp.MustCompile(pattern).FindAllString(config, -1), 1, "one geo block %q in\n%s", geo, config)
	}
	check := regexp.MustCompile(`(?m)^        if \(\$agw_src_[0-9a-f]{16}\) \{\n            return 403;\n        \}\n`)
	assert.Len(t, check.FindAllString(config, -1), 5, "the check in each location: two of /office/, /same, two of /whole/")
	out, err := nginxTest(t, nginxBinary(t), config)
	require.NoError(t, err, "nginx -t:\n%s", out)
	assert.NotContains(t, out, "[warn]")
}

// TestRenderSourceRangesRefusesWhatValidationRefuses: a network the
// validation rules refuse never reaches the file: the renderer refuses
// the gateway, at the entry's field, with the rule's id.
func TestRenderSourceRangesRefusesWhatValidationRefuses(t *testing.T) {
	for _, s := range []string{"10.0.0.1/8", "2001:DB8::/32", "2001:db8:0::/48", "::ffff:10.0.0.0/104", "10.0.0.1", "010.0.0.0/8", "fe80::%lo/64", "10.0.0.0/8;", ""} {
		r := route("api.example.com", "/", v1.PathTypePrefix, "web", 80)
		r.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"192.0.2.0/24", v1.CIDR(s)}}
		_, err := Config(gateway("bad", r), Options{})
		require.Error(t, err, "%q", s)
		assert.Contains(t, err.Error(), "spec.routes[0].sourceRanges.deny[1]", "%q", s)
		w := &trafficWriter{t: &routeTraffic{}}
		errs := writeSourceRanges(w.t, r.SourceRanges, field.NewPath("sourceRanges"))
		require.Len(t, errs, 1, "the renderer's own check of %q", s)
		assert.Equal(t, validation.RuleSourceRanges, errs[0].Origin)
		assert.Empty(t, w.t.sourceGeo)
	}
}

// geoLine is a line the renderer writes in a geo block of source ranges:
// a network as net/netip prints it, and 0 or 1.
var geoLine = regexp.MustCompile(`^    [0-9a-f.:]+/[0-9]{1,3} [01];$`)

// FuzzRenderSourceRanges: whatever strings a tenant lists in allow and
// deny (comma-separated here), the renderer refuses the gateway only when
// validation refuses the route, and otherwise each string was a network
// in canonical form and the geo block holds nothing but lines of a
// network net/netip printed and a digit, in a configuration whose blocks
// all close. Its seeds (all that `go test` runs) are the hostile strings
// and networks written every way but the canonical one.
func FuzzRenderSourceRanges(f *testing.F) {
	for _, s := range hostileStrings() {
		f.Add("10.0.0.0/8"+s, s)
		f.Add(s, "2001:db8::/32")
	}
	for _, s := range []string{"10.0.0.0/8", "0.0.0.0/0,::/0", "2001:db8::/32,10.0.0.0/8", "10.0.0.1/8", "2001:DB8::/32", "::ffff:1.2.3.0/120", "1.2.3.4", "fe80::1%eth0/64", "10.0.0.0/8,10.0.0.0/8", "10.0.0.0/8\n}", "10.0.0.0/8 1;"} {
		f.Add(s, "192.0.2.0/24")
		f.Add("192.0.2.0/24", s)
	}
	f.Fuzz(func(t *testing.T, allow, deny string) {
		split := func(s string) []v1.CIDR {
			if s == "" {
				return nil
			}
			var out []v1.CIDR
			for c := range strings.SplitSeq(s, ",") {
				out = append(out, v1.CIDR(c))
			}
			return out
		}
		r := route("fuzz.example.com", "/", v1.PathTypePrefix, "web", 80)
		r.SourceRanges = &v1.SourceRanges{Allow: split(allow), Deny: split(deny)}
		config, err := Config(gateway("fuzz", r), Options{Resolvers: []string{"127.0.0.1"}})
		routeErrs := validation.ValidateRoute(&r, field.NewPath("spec", "routes"), 0)
		if err != nil {
			require.NotEmpty(t, routeErrs, "the renderer refused what validation admits: %v", err)
			return
		}
		require.Empty(t, routeErrs, "the renderer wrote what validation refuses")
		for _, c := range append(append([]v1.CIDR{}, r.SourceRanges.Allow...), r.SourceRanges.Deny...) {
			_, ok := validation.CanonicalCIDR(string(c))
			require.True(t, ok, "%q is not canonical", c)
		}
		_, geo, found := strings.Cut(config, "geo $agw_src_")
		require.True(t, found, "no geo block")
		geo, _, _ = strings.Cut(geo, "}")
		lines := strings.Split(strings.TrimSuffix(geo, "\n"), "\n")[1:]
		for _, l := range lines {
			require.Regexp(t, geoLine, l)
		}
		directives(t, config)
	})
}
