package ownership

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/validation"
)

// Classes are the cluster's IngressClasses, as far as scopes need them.
type Classes struct {
	// Default is the name of the cluster's default IngressClass, "" when
	// it has none.
	Default string
	// Exists reports whether an IngressClass of the name exists. Nil means
	// every class exists: the offline commands, which see no cluster.
	Exists func(name string) bool
}

// Scope is one scope a gateway's routes are exposed in: an ingress class
// or a parent Gateway.
type Scope struct {
	// Name is the scope as claims record it: the ingress class, quoted,
	// "default" for an Ingress that names none, or "gateway ns/name".
	Name string
	// Keys are the validation.RouteScopes spellings whose route keys
	// compete in it: an Ingress that names no class gets the cluster's
	// default class (the API server writes it in), so it competes with
	// one that names that class, and both spellings are listed.
	Keys []string
	// ingress is true for an ingress class; its class then is the class's
	// name ("" for "default").
	ingress bool
	class   string
}

// defaultScope is validation.RouteScopes' spelling of an Ingress that
// names no class.
const defaultScope = "default"

// Scopes are gw's scopes as the cluster's classes resolve them, in
// validation.RouteScopes' order.
func Scopes(gw *v1.APIGateway, classes Classes) []Scope {
	if validation.ExposedByHTTPRoute(&gw.Spec) {
		names := validation.RouteScopes(gw)
		out := make([]Scope, len(names))
		for i, n := range names {
			out[i] = Scope{Name: n, Keys: []string{n}}
		}
		return out
	}
	if gw.Spec.IngressClassName == nil {
		// Named "default" whatever the default class is, so that its
		// claims outlive a change of the default; it competes with the
		// default class's routes under either spelling.
		s := Scope{Name: defaultScope, Keys: []string{defaultScope}, ingress: true}
		if classes.Default != "" {
			s.Keys = append(s.Keys, strconv.Quote(classes.Default))
		}
		return []Scope{s}
	}
	class := *gw.Spec.IngressClassName
	s := Scope{Name: strconv.Quote(class), Keys: []string{strconv.Quote(class)}, ingress: true, class: class}
	if class == classes.Default {
		s.Keys = append(s.Keys, defaultScope)
	}
	return []Scope{s}
}

// IngressRoutes reports whether an Ingress of scope s routes at all: its
// class exists, or it names none (a cluster without a default class may
// still have a controller that takes Ingresses without one). A parent
// Gateway's scope is not an ingress class: false.
func (s Scope) IngressRoutes(classes Classes) bool {
	if !s.ingress {
		return false
	}
	return s.class == "" || classes.Exists == nil || classes.Exists(s.class)
}

// Ingress reports whether s is an ingress class rather than a parent
// Gateway.
func (s Scope) Ingress() bool { return s.ingress }

// DefaultClassAnnotation marks the cluster's default IngressClass.
const DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

// ClassesOf are the Classes of the cluster whose IngressClasses are
// classes (their metadata is enough). With several marked default, the
// newest is the default, as the API server's DefaultIngressClass
// admission picks it.
func ClassesOf(classes []metav1.PartialObjectMetadata) Classes {
	names := make(map[string]bool, len(classes))
	var def *metav1.PartialObjectMetadata
	for i := range classes {
		c := &classes[i]
		names[c.Name] = true
		if c.Annotations[DefaultClassAnnotation] != "true" {
			continue
		}
		if def == nil || def.CreationTimestamp.Before(&c.CreationTimestamp) ||
			(def.CreationTimestamp.Equal(&c.CreationTimestamp) && c.Name < def.Name) {
			def = c
		}
	}
	out := Classes{Exists: func(name string) bool { return names[name] }}
	if def != nil {
		out.Default = def.Name
	}
	return out
}
