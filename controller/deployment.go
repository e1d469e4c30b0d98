package controller

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/push"
	"example.com/apigateway-operator/reloader"
	"example.com/apigateway-operator/render"
)

const (
	containerName = "nginx"
	// reloaderName names the init container that installs the reloader,
	// and the gateway container's status port.
	reloaderName = "reloader"
	// nginxUID is the nginx user of the official and unprivileged images;
	// set explicitly so runAsNonRoot also holds for images whose USER is
	// root or a name.
	nginxUID = 101

	// StatusPort is where each gateway pod's reloader answers
	// reloader.StatusPath with the configuration the pod serves. The
	// operator reads it from the pod's IP: a NetworkPolicy that guards
	// the gateway pods must let the operator's namespace reach it.
	StatusPort = 8082
	// MetricsPort is where each gateway pod's reloader serves its
	// per-route metrics (reloader.MetricsPath) to Prometheus: a port of
	// its own, serving nothing else, so opening it to Prometheus does not
	// open the status port's pushes.
	MetricsPort = 8083
	// metricsName names the metrics port.
	metricsName = "metrics"
	// metricsLog is where nginx sends the reloader its metrics log: UDP
	// on the pod's loopback, which queues far more lines than a Unix
	// datagram socket (reloader.Metrics.Listen).
	metricsLog = "127.0.0.1:8084"
	// ShutdownTimeout is nginx's worker_shutdown_timeout in the gateway
	// pods: how long connections opened under a replaced configuration
	// (after a reload) stay open, and how long those of a terminating pod
	// do. Two minutes keeps WebSockets and streams across a route change
	// and bounds the old workers a burst of reloads can leave behind.
	ShutdownTimeout = 2 * time.Minute
	// terminationGrace leaves nginx the shutdown timeout and a margin to
	// exit before the kubelet kills the container.
	terminationGrace = ShutdownTimeout + 10*time.Second

	// PodInputsAnnotation, on the gateway pods' template, is the digest
	// of what the gateway asks of its pods (podInputs). The operator
	// rewrites a running pod template only when it changes: see
	// keepRunningTemplate.
	PodInputsAnnotation = "example.com/pod-inputs"

	// reloaderBinary is the reloader's binary in the operator's image
	// (the Dockerfile puts it there); the init container runs it.
	reloaderBinary = "/apigateway-reloader"
	// reloaderDir is the emptyDir the init container copies the binary
	// into and the gateway container runs it from.
	reloaderDir = "/opt/apigateway"
	// reloaderSize bounds that emptyDir: the binary (18 MB), with room
	// to grow.
	reloaderSize = "64Mi"
	// configDir is where the ConfigMap is mounted; the reloader renders
	// its template into confDir, which the images' nginx.conf includes
	// inside http {}.
	configDir = "/etc/apigateway/config"
	confDir   = "/etc/nginx/conf.d"
	// probeSocket is the reloader's own socket into nginx (in the "run"
	// emptyDir).
	probeSocket = "/var/run/apigateway-reloader.sock"

	// podTemplateEpoch is part of podInputs: raising it makes every
	// gateway take the operator's current pod template (one rollout
	// each), for a change of the template that must reach running pods,
	// such as a security fix. Other changes of the operator's own wait for
	// the gateway's next rollout.
	podTemplateEpoch = 1
)

// scrapeAnnotations point a Prometheus that discovers pods by the
// common prometheus.io annotations at the metrics port
// (manifests/monitoring has a PodMonitor for the Prometheus Operator).
var scrapeAnnotations = map[string]string{
	"prometheus.io/scrape": "true",
	"prometheus.io/port":   strconv.Itoa(MetricsPort),
	"prometheus.io/path":   reloader.MetricsPath,
}

// deploymentParams are the Deployment's inputs besides the gateway.
type deploymentParams struct {
	// Image is the container image; spec.image wins when set.
	Image string
	// ConfigHash is configHash of the rendered configuration.
	ConfigHash string
	// ReloaderImage is the operator's image, whose binary the init
	// container installs.
	ReloaderImage string
}

// configHash identifies a rendered configuration; the gateway pods'
// reloaders report the same hash of the file the kubelet projects.
func configHash(config string) string { return reloader.Hash([]byte(config)) }

// strategy is gw's configuration update strategy, Reload when unset.
func strategy(gw *v1.APIGateway) v1.ConfigUpdateStrategy {
	if gw.Spec.ConfigUpdateStrategy == v1.ConfigUpdateRollout {
		return v1.ConfigUpdateRollout
	}
	return v1.ConfigUpdateReload
}

// writableDirs are where nginx writes at run time (rendered templates,
// temp files, pid); each gets an emptyDir so the root filesystem stays
// read-only. Together they cover both the official image (/var/cache/nginx,
// /var/run) and the unprivileged one (/tmp).
//
// Each has a size limit: without one, a pod writes to the node's disk
// until the node runs out and the kubelet evicts every pod on it; past a
// limit, the kubelet evicts this pod alone. The rendered configuration
// and the pid file and sockets take little. The temp directories take
// what nginx buffers to disk: request bodies larger than its in-memory
// buffer (client_body_temp_path, while request buffering is on) and
// responses larger than its proxy buffers (proxy_temp_path, up to
// proxy_max_temp_file_size each). tempDirSize bounds those; the
// renderer keeps any one request's share of it to render.MaxBufferedBody
// (a route whose maxBodySize allows more streams its bodies), so no one
// upload or download fills it.
var writableDirs = []struct{ name, path, size string }{
	{"conf-d", confDir, smallDirSize},
	{"cache", "/var/cache/nginx", tempDirSize},
	{"run", "/var/run", smallDirSize},
	{"tmp", "/tmp", tempDirSize},
}

const (
	// smallDirSize bounds the directories of the rendered configuration
	// (at most render.MaxConfigBytes, rewritten by an atomic rename, so twice
	// that at a moment) and of the pid file and sockets, with room.
	smallDirSize = "16Mi"
	// tempDirSize bounds each of nginx's temp directories (one is used,
	// which depends on the image): 16 requests buffering render.MaxBufferedBody
	// at once, a thousand of the default 1m body limit.
	tempDirSize = "1Gi"
)

// podInputs are what a gateway asks of its pods. The pods roll when they
// change; with the Reload strategy a new configuration is not one of them.
type podInputs struct {
	Image     string                       `json:"image"`
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	Strategy  v1.ConfigUpdateStrategy      `json:"strategy"`
	// ConfigHash is set with the Rollout strategy only.
	ConfigHash string `json:"configHash,omitempty"`
	Epoch      int    `json:"epoch"`
	// BasicAuth: the pods mount the gateway's basic-auth Secret
	// (basicAuthVolumes). Left out when false, so the digest of a gateway
	// without basicAuth is what it was before.
	BasicAuth bool `json:"basicAuth,omitempty"`
}

func inputsOf(gw *v1.APIGateway, p deploymentParams) podInputs {
	in := podInputs{Image: image(gw, p), Resources: resources(gw), Strategy: strategy(gw), Epoch: podTemplateEpoch, BasicAuth: hasBasicAuth(gw)}
	if in.Strategy == v1.ConfigUpdateRollout {
		in.ConfigHash = p.ConfigHash
	}
	return in
}

func (in podInputs) digest() string {
	data, _ := json.Marshal(in) // plain strings and quantities: cannot fail
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

func image(gw *v1.APIGateway, p deploymentParams) string {
	if gw.Spec.Image != "" {
		return string(gw.Spec.Image)
	}
	return p.Image
}

// pullPolicy is the pull policy the API server defaults for image:
// Always for the tag latest or none (without a digest), else
// IfNotPresent. Written rather than left to the API server, which
// defaults it once, when the field is unset: a gateway created with
// nginx:latest and then pinned would keep pulling Always, and fail to
// start where its image comes preloaded without a registry.
func pullPolicy(image string) corev1.PullPolicy {
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i >= 0 && name[i+1:] != "latest" {
		return corev1.PullIfNotPresent
	}
	return corev1.PullAlways
}

// resources are spec.resources when they say anything.
func resources(gw *v1.APIGateway) *corev1.ResourceRequirements {
	if r := gw.Spec.Resources; r != nil && (len(r.Limits) > 0 || len(r.Requests) > 0) {
		return r
	}
	return nil
}

// desiredDeployment is the Deployment N running gw's nginx pods under the
// reloader, with the configuration mounted as a template and a restricted
// security context.
func desiredDeployment(gw *v1.APIGateway, p deploymentParams) *appsv1ac.DeploymentApplyConfiguration {
	annotations := map[string]string{PodInputsAnnotation: inputsOf(gw, p).digest()}
	maps.Copy(annotations, scrapeAnnotations)
	if strategy(gw) == v1.ConfigUpdateRollout {
		annotations[ConfigHashAnnotation] = p.ConfigHash
	}
	return appsv1ac.Deployment(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(render.Replicas(gw)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(gw))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(childLabels(gw)).
				WithAnnotations(annotations).
				WithSpec(podSpec(gw, p))))
}

func podSpec(gw *v1.APIGateway, p deploymentParams) *corev1ac.PodSpecApplyConfiguration {
	spec := corev1ac.PodSpec().
		// Service links would put variables into the environment nginx
		// inherits; the gateway needs none of them, nor an API token: the
		// reloader reads a mounted file and answers on a port.
		WithEnableServiceLinks(false).
		WithAutomountServiceAccountToken(false).
		WithTerminationGracePeriodSeconds(int64(terminationGrace/time.Second)).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(nginxUID).
			WithRunAsGroup(nginxUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithInitContainers(installer(p)).
		WithContainers(container(gw, p)).
		WithVolumes(
			corev1ac.Volume().WithName("config").
				WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(configMapName(gw))),
			corev1ac.Volume().WithName(reloaderName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(reloaderSize))))
	for _, d := range writableDirs {
		spec.WithVolumes(corev1ac.Volume().WithName(d.name).
			WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(d.size))))
	}
	if vol, _ := basicAuthVolumes(gw); vol != nil {
		spec.WithVolumes(vol)
	}
	return spec
}

// restricted is the security context of both containers: the restricted
// Pod Security Standard, and a read-only root filesystem.
func restricted() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithRunAsNonRoot(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL")))
}

// installer is the init container that copies the reloader's binary from
// the operator's image into the reloader emptyDir, so the gateway image
// needs nothing of ours and the pod runs one image of ours.
func installer(p deploymentParams) *corev1ac.ContainerApplyConfiguration {
	return corev1ac.Container().
		WithName(reloaderName).
		WithImage(p.ReloaderImage).
		WithImagePullPolicy(pullPolicy(p.ReloaderImage)).
		WithCommand(reloaderBinary, "install", reloaderDir+reloaderBinary).
		WithSecurityContext(restricted()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(reloaderName).WithMountPath(reloaderDir))
}

// reloaderCommand runs the reloader over the image's nginx: it renders the
// mounted template into conf.d, starts nginx, and with the Reload
// strategy reloads it on every change of the template.
func reloaderCommand(gw *v1.APIGateway) []string {
	return []string{
		reloaderDir + reloaderBinary, "run",
		"--template=" + configDir + "/" + configKey,
		"--output=" + confDir + "/gateway.conf",
		"--probe-socket=" + probeSocket,
		"--resolv-conf=/etc/resolv.conf",
		"--resolver-variable=" + resolverVariable,
		"--status-address=:" + strconv.Itoa(StatusPort),
		"--metrics-address=:" + strconv.Itoa(MetricsPort),
		"--metrics-log=" + metricsLog,
		fmt.Sprintf("--shutdown-timeout=%s", ShutdownTimeout),
		"--watch=" + strconv.FormatBool(strategy(gw) == v1.ConfigUpdateReload),
		// Beside the template in the same volume, so the kubelet swaps
		// the two together. Always passed: a ConfigMap without it (pushes
		// off, or no key yet) leaves the pod refusing pushes (403).
		"--push-identity=" + configDir + "/" + push.IdentityKey,
		"--", "nginx",
	}
}

func container(gw *v1.APIGateway, p deploymentParams) *corev1ac.ContainerApplyConfiguration {
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath(HealthPath).
			WithPort(intstr.FromString("health")))
	}
	c := corev1ac.Container().
		WithName(containerName).
		WithImage(image(gw, p)).
		WithImagePullPolicy(pullPolicy(image(gw, p))).
		WithCommand(reloaderCommand(gw)...).
		WithPorts(
			corev1ac.ContainerPort().WithName("http").WithContainerPort(HTTPPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("health").WithContainerPort(HealthPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(reloaderName).WithContainerPort(StatusPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(metricsName).WithContainerPort(MetricsPort).WithProtocol(corev1.ProtocolTCP),
		).
		WithReadinessProbe(probe().WithPeriodSeconds(5)).
		WithLivenessProbe(probe().WithPeriodSeconds(10)).
		WithSecurityContext(restricted()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(configDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(reloaderName).WithMountPath(reloaderDir).WithReadOnly(true))
	for _, d := range writableDirs {
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(d.name).WithMountPath(d.path))
	}
	if _, mount := basicAuthVolumes(gw); mount != nil {
		c.WithVolumeMounts(mount)
	}
	if r := resources(gw); r != nil {
		res := corev1ac.ResourceRequirements()
		if len(r.Limits) > 0 {
			res.WithLimits(r.Limits)
		}
		if len(r.Requests) > 0 {
			res.WithRequests(r.Requests)
		}
		c.WithResources(res)
	}
	return c
}

// keepRunningTemplate returns the Deployment to apply for desired when
// live is the gateway's Deployment as the API server has it (with its
// managed fields): desired itself, or desired with the pod template the
// operator last applied to live, when that template already gives the
// gateway what desired asks of its pods (the same podInputs).
//
// So an operator upgrade rolls no gateway: a new reloader image, or any
// other change the operator makes to its pod template, reaches a gateway
// with its next rollout of its own (a new image or resources, a strategy
// switch, or a configuration under the Rollout strategy), unless
// podTemplateEpoch says otherwise. A template written before the reloader
// existed carries no PodInputsAnnotation; its pods keep running until the
// gateway's configuration, image or resources change, which rolled them
// then anyway, and roll onto the reloader with that change.
func keepRunningTemplate(desired *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment, hash string) (*appsv1ac.DeploymentApplyConfiguration, error) {
	applied, err := appsv1ac.ExtractDeployment(live, FieldOwner)
	if err != nil {
		return nil, err
	}
	if applied.Spec == nil || applied.Spec.Template == nil || !sameInputs(applied.Spec.Template, desired.Spec.Template, hash) {
		return desired, nil
	}
	spec := *desired.Spec
	spec.Template = applied.Spec.Template
	kept := *desired
	kept.Spec = &spec
	return &kept, nil
}

// sameInputs reports whether the running template gives what want asks of
// the pods (see keepRunningTemplate).
func sameInputs(running, want *corev1ac.PodTemplateSpecApplyConfiguration, hash string) bool {
	if digest, ok := running.Annotations[PodInputsAnnotation]; ok {
		return digest == want.Annotations[PodInputsAnnotation]
	}
	if running.Annotations[ConfigHashAnnotation] != hash {
		return false
	}
	r, w := gatewayContainer(running), gatewayContainer(want)
	if r == nil || w == nil || r.Image == nil || w.Image == nil || *r.Image != *w.Image {
		return false
	}
	rr, _ := json.Marshal(r.Resources) // apply configurations encode canonically
	wr, _ := json.Marshal(w.Resources)
	return string(rr) == string(wr)
}

func gatewayContainer(t *corev1ac.PodTemplateSpecApplyConfiguration) *corev1ac.ContainerApplyConfiguration {
	if t.Spec == nil {
		return nil
	}
	for i := range t.Spec.Containers {
		if c := &t.Spec.Containers[i]; c.Name != nil && *c.Name == containerName {
			return c
		}
	}
	return nil
}

// hasReloader reports whether the pods of a Deployment's template run the
// reloader: every template the operator builds now does, one kept from
// before it existed does not (see keepRunningTemplate).
func hasReloader(dep *appsv1.Deployment) bool {
	_, ok := dep.Spec.Template.Annotations[PodInputsAnnotation]
	return ok
}
