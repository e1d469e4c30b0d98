package validation

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "example.com/apigateway-operator/api/v1"
)

// The bounds and patterns of a route's traffic settings are the v1
// schema's (markers in api/v1/traffic_types.go, read by rules): the
// renderer writes these values into nginx.conf, and v1-only fields can
// reach a v1 object from a v1alpha1 write's annotation, which no v1 schema
// checked. HTTPHeaderName's pattern is a strict subset of RFC 9110's
// token, without the characters nginx reads in a directive ('$' starts a
// variable); HTTPHeaderValue's allows printable ASCII and inner spaces,
// without '"', '\' and '$', the characters a quoted nginx string would
// read as its end, an escape or a variable.

// reservedHeaderMessage is how HTTPHeaderName's CEL rule refuses the
// headers a route may not change (those the gateway sets itself, the
// body's framing, and hop-by-hop headers, which belong to one
// connection); the names are read from that rule (rules().reservedHeaders),
// and the Go rule refuses them with the same words.
const reservedHeaderMessage = "is a header the gateway sets itself or a hop-by-hop header, which a route may not change"

// validateTraffic checks r's traffic settings, each at its field under
// the route (ValidateRoute puts the route's path in front).
func validateTraffic(r *v1.Route) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateAdditionalBackends(r, routeAdditionalBackends)...)
	errs = append(errs, validateTimeouts(r.Timeouts, routeTimeouts)...)
	errs = append(errs, validateRewritePrefix(r, routeRewritePrefix)...)
	errs = append(errs, validateHeaders(r.RequestHeaders, routeRequestHeaders)...)
	errs = append(errs, validateHeaders(r.ResponseHeaders, routeResponseHeaders)...)
	if r.MaxBodySize != "" && !rules().maxBodySize.pattern.MatchString(r.MaxBodySize) {
		errs = append(errs, field.Invalid(routeMaxBodySize, r.MaxBodySize,
			"must be a size in nginx's notation: up to 4 digits, optionally followed by k, m or g, such as 10m; 0 accepts any size").WithOrigin(RuleMaxBodySize))
	}
	errs = append(errs, validateRateLimit(r.RateLimit, routeRateLimit)...)
	errs = append(errs, validateSourceRanges(r.SourceRanges, routeSourceRanges)...)
	errs = append(errs, validateBasicAuth(r)...)
	errs = append(errs, validateExternalAuth(r)...)
	errs = append(errs, validateRetries(r)...)
	return errs
}

// validateAdditionalBackends checks a route's additional backends. The
// weights add up as the schema's rule adds them, out-of-range ones
// included. A Service port listed twice is a duplicate entry (the list is
// a map keyed by name and port); backendService's listed again is the
// list's error (the schema's rule on the route can name only the list).
func validateAdditionalBackends(r *v1.Route, fld *field.Path) field.ErrorList {
	backends := r.AdditionalBackends
	limits := rules()
	if len(backends) > limits.additionalBackends {
		return field.ErrorList{field.TooMany(fld, len(backends), limits.additionalBackends).WithOrigin(RuleAdditionalBackends)}
	}
	var errs field.ErrorList
	total := int64(0)
	seen, repeated := map[v1.BackendService]int{}, map[v1.BackendService]bool{}
	for i, b := range backends {
		bfld := fld.Index(i)
		errs = append(errs, validateBackendName(string(b.Name), bfld.Child("name")).WithOrigin(RuleAdditionalBackends)...)
		errs = append(errs, validateBackendPort(b.Port, bfld.Child("port")).WithOrigin(RuleAdditionalBackends)...)
		if !limits.weight.holds(int64(b.Weight)) {
			errs = append(errs, field.Invalid(bfld.Child("weight"), b.Weight,
				fmt.Sprintf("must be a percentage from %d to %d", limits.weight.min, limits.weight.max)).WithOrigin(RuleAdditionalBackends))
		}
		total += int64(b.Weight)
		key := v1.BackendService{Name: b.Name, Port: b.Port}
		if key == r.BackendService {
			errs = append(errs, field.Invalid(fld, fmt.Sprintf("%s:%d", b.Name, b.Port), fmt.Sprintf(
				"additionalBackends[%d] lists the same Service port as backendService, which receives what the weights leave: leave it out", i)).WithOrigin(RuleAdditionalBackends))
		}
		j, dup := seen[key]
		if !dup {
			seen[key] = i
			continue
		}
		// Once per Service port, at its second entry, as the API server
		// reports a repeated key.
		if !repeated[key] {
			repeated[key] = true
			errs = append(errs, field.Duplicate(bfld, fmt.Sprintf("%s:%d", b.Name, b.Port)).WithOrigin(RuleAdditionalBackends))
			errs[len(errs)-1].Detail = fmt.Sprintf("the same Service port as additionalBackends[%d]; give it one entry with the sum of the weights", j)
		}
	}
	// The list's CEL rule bounds the sum by what one weight may be, all
	// of the requests.
	if all := limits.weight.max; total > all {
		errs = append(errs, field.Invalid(fld, total, fmt.Sprintf(
			"the weights add up to more than %d (percent): backendService receives what they leave, so they may take at most all of it", all)).WithOrigin(RuleAdditionalBackends))
	}
	return errs
}

func validateTimeouts(t *v1.RouteTimeouts, fld *field.Path) field.ErrorList {
	if t == nil {
		return nil
	}
	var errs field.ErrorList
	limits := rules()
	for _, s := range []struct {
		name    string
		seconds *int32
		bounds  intRange
	}{{"connectSeconds", t.ConnectSeconds, limits.connectSeconds}, {"readSeconds", t.ReadSeconds, limits.readSeconds}} {
		if s.seconds != nil && !s.bounds.holds(int64(*s.seconds)) {
			errs = append(errs, field.Invalid(fld.Child(s.name), *s.seconds,
				fmt.Sprintf("must be from %d to %d seconds", s.bounds.min, s.bounds.max)).WithOrigin(RuleTimeouts))
		}
	}
	return errs
}

func validateRewritePrefix(r *v1.Route, fld *field.Path) field.ErrorList {
	p := string(r.RewritePrefix)
	if p == "" {
		return nil
	}
	errs := pathErrors(p, fld).WithOrigin(RuleRewritePrefix)
	if strings.Contains(p, "%") {
		errs = append(errs, field.Invalid(fld, p,
			"must not hold percent-encoded bytes: the backend receives the prefix as written").WithOrigin(RuleRewritePrefix))
	}
	if r.PathType != v1.PathTypePrefix {
		errs = append(errs, field.Invalid(fld, p,
			"rewritePrefix replaces the prefix a Prefix route matched: an Exact route has none").WithOrigin(RuleRewritePrefix))
	}
	return errs
}

// validateHeaders checks a header modifier: names and values as the
// schema's patterns say, no reserved header, and each name once across
// its three lists, compared without case (HTTP's rule). A name repeated
// as written in one list is that entry's error, as the API server reports
// a duplicate key of a listType map or set; any other repetition (another
// case, another list) is the modifier's, as its schema rule reports it
// (the rule compares the names each list holds, distinct as written, with
// those that stay distinct once lower-cased).
func validateHeaders(m *v1.HeaderModifier, fld *field.Path) field.ErrorList {
	if m == nil {
		return nil
	}
	var errs field.ErrorList
	// first is where each name, lower-cased, first appears; written
	// counts the current list's names as written. A repeated name is
	// reported once, at its second entry, as the API server reports a
	// repeated key.
	first := map[string]*field.Path{}
	var written map[string]int
	name := func(n string, nfld, entry *field.Path) {
		errs = append(errs, validateHeaderName(n, nfld)...)
		if written[n]++; written[n] > 1 {
			if written[n] == 2 {
				errs = append(errs, field.Duplicate(entry, n).WithOrigin(RuleHeaders))
			}
			return
		}
		key := strings.ToLower(n)
		if prev, dup := first[key]; dup {
			errs = append(errs, field.Duplicate(fld, n).WithOrigin(RuleHeaders))
			errs[len(errs)-1].Detail = fmt.Sprintf("%s and %s name one header (header names compare without case): change each header once",
				strings.TrimPrefix(prev.String(), fld.String()+"."), strings.TrimPrefix(entry.String(), fld.String()+"."))
			return
		}
		first[key] = entry
	}
	limits := rules()
	for _, list := range []struct {
		child    string
		headers  []v1.HTTPHeader
		maxItems int
	}{{"set", m.Set, limits.headerSet}, {"add", m.Add, limits.headerAdd}} {
		lfld := fld.Child(list.child)
		if len(list.headers) > list.maxItems {
			errs = append(errs, field.TooMany(lfld, len(list.headers), list.maxItems).WithOrigin(RuleHeaders))
			continue
		}
		written = map[string]int{}
		for i, h := range list.headers {
			entry := lfld.Index(i)
			name(string(h.Name), entry.Child("name"), entry)
			errs = append(errs, validateHeaderValue(string(h.Value), entry.Child("value"))...)
		}
	}
	rfld := fld.Child("remove")
	if len(m.Remove) > limits.headerRemove {
		return append(errs, field.TooMany(rfld, len(m.Remove), limits.headerRemove).WithOrigin(RuleHeaders))
	}
	written = map[string]int{}
	for i, n := range m.Remove {
		entry := rfld.Index(i)
		name(string(n), entry, entry)
	}
	return errs
}

func validateHeaderName(n string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch rule := rules().headerName; {
	case n == "":
		err = field.Required(fld, "a header name such as X-Team")
	case len(n) > rule.maxLength:
		err = field.TooLong(fld, n, rule.maxLength)
	case !rule.pattern.MatchString(n):
		err = field.Invalid(fld, n, "must hold only letters, digits and '-', starting with a letter or digit, such as X-Team")
	case rules().reservedHeaders[strings.ToLower(n)]:
		err = field.Invalid(fld, n, reservedHeaderMessage)
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleHeaders)}
}

func validateHeaderValue(v string, fld *field.Path) field.ErrorList {
	var err *field.Error
	switch rule := rules().headerValue; {
	case len(v) > rule.maxLength:
		err = field.TooLong(fld, "", rule.maxLength)
	case !rule.pattern.MatchString(v):
		err = field.Invalid(fld, v, `must be printable ASCII, without '"', '\' or '$', and not start or end with a space`)
	default:
		return nil
	}
	return field.ErrorList{err.WithOrigin(RuleHeaders)}
}

func validateRateLimit(l *v1.RateLimit, fld *field.Path) field.ErrorList {
	if l == nil {
		return nil
	}
	var errs field.ErrorList
	limits := rules()
	for _, v := range []struct {
		name   string
		value  int32
		bounds intRange
	}{{"requestsPerSecond", l.RequestsPerSecond, limits.requestsPerSecond}, {"burst", l.Burst, limits.burst}} {
		if !v.bounds.holds(int64(v.value)) {
			errs = append(errs, field.Invalid(fld.Child(v.name), v.value,
				fmt.Sprintf("must be from %d to %d", v.bounds.min, v.bounds.max)).WithOrigin(RuleRateLimit))
		}
	}
	return errs
}
