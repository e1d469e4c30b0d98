package validation

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/parser"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// The bounds, patterns and enums the rules check are the v1 schema's,
// read from the CRD the cluster gets (manifests/crd), never restated in
// Go: a marker in api/v1 is the one place a number, a pattern or a list of
// values is written. The rules still check them themselves, for every way
// in (a write through v1alpha1 meets only the v1alpha1 schema, yet the
// conversion annotation can bring v1-only fields back), and so that they
// never format an unbounded value.

// An intRange is an integer field's minimum and maximum.
type intRange struct{ min, max int64 }

func (r intRange) holds(v int64) bool { return r.min <= v && v <= r.max }

// A stringRule is a string field's maxLength and, where the schema has
// one, its pattern.
type stringRule struct {
	maxLength int
	pattern   *regexp.Regexp
}

// schemaRules are the schema's numbers, patterns and values that the Go
// rules read, each named by the field it belongs to.
type schemaRules struct {
	replicas, backendPort, weight, connectSeconds, readSeconds, requestsPerSecond, burst intRange
	redirectPort, authTimeoutSeconds, corsMaxAge, retryAttempts                          intRange

	image, host, path, backendName, secretName, ingressClassName stringRule
	headerName, headerValue, maxBodySize                         stringRule
	matchName, queryValue, cookieValue                           stringRule
	cidr, signInURL                                              stringRule
	basicAuthSecret, basicAuthRealm, corsOrigin, corsHeaderName  stringRule

	routes, tls, tlsHosts, parentRefs, additionalBackends, delegations, pathPrefixes int
	headerSet, headerAdd, headerRemove                                               int
	rules, ruleMatches, matchHeaders, matchQueryParams, matchCookies                 int
	sourceAllow, sourceDeny, authForwardHeaders, authResponseHeaders, retryOn        int
	corsOrigins, corsMethods, corsAllowHeaders, corsExposeHeaders                    int

	pathTypes, configUpdateStrategies, exposureTypes, accessLogFormats []string
	retryConditions                                                    []string
	matchTypes, methods, corsMethodValues                              []string
	redirectSchemes, redirectPathTypes                                 []string
	redirectCodes                                                      []int64

	// reservedHeaders are the names, lower-cased, that HTTPHeaderName's
	// CEL rule refuses.
	reservedHeaders map[string]bool
	// authSetHeaders are the names, lower-cased, that the gateway sets on
	// the request to an authentication Service and forwardHeaders may not
	// name.
	authSetHeaders map[string]bool
}

// rules is compiled once, on first use, as specLimits is: a rule then reads
// a field of a struct, as it read a constant before.
var rules = sync.OnceValue(func() *schemaRules {
	r, err := rulesOf(embeddedSpec())
	if err != nil {
		// The CRD is generated and embedded at build time: a binary whose
		// CRD lacks a bound its rules read must not start.
		panic(fmt.Sprintf("validation: the embedded CRD: %v", err))
	}
	return r
})

// rulesOf reads the rules from the v1 spec's schema.
func rulesOf(spec *apiextensionsv1.JSONSchemaProps) (*schemaRules, error) {
	c := ruleCompiler{spec: spec}
	route := "routes[]."
	r := &schemaRules{
		replicas:           c.intRange("replicas"),
		backendPort:        c.intRange(route + "backendService.port"),
		weight:             c.intRange(route + "additionalBackends[].weight"),
		connectSeconds:     c.intRange(route + "timeouts.connectSeconds"),
		readSeconds:        c.intRange(route + "timeouts.readSeconds"),
		requestsPerSecond:  c.intRange(route + "rateLimit.requestsPerSecond"),
		burst:              c.intRange(route + "rateLimit.burst"),
		redirectPort:       c.intRange(route + "redirect.port"),
		authTimeoutSeconds: c.intRange(route + "externalAuth.timeoutSeconds"),
		retryAttempts:      c.intRange(route + "retries.attempts"),
		corsMaxAge:         c.intRange(route + "cors.maxAge"),

		image:            c.stringRule("image", false),
		host:             c.stringRule(route+"host", false),
		path:             c.stringRule(route+"path", false),
		backendName:      c.stringRule(route+"backendService.name", false),
		secretName:       c.stringRule("tls[].secretName", false),
		ingressClassName: c.stringRule("ingressClassName", false),
		headerName:       c.stringRule(route+"requestHeaders.set[].name", true),
		headerValue:      c.stringRule(route+"requestHeaders.set[].value", true),
		maxBodySize:      c.stringRule(route+"maxBodySize", true),
		matchName:        c.stringRule(route+"rules[].matches[].cookies[].name", true),
		queryValue:       c.stringRule(route+"rules[].matches[].queryParams[].value", true),
		cookieValue:      c.stringRule(route+"rules[].matches[].cookies[].value", true),
		cidr:             c.stringRule(route+"sourceRanges.allow[]", false),
		basicAuthSecret:  c.stringRule(route+"basicAuth.secretName", false),
		basicAuthRealm:   c.stringRule(route+"basicAuth.realm", true),
		corsOrigin:       c.stringRule(route+"cors.allowOrigins[]", true),
		corsHeaderName:   c.stringRule(route+"cors.allowHeaders[]", true),
		signInURL:        c.stringRule(route+"externalAuth.signInURL", true),

		routes:              c.maxItems("routes"),
		tls:                 c.maxItems("tls"),
		tlsHosts:            c.maxItems("tls[].hosts"),
		parentRefs:          c.maxItems("exposure.httpRoute.parentRefs"),
		additionalBackends:  c.maxItems(route + "additionalBackends"),
		delegations:         c.maxItems("delegations"),
		pathPrefixes:        c.maxItems("delegations[].pathPrefixes"),
		headerSet:           c.maxItems(route + "requestHeaders.set"),
		headerAdd:           c.maxItems(route + "requestHeaders.add"),
		headerRemove:        c.maxItems(route + "requestHeaders.remove"),
		rules:               c.maxItems(route + "rules"),
		ruleMatches:         c.maxItems(route + "rules[].matches"),
		matchHeaders:        c.maxItems(route + "rules[].matches[].headers"),
		matchQueryParams:    c.maxItems(route + "rules[].matches[].queryParams"),
		matchCookies:        c.maxItems(route + "rules[].matches[].cookies"),
		sourceAllow:         c.maxItems(route + "sourceRanges.allow"),
		sourceDeny:          c.maxItems(route + "sourceRanges.deny"),
		authForwardHeaders:  c.maxItems(route + "externalAuth.forwardHeaders"),
		authResponseHeaders: c.maxItems(route + "externalAuth.responseHeaders"),
		retryOn:             c.maxItems(route + "retries.on"),
		corsOrigins:         c.maxItems(route + "cors.allowOrigins"),
		corsMethods:         c.maxItems(route + "cors.allowMethods"),
		corsAllowHeaders:    c.maxItems(route + "cors.allowHeaders"),
		corsExposeHeaders:   c.maxItems(route + "cors.exposeHeaders"),

		pathTypes:              c.enum(route + "pathType"),
		configUpdateStrategies: c.enum("configUpdateStrategy"),
		exposureTypes:          c.enum("exposure.type"),
		accessLogFormats:       c.enum("accessLog.format"),
		matchTypes:             c.enum(route + "rules[].matches[].headers[].type"),
		methods:                c.enum(route + "rules[].matches[].method"),
		retryConditions:        c.enum(route + "retries.on[]"),
		corsMethodValues:       c.enum(route + "cors.allowMethods[]"),
		redirectSchemes:        c.enum(route + "redirect.scheme"),
		redirectPathTypes:      c.enum(route + "redirect.path.type"),
		redirectCodes:          c.intEnum(route + "redirect.statusCode"),

		reservedHeaders: c.celStrings(route+"requestHeaders.set[].name", reservedHeaderMessage),
		authSetHeaders:  c.celStrings(route+"externalAuth.forwardHeaders", authSetHeadersMessage),
	}
	return r, c.err
}

// A ruleCompiler reads schema nodes of spec by path ("routes[].host": a
// property, "[]" a list's items), keeping the first error.
type ruleCompiler struct {
	spec *apiextensionsv1.JSONSchemaProps
	err  error
}

func (c *ruleCompiler) node(path string) *apiextensionsv1.JSONSchemaProps {
	s := c.spec
	for part := range strings.SplitSeq(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			c.fail(path, "no property "+name)
			return &apiextensionsv1.JSONSchemaProps{}
		}
		s = &p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				c.fail(path, name+" is not a list")
				return &apiextensionsv1.JSONSchemaProps{}
			}
			s = s.Items.Schema
		}
	}
	return s
}

func (c *ruleCompiler) fail(path, why string) {
	if c.err == nil {
		c.err = fmt.Errorf("spec.%s: %s", path, why)
	}
}

func (c *ruleCompiler) intRange(path string) intRange {
	s := c.node(path)
	if s.Minimum == nil || s.Maximum == nil {
		c.fail(path, "no minimum and maximum")
		return intRange{}
	}
	return intRange{int64(*s.Minimum), int64(*s.Maximum)}
}

func (c *ruleCompiler) stringRule(path string, withPattern bool) stringRule {
	s := c.node(path)
	if s.MaxLength == nil {
		c.fail(path, "no maxLength")
		return stringRule{}
	}
	r := stringRule{maxLength: int(*s.MaxLength)}
	if withPattern {
		// The schema's patterns are ECMA-262; these are written in the
		// part of it that RE2 reads alike.
		p, err := regexp.Compile(s.Pattern)
		if s.Pattern == "" || err != nil {
			c.fail(path, fmt.Sprintf("no pattern Go can compile (%v)", err))
			return r
		}
		r.pattern = p
	}
	return r
}

func (c *ruleCompiler) maxItems(path string) int {
	s := c.node(path)
	if s.MaxItems == nil {
		c.fail(path, "no maxItems")
		return 0
	}
	return int(*s.MaxItems)
}

// celStrings reads the list of strings in the CEL rule of the node at path
// whose message is message, such as the names a rule refuses with
// "!(self.lowerAscii() in ['host', ...])": the rule is parsed, not
// evaluated, so the Go check of a name stays a map lookup.
func (c *ruleCompiler) celStrings(path, message string) map[string]bool {
	s := c.node(path)
	for _, rule := range s.XValidations {
		if rule.Message != message {
			continue
		}
		p, err := parser.NewParser()
		if err != nil {
			c.fail(path, "no CEL parser: "+err.Error())
			return nil
		}
		parsed, errs := p.Parse(common.NewTextSource(rule.Rule))
		if len(errs.GetErrors()) > 0 {
			c.fail(path, "a CEL rule that does not parse: "+errs.ToDisplayString())
			return nil
		}
		values := map[string]bool{}
		ast.PreOrderVisit(parsed.Expr(), ast.NewExprVisitor(func(e ast.Expr) {
			if e.Kind() != ast.ListKind {
				return
			}
			for _, el := range e.AsList().Elements() {
				if el.Kind() == ast.LiteralKind {
					if v, ok := el.AsLiteral().(types.String); ok {
						values[string(v)] = true
					}
				}
			}
		}))
		if len(values) == 0 {
			c.fail(path, "no list of strings in the rule "+rule.Rule)
		}
		return values
	}
	c.fail(path, fmt.Sprintf("no CEL rule with the message %q", message))
	return nil
}

// intEnum reads an integer field's enum, such as a redirect's status
// codes.
func (c *ruleCompiler) intEnum(path string) []int64 {
	s := c.node(path)
	values := make([]int64, 0, len(s.Enum))
	for _, e := range s.Enum {
		var v int64
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			c.fail(path, "an enum value that is not an integer")
			return nil
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		c.fail(path, "no enum")
	}
	return values
}

func (c *ruleCompiler) enum(path string) []string {
	s := c.node(path)
	values := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		var v string
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			c.fail(path, "an enum value that is not a string")
			return nil
		}
		values = append(values, v)
	}
	if len(values) == 0 {
		c.fail(path, "no enum")
	}
	return values
}
