package validation

import (
	"fmt"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation/validationtest"
)

// retriesCases are a route's retries (routes[].retries) in TestRuleCases:
// attempts on both sides of its bounds, each condition, a condition
// twice, one the schema does not list, and the hostile strings as one.
// Each case has one fault, on an otherwise valid route.
func retriesCases(add addCase) {
	all := []v1.RetryCondition{v1.RetryOnConnectError, v1.RetryOnTimeout, v1.RetryOnHTTP502, v1.RetryOnHTTP503, v1.RetryOnHTTP504}
	cases := map[string]v1.RouteRetries{
		"attempts alone":           {Attempts: 2},
		"every condition":          {Attempts: 2, On: all},
		"non-idempotent too":       {Attempts: 1, On: all[:1], NonIdempotent: true},
		"a condition twice":        {Attempts: 2, On: []v1.RetryCondition{"timeout", "timeout"}},
		"condition http500":        {Attempts: 2, On: []v1.RetryCondition{"http500"}},
		"condition ConnectError":   {Attempts: 2, On: []v1.RetryCondition{"ConnectError"}},
		"condition empty":          {Attempts: 2, On: []v1.RetryCondition{""}},
		"condition nginx's error":  {Attempts: 2, On: []v1.RetryCondition{"error"}},
		"condition non_idempotent": {Attempts: 2, On: []v1.RetryCondition{"non_idempotent"}},
	}
	valid := map[string]bool{"attempts alone": true, "every condition": true, "non-idempotent too": true}
	for _, c := range all {
		cases["condition "+string(c)] = v1.RouteRetries{Attempts: 3, On: []v1.RetryCondition{c}}
		valid["condition "+string(c)] = true
	}
	for value, ok := range map[int32]bool{1: true, 5: true, 0: false, 6: false, -1: false} {
		name := fmt.Sprintf("attempts %d", value)
		cases[name] = v1.RouteRetries{Attempts: value}
		valid[name] = ok
	}
	for name, s := range validationtest.HostileStrings() {
		cases["a condition with a "+name] = v1.RouteRetries{Attempts: 2, On: []v1.RetryCondition{v1.RetryCondition("timeout" + s)}}
	}
	for value, rt := range cases {
		add("retries", value, valid[value], func(p *ruleCase) { p.route.Retries = &rt })
	}
	add("retries", "with every setting", true, func(p *ruleCase) { p.route = validationtest.EverySetting(p.route) })
}
