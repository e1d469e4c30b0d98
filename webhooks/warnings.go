package webhooks

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "example.com/apigateway-operator/api/v1"
)

// maxQuoted bounds how much of a user string a warning repeats: kubectl
// prints warnings on one line each, and the API server truncates long ones.
const maxQuoted = 100

// warnings returns what is allowed but probably a mistake: SpecWarnings,
// and a backend port its Service does not have.
func warnings(gw *v1.APIGateway, related RelatedObjects) admission.Warnings {
	return append(SpecWarnings(gw), portWarnings(gw.Spec.Routes, related.ServicePorts)...)
}

// The warnings about the gateway alone. manifests/policy/warnings.yaml
// sends the same ones from the API server (its messages are these).
const (
	warnUntagged = `spec.image has no tag, which means "latest": pods may run different builds; ` +
		"pin a version (as in nginx:1.27) or a digest"
	warnLatest     = `spec.image uses the tag "latest": pods may run different builds; pin a version or a digest`
	warnOneReplica = "spec.replicas: 1 runs a single gateway pod with no redundancy: a node drain or a pod restart " +
		"interrupts traffic; set 2 or more for production"
)

// SpecWarnings are the warnings about the gateway alone: an image that is
// not pinned and a single replica. The API server sends them through the
// warnings policy, so the validating webhook leaves them out; the offline
// validate command reports them from here.
func SpecWarnings(gw *v1.APIGateway) admission.Warnings {
	var w admission.Warnings
	if msg := imageWarning(gw.Spec.Image); msg != "" {
		w = append(w, msg)
	}
	if r := gw.Spec.Replicas; r != nil && *r == 1 {
		w = append(w, warnOneReplica)
	}
	return w
}

// imageWarning warns about an image that is not pinned: without a tag or
// with "latest", pods started at different times may run different builds.
// A digest pins the image whatever the tag says. The message does not
// repeat the image: the policy's copy of it could not quote it the same way.
func imageWarning(image string) string {
	if image == "" || strings.Contains(image, "@") {
		return ""
	}
	name := image[strings.LastIndexByte(image, '/')+1:]
	_, tag, tagged := strings.Cut(name, ":")
	switch {
	case !tagged:
		return warnUntagged
	case tag == "latest":
		return warnLatest
	}
	return ""
}

// portWarnings warns once per Service and port for a backend port that an
// existing Service does not expose: the route would answer 502 until the
// Service gets the port. ports lists only the Services that exist.
func portWarnings(routes []v1.Route, ports map[string][]int32) admission.Warnings {
	var w admission.Warnings
	warned := map[v1.BackendService]bool{}
	for i, r := range routes {
		b := r.BackendService
		have, exists := ports[b.Name]
		if !exists || slices.Contains(have, b.Port) || warned[b] {
			continue
		}
		warned[b] = true
		w = append(w, fmt.Sprintf("spec.routes[%d].backendService: Service %s has no port %d (its ports: %s)",
			i, warningQuoted(b.Name), b.Port, portList(have)))
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

// warningQuoted quotes s for a warning, escaping anything unprintable and cutting
// it short.
func warningQuoted(s string) string {
	if len(s) > maxQuoted {
		return strconv.Quote(s[:maxQuoted]) + "..."
	}
	return strconv.Quote(s)
}
