package controller

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

// Basic auth (issue 35). The htpasswd files the routes name reach the
// gateway's pods, and only them, through a Secret of the gateway's own,
// N-basic-auth, mounted read-only at basicauth.Dir:
//
//   - The operator reads only the Secrets routes name, by name, straight
//     from the API server: no informer, so no Secret of the cluster sits in
//     its memory, and its role grants get, not list or watch (which would
//     hand it every Secret). A Secret's changes are noticed by a metadata
//     read of each named Secret every basicAuthResync (basicAuthWatch).
//   - It copies into N-basic-auth only what basicauth.Check accepts, under
//     the file names basicauth.File gives, and an empty file for a Secret
//     missing or refused (nginx answers 401): nothing of a tenant's Secret
//     but checked htpasswd lines reaches a pod, and no key of it a path.
//   - The content reaches neither the ConfigMap, nor the pod template, nor
//     the status, events or logs: the configuration names the file, the
//     kubelet updates a mounted Secret in place (within its sync period)
//     and nginx opens the file on each request, so a new password goes
//     live with no reload and no rollout.
//
// The push channel (issue 33) is not used for it: pushes are signed but
// travel in clear over the pod network, which must not carry password
// hashes; see docs/security.md.

// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch

const (
	// basicAuthResync is how often basicAuthWatch reads the metadata of
	// the Secrets gateways name: a new password reaches the pods within
	// this and the kubelet's sync of the mounted Secret.
	basicAuthResync = 30 * time.Second
	// basicAuthSuffix names the gateway's own Secret, N-basic-auth.
	basicAuthSuffix = "-basic-auth"
	// basicAuthVolume names its volume in the pod.
	basicAuthVolume = "basic-auth"
	// maxProblems bounds the Secrets the condition's message names.
	maxProblems = basicauth.MaxSecrets
)

// basicAuthSecretName is the name of gw's own Secret of htpasswd files.
func basicAuthSecretName(gw *v1.APIGateway) string { return gw.Name + basicAuthSuffix }

// hasBasicAuth reports whether a route of gw sets basicAuth: only then do
// its pods mount the Secret.
func hasBasicAuth(gw *v1.APIGateway) bool {
	return slices.ContainsFunc(gw.Spec.Routes, func(r v1.Route) bool { return r.BasicAuth != nil })
}

// basicAuthSecrets are the names of the Secrets gw's routes name, sorted,
// each once.
func basicAuthSecrets(gw *v1.APIGateway) []string {
	var names []string
	for _, r := range gw.Spec.Routes {
		if r.BasicAuth != nil {
			names = append(names, r.BasicAuth.SecretName)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// basicAuth is what one pass read of the Secrets gw names: the files for
// the gateway's Secret, what is wrong with some (no content), and the
// resourceVersion of each ("" for one that does not exist).
type basicAuth struct {
	// used: some route of the gateway sets basicAuth, or the gateway's
	// status says one did (its Secret is then emptied once).
	used     bool
	files    map[string]string
	problems []string
	versions map[string]string
	// err is a read that failed: the gateway's Secret is left as it is.
	err error
	// taken: N-basic-auth is someone else's; the Deployment, whose pods
	// would mount it, is left as it is.
	taken bool
}

// secretReader reads one Secret, whole or its metadata only.
type secretReader interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
}

// readBasicAuth reads the Secrets gw's routes name, at most
// basicauth.MaxSecrets, with live (never a cache).
func readBasicAuth(ctx context.Context, live secretReader, gw *v1.APIGateway) basicAuth {
	a := basicAuth{used: hasBasicAuth(gw) || meta.FindStatusCondition(gw.Status.Conditions, v1.ConditionBasicAuth) != nil,
		files: map[string]string{}, versions: map[string]string{}}
	for i, name := range basicAuthSecrets(gw) {
		a.files[basicauth.File(name)] = ""
		if i >= basicauth.MaxSecrets {
			a.problems = append(a.problems, fmt.Sprintf("Secret %s: the routes name more than %d Secrets", name, basicauth.MaxSecrets))
			continue
		}
		var s corev1.Secret
		switch err := live.Get(ctx, client.ObjectKey{Namespace: gw.Namespace, Name: name}, &s); {
		case apierrors.IsNotFound(err):
			a.versions[name] = ""
			a.problems = append(a.problems, fmt.Sprintf("Secret %s does not exist", name))
			continue
		case err != nil:
			a.err = fmt.Errorf("reading Secret %s: %w", name, err)
			return a
		}
		a.versions[name] = s.ResourceVersion
		file, problem := htpasswdOf(&s)
		a.files[basicauth.File(name)] = file
		if problem != "" {
			a.problems = append(a.problems, fmt.Sprintf("Secret %s: %s", name, problem))
		}
	}
	return a
}

// htpasswdOf is the checked htpasswd file of s, or what is wrong with it.
func htpasswdOf(s *corev1.Secret) (string, string) {
	data, ok := s.Data[basicauth.SecretKey]
	if !ok {
		return "", fmt.Sprintf("no key %q (the htpasswd file, as ingress-nginx's auth-secret)", basicauth.SecretKey)
	}
	file, err := basicauth.Check(data)
	if err != nil {
		return "", err.Error()
	}
	return file, ""
}

// desiredBasicAuthSecret is gw's Secret N-basic-auth holding files, each
// a checked htpasswd file (or empty) under its basicauth.File name.
func desiredBasicAuthSecret(gw *v1.APIGateway, files map[string]string) *corev1ac.SecretApplyConfiguration {
	s := corev1ac.Secret(basicAuthSecretName(gw), gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithType(corev1.SecretTypeOpaque)
	if len(files) > 0 {
		data := make(map[string][]byte, len(files))
		for k, f := range files {
			data[k] = []byte(f)
		}
		s.WithData(data)
	}
	return s
}

// basicAuthCondition is gw's BasicAuth condition, nil for a gateway that
// has no basicAuth route (the condition is then removed).
func basicAuthCondition(gw *v1.APIGateway, a basicAuth) *metav1.Condition {
	switch {
	case !hasBasicAuth(gw):
		return nil
	case a.err != nil:
		return &metav1.Condition{Type: v1.ConditionBasicAuth, Status: metav1.ConditionUnknown, Reason: ReasonApplyFailed,
			Message: "the Secrets could not be read; the pods keep the files they have: " + a.err.Error()}
	case a.taken:
		return &metav1.Condition{Type: v1.ConditionBasicAuth, Status: metav1.ConditionFalse, Reason: ReasonChildNameTaken,
			Message: "Secret " + basicAuthSecretName(gw) + " is not this gateway's: its pods cannot get the htpasswd files, and the basicAuth routes answer 403"}
	case len(a.problems) > 0:
		problems := a.problems
		if len(problems) > maxProblems {
			problems = append(problems[:maxProblems:maxProblems], fmt.Sprintf("and %d more", len(a.problems)-maxProblems))
		}
		return &metav1.Condition{Type: v1.ConditionBasicAuth, Status: metav1.ConditionFalse, Reason: v1.ReasonSecretInvalid,
			Message: strings.Join(problems, "; ") + ": the routes naming them answer 401"}
	}
	return &metav1.Condition{Type: v1.ConditionBasicAuth, Status: metav1.ConditionTrue, Reason: v1.ReasonSecretsValid,
		Message: fmt.Sprintf("Secrets the routes name: %d, each holding an htpasswd file the gateway serves", len(a.versions))}
}

// setBasicAuthCondition sets or removes the BasicAuth condition in st.
func setBasicAuthCondition(st *v1.APIGatewayStatus, gw *v1.APIGateway, c *metav1.Condition, now metav1.Time) {
	if c == nil {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionBasicAuth)
		return
	}
	c.ObservedGeneration, c.LastTransitionTime = gw.Generation, now
	meta.SetStatusCondition(&st.Conditions, *c)
}

// applyBasicAuth writes gw's Secret N-basic-auth from a, when a read
// every Secret, and reports what it did through note. A gateway whose
// routes dropped basicAuth gets its Secret emptied once (the status's
// condition says it had one); one that never had basicAuth costs no
// request at all.
func (r *Reconciler) applyBasicAuth(ctx context.Context, gw *v1.APIGateway, a *basicAuth, note func(string, client.Object, action, error)) {
	if !a.used {
		return
	}
	key := client.ObjectKey{Namespace: gw.Namespace, Name: basicAuthSecretName(gw)}
	stub := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if a.err != nil {
		// Retried; the pods keep the files they have.
		note("Secret", stub, unchanged, a.err)
		return
	}
	act, err := r.writeBasicAuthSecret(ctx, gw, key, desiredBasicAuthSecret(gw, a.files))
	a.taken = isNameTaken(err)
	note("Secret", stub, act, err)
}

// writeBasicAuthSecret applies want when gw controls the Secret named key
// or none exists, and only when its data or metadata differ: a live read
// (Secrets are in no cache) and, when nothing changed, no write.
func (r *Reconciler) writeBasicAuthSecret(ctx context.Context, gw *v1.APIGateway, key client.ObjectKey, want *corev1ac.SecretApplyConfiguration) (action, error) {
	live := &corev1.Secret{}
	act := created
	switch err := r.clients.live.Get(ctx, key, live); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return unchanged, fmt.Errorf("reading Secret %s: %w", key.Name, err)
	default:
		if err := checkControlled(live, gw); err != nil {
			return unchanged, err
		}
		if sameBasicAuthSecret(live, want) {
			return unchanged, nil
		}
		act = updated
		want.WithUID(live.UID)
	}
	if err := r.clients.cached.Apply(ctx, want, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		// The API server's error names fields, never the data's values.
		return unchanged, fmt.Errorf("applying Secret %s: %w", key.Name, err)
	}
	return act, nil
}

// sameBasicAuthSecret reports whether live already is want: its data,
// labels and controller.
func sameBasicAuthSecret(live *corev1.Secret, want *corev1ac.SecretApplyConfiguration) bool {
	if len(live.Data) != len(want.Data) || live.Type != *want.Type {
		return false
	}
	for k, v := range want.Data {
		if got, ok := live.Data[k]; !ok || string(got) != string(v) {
			return false
		}
	}
	for k, v := range want.Labels {
		if live.Labels[k] != v {
			return false
		}
	}
	return true
}

// basicAuthVolumes are the volume and mount of gw's Secret N-basic-auth,
// nil for a gateway without basicAuth: their pod template stays as
// before, so an upgrade rolls no gateway. Optional: a pod that starts
// before the Secret exists answers 403 on those routes until the kubelet
// delivers it, instead of not starting.
func basicAuthVolumes(gw *v1.APIGateway) (*corev1ac.VolumeApplyConfiguration, *corev1ac.VolumeMountApplyConfiguration) {
	if !hasBasicAuth(gw) {
		return nil, nil
	}
	return corev1ac.Volume().WithName(basicAuthVolume).
			WithSecret(corev1ac.SecretVolumeSource().WithSecretName(basicAuthSecretName(gw)).
				WithDefaultMode(0o444).WithOptional(true)),
		corev1ac.VolumeMount().WithName(basicAuthVolume).WithMountPath(basicauth.Dir).WithReadOnly(true)
}

// basicAuthWatch notices changes of the Secrets gateways name without
// watching Secrets (which RBAC cannot grant for named objects alone):
// every basicAuthResync it reads each one's metadata, and reconciles a
// gateway when one's resourceVersion is not the one its last pass read.
type basicAuthWatch struct {
	live    secretReader
	requeue chan<- event.GenericEvent
	// every is how often: basicAuthResync.
	every time.Duration

	mu       sync.Mutex
	gateways map[client.ObjectKey]map[string]string
}

// track records the versions gw's pass read; nil forgets gw. A nil w
// (a Reconciler built without setup, in tests) tracks nothing.
func (w *basicAuthWatch) track(gw client.ObjectKey, versions map[string]string) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(versions) == 0 {
		delete(w.gateways, gw)
		return
	}
	w.gateways[gw] = maps.Clone(versions)
}

// Start reads the Secrets every w.every until ctx ends.
func (w *basicAuthWatch) Start(ctx context.Context) error {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, gw := range w.changed(ctx) {
			if !requeueGateway(ctx, w.requeue, gw) {
				return
			}
		}
	}, w.every)
	return nil
}

// changed are the gateways some of whose Secrets changed since their
// last pass: metadata reads only, never a Secret's data, and one read of
// a Secret that several gateways name.
func (w *basicAuthWatch) changed(ctx context.Context) []client.ObjectKey {
	w.mu.Lock()
	gateways := maps.Clone(w.gateways)
	w.mu.Unlock()
	type read struct {
		version string // "" when the Secret is gone
		ok      bool   // false: unknown, the next round asks again
	}
	reads := map[client.ObjectKey]read{}
	version := func(key client.ObjectKey) read {
		if r, done := reads[key]; done {
			return r
		}
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
		err := w.live.Get(ctx, key, m)
		r := read{version: m.ResourceVersion, ok: err == nil}
		if apierrors.IsNotFound(err) {
			r = read{ok: true}
		}
		reads[key] = r
		return r
	}
	var out []client.ObjectKey
	for gw, versions := range gateways {
		for name, seen := range versions {
			if r := version(client.ObjectKey{Namespace: gw.Namespace, Name: name}); r.ok && r.version != seen {
				out = append(out, gw)
				break
			}
		}
	}
	return out
}
