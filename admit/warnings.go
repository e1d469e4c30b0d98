package admit

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	v1 "example.com/apigateway-operator/api/v1"
)

// maxQuoted bounds how much of a user string a warning repeats: kubectl
// prints warnings on one line each, and the API server truncates long ones.
const maxQuoted = 100

// portWarnings warns once per Service and port for a backend port that an
// existing Service does not expose: the route would answer 502 until the
// Service gets the port; for an externalAuth port, 500 (fail closed).
// ports lists only the Services that exist.
func portWarnings(routes []v1.Route, ports map[string][]int32) []string {
	var w []string
	warned := map[v1.BackendService]bool{}
	warn := func(b v1.BackendService, field string) {
		have, exists := ports[string(b.Name)]
		if !exists || slices.Contains(have, int32(b.Port)) || warned[b] {
			return
		}
		warned[b] = true
		w = append(w, fmt.Sprintf("%s: Service %s has no port %d (its ports: %s)",
			field, warningQuoted(string(b.Name)), b.Port, portList(have)))
	}
	for i, r := range routes {
		warn(r.BackendService, fmt.Sprintf("spec.routes[%d].backendService", i))
		for j, rule := range r.Rules {
			warn(rule.BackendService, fmt.Sprintf("spec.routes[%d].rules[%d].backendService", i, j))
		}
		if a := r.ExternalAuth; a != nil {
			warn(v1.BackendService{Name: a.Service, Port: a.Port}, fmt.Sprintf("spec.routes[%d].externalAuth", i))
		}
	}
	return w
}

func portList(ports []int32) string {
	if len(ports) == 0 {
		return "none"
	}
	s := make([]string, len(ports))
	for i, p := range ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ", ")
}

// warningQuoted quotes s for a warning, escaping anything unprintable and
// cutting it short.
func warningQuoted(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}
