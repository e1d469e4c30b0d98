package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

// CacheOptions are the manager's cache options. They restrict the cache of
// ConfigMaps, Deployments, Services and Ingresses to the children the
// operator manages, so it does not hold every such object in the cluster,
// and they keep of each cached object only what the operator reads: the
// operator's memory grows with the number of gateways by what the cache
// holds per gateway.
//
// Of a child, the reconciler reads whether the gateway controls it
// (owner references), whether what the operator last applied is what it
// wants now (a digest of the applied configuration, computed from the
// managed fields as the object enters the cache), the Deployment's
// generation and status, and the Service's ports (repairServicePorts);
// see child.transform. Of an APIGateway, the reconciler and the
// validating webhook's index read neither the managed fields nor the
// annotations (slimGateway). Nothing else
// the operator caches has its managed fields read either.
//
// The HTTPRoutes are not here: the cluster may gain or lose them while the
// operator runs, so they have a cache of their own while it serves them
// (httpRouteWatch), with the same selector and transform. Of Gateway API,
// this cache holds only the HTTPRoute CRD, which says whether it is served
// (GatewayAPI).
func CacheOptions() cache.Options {
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&v1.APIGateway{}:                {Transform: slimGateway},
			&corev1.ConfigMap{}:             cachedChildren(configMapChild),
			&appsv1.Deployment{}:            cachedChildren(deploymentChild),
			&corev1.Service{}:               cachedChildren(serviceChild),
			&networkingv1.Ingress{}:         cachedChildren(ingressChild),
			&policyv1.PodDisruptionBudget{}: cachedChildren(disruptionBudgetChild),
			// Read only while --gateway-status-from is set.
			&networkingv1.NetworkPolicy{}: cachedChildren(networkPolicyChild),
			// The gateway pods and their ReplicaSets (as metadata), which
			// carry the pod template's labels: which pods to ask what they
			// serve, which cannot start (stuckContainers), and whether the
			// gateway's Deployment made them (ownPods).
			&corev1.Pod{}:        {Label: managedSelector(), Transform: slimPod},
			&appsv1.ReplicaSet{}: {Label: managedSelector(), Transform: slimReplicaSet},
			&apiextensionsv1.CustomResourceDefinition{}: crdCache(),
		},
	}
}

// cachedChildren caches the labelled objects of k's kind, transformed.
func cachedChildren[O client.Object, A runtime.ApplyConfiguration](k child[O, A]) cache.ByObject {
	return cache.ByObject{Label: managedSelector(), Transform: k.transform}
}

// slimGateway is the APIGateway cache's transform: it drops the managed
// fields and the annotations (kubectl's last-applied configuration, which
// copies the whole object, v1alpha1's conversion data, a GitOps tool's
// own), none of which the reconciler or the webhooks read of a cached
// gateway: admission reads the annotations of the object under review,
// never the cache's. The status patch is a merge patch between two copies
// of the cached object, so what the cache lacks is never written.
func slimGateway(obj any) (any, error) {
	if gw, ok := obj.(*v1.APIGateway); ok {
		gw.ManagedFields, gw.Annotations = nil, nil
	}
	return obj, nil
}

// transform is the cache transform of k's kind. It records the digest of
// what FieldOwner last applied to the object (see cachedDigest) in place
// of the managed fields, then drops the labels and annotations (the cache
// selected the object by its labels already; the reconciler reads
// neither) and what k.slim drops. Managed fields that hold an Update entry
// of FieldOwner, a moment after a create or a repair, stay, and no digest
// is recorded: the reconciler first folds the entry into FieldOwner's
// apply (upgradeManagedFields) and compares the object the API server
// answers that with. A hand edit of a field the operator owns moves the field's
// ownership, so it changes the digest as it changed the applied
// configuration the digest replaces. An object whose managed fields cannot
// be read is cached whole: applyControlled then reports the error. It is
// idempotent, as client-go asks.
func (k child[O, A]) transform(obj any) (any, error) {
	o, ok := obj.(O)
	if !ok || cachedDigest(o) != "" {
		return obj, nil
	}
	if !upgradePending(o) {
		digest, err := appliedDigest(o, k.extract)
		if err != nil {
			return obj, nil
		}
		o.SetManagedFields(nil)
		o.SetSelfLink(o.GetResourceVersion() + " " + digest)
	}
	o.SetLabels(nil)
	o.SetAnnotations(nil)
	if k.slim != nil {
		k.slim(o)
	}
	return o, nil
}

// upgradePending reports whether obj's managed fields hold an Update
// entry of FieldOwner: the entries upgradeManagedFields folds into
// FieldOwner's apply, and the only ones that make it write.
func upgradePending(obj client.Object) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == FieldOwner && e.Operation == metav1.ManagedFieldsOperationUpdate && e.Subresource == "" {
			return true
		}
	}
	return false
}

// cachedDigest is the digest of what FieldOwner last applied to obj that
// the cache transform recorded, or "" when obj has none for its
// resourceVersion (a copy that something else was decoded into).
//
// The transform records it in the selfLink, as "<resourceVersion>
// <digest>". The field is deprecated: the API server no longer fills it in
// (never since Kubernetes 1.24) and drops it from every object written to
// it (TestAPIServerDropsSelfLink), so a digest there can never reach a
// stored object, whatever a future code path sends; and unlike an
// annotation it costs no map per child.
func cachedDigest(obj client.Object) string {
	rv, digest, ok := strings.Cut(obj.GetSelfLink(), " ")
	if !ok || rv != obj.GetResourceVersion() {
		return ""
	}
	return digest
}

// appliedDigest is the digest of what FieldOwner last applied to live.
func appliedDigest[O client.Object, A runtime.ApplyConfiguration](live O, extract func(O, string) (A, error)) (string, error) {
	current, err := extract(live, FieldOwner)
	if err != nil {
		return "", err
	}
	return configDigest(current)
}

// configDigest is the SHA-256 of an apply configuration's JSON encoding.
// The two sides of a comparison are of one apply configuration type, whose
// encoding is canonical: fields in declaration order, map keys sorted,
// quantities and empty structs in their wire form, unset fields left out.
// So two configurations have one digest exactly when they encode alike,
// which is what the API server would store for them.
func configDigest(ac any) (string, error) {
	data, err := json.Marshal(ac)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// slimPod keeps of a pod what ownPods, podTargets and stuckContainers
// read: its name, labels (the cache lists by them), controller, deletion,
// phase, IP, readiness, and its containers the kubelet cannot start
// (stuckStatuses): a running pod keeps no container status.
func slimPod(obj any) (any, error) {
	if p, ok := obj.(*corev1.Pod); ok {
		p.ManagedFields, p.Annotations, p.Spec = nil, nil, corev1.PodSpec{}
		var ready []corev1.PodCondition
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady {
				ready = append(ready, corev1.PodCondition{Type: c.Type, Status: c.Status})
			}
		}
		p.Status = corev1.PodStatus{Phase: p.Status.Phase, PodIP: p.Status.PodIP, Conditions: ready,
			InitContainerStatuses: stuckStatuses(p.Status.InitContainerStatuses),
			ContainerStatuses:     stuckStatuses(p.Status.ContainerStatuses)}
	}
	return obj, nil
}

// slimReplicaSet keeps of a ReplicaSet, which the cache holds as metadata
// (gatewayPods), its labels (the cache lists by them), UID and
// controller, which are what ownPods reads.
func slimReplicaSet(obj any) (any, error) {
	if rs, ok := obj.(*metav1.PartialObjectMetadata); ok {
		rs.ManagedFields, rs.Annotations = nil, nil
	}
	return obj, nil
}

// The slim functions drop, from a cached child, what the reconciler never
// reads; what stays is the object's metadata (see child.transform) and
// what is named here.
var (
	// A ConfigMap's data is the rendered configuration, the largest part
	// of a child; of it and of the push identity beside it the serial's
	// rule (nextIdentity) reads the identity's UID and serial and whether
	// the template changed, which the cache keeps in one entry
	// (pushStateKey), and only while the identity is usable.
	slimConfigMap = func(cm *corev1.ConfigMap) {
		st, ok := pushStateOf(cm)
		cm.Data, cm.BinaryData = nil, nil
		if ok {
			cm.Data = map[string]string{pushStateKey: st.String()}
		}
	}
	// The Deployment's status and generation make the gateway's status;
	// two of its template's annotations say which pods it runs
	// (podTemplate, hasReloader, liveStatus); the others (the scrape
	// annotations) nobody reads.
	slimDeployment = func(d *appsv1.Deployment) {
		var kept map[string]string
		for _, k := range []string{PodInputsAnnotation, ConfigHashAnnotation} {
			if v, ok := d.Spec.Template.Annotations[k]; ok {
				if kept == nil {
					kept = make(map[string]string, 2)
				}
				kept[k] = v
			}
		}
		d.Spec = appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: kept}}}
	}
	// repairServicePorts reads the ports' numbers and protocols.
	slimService = func(s *corev1.Service) {
		ports := make([]corev1.ServicePort, len(s.Spec.Ports))
		for i, p := range s.Spec.Ports {
			ports[i] = corev1.ServicePort{Port: p.Port, Protocol: p.Protocol}
		}
		s.Spec, s.Status = corev1.ServiceSpec{Ports: ports}, corev1.ServiceStatus{}
	}
	// Nothing of a budget's is read but its metadata.
	slimDisruptionBudget = func(b *policyv1.PodDisruptionBudget) {
		b.Spec, b.Status = policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{}
	}
	slimIngress = func(i *networkingv1.Ingress) {
		i.Spec, i.Status = networkingv1.IngressSpec{}, networkingv1.IngressStatus{}
	}
	// The parents' verdicts make the Exposed condition, whose message
	// names the route's host.
	slimHTTPRoute = func(r *gatewayv1.HTTPRoute) { r.Spec = gatewayv1.HTTPRouteSpec{Hostnames: r.Spec.Hostnames} }
)
