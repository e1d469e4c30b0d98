package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	v1 "example.com/apigateway-operator/api/v1"
)

const (
	containerName = "nginx"
	// nginxUID is the nginx user of the official and unprivileged images;
	// set explicitly so runAsNonRoot also holds for images whose USER is
	// root or a name.
	nginxUID = 101
)

// deploymentParams are the Deployment's inputs besides the gateway.
type deploymentParams struct {
	// Image is the container image; spec.image wins when set.
	Image string
	// ConfigHash is configHash of the rendered configuration.
	ConfigHash string
	// LocalResolvers asks the image's entrypoint to fill in
	// ${NGINX_LOCAL_RESOLVERS} from the pod's /etc/resolv.conf.
	LocalResolvers bool
}

// writableDirs are where nginx writes at run time (rendered templates,
// temp files, pid); each gets an emptyDir so the root filesystem stays
// read-only. Together they cover both the official image (/var/cache/nginx,
// /var/run) and the unprivileged one (/tmp).
var writableDirs = []struct{ name, path string }{
	{"conf-d", "/etc/nginx/conf.d"},
	{"cache", "/var/cache/nginx"},
	{"run", "/var/run"},
	{"tmp", "/tmp"},
}

// desiredDeployment is the Deployment N running gw's nginx pods with the
// configuration mounted as a template and a restricted security context.
func desiredDeployment(gw *v1.APIGateway, p deploymentParams) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(gw.Name, gw.Namespace).
		WithLabels(childLabels(gw)).
		WithOwnerReferences(ownerReference(gw)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas(gw)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(gw))).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(childLabels(gw)).
				WithAnnotations(map[string]string{ConfigHashAnnotation: p.ConfigHash}).
				WithSpec(podSpec(gw, p))))
}

func podSpec(gw *v1.APIGateway, p deploymentParams) *corev1ac.PodSpecApplyConfiguration {
	spec := corev1ac.PodSpec().
		// Service links would put variables into the environment envsubst
		// reads; the gateway needs none of them, nor an API token.
		WithEnableServiceLinks(false).
		WithAutomountServiceAccountToken(false).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(nginxUID).
			WithRunAsGroup(nginxUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(container(gw, p)).
		WithVolumes(corev1ac.Volume().
			WithName("config").
			WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(configMapName(gw))))
	for _, d := range writableDirs {
		spec.WithVolumes(corev1ac.Volume().WithName(d.name).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
	}
	return spec
}

func container(gw *v1.APIGateway, p deploymentParams) *corev1ac.ContainerApplyConfiguration {
	image := gw.Spec.Image
	if image == "" {
		image = v1.Image(p.Image)
	}
	probe := func() *corev1ac.ProbeApplyConfiguration {
		return corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().
			WithPath(HealthPath).
			WithPort(intstr.FromString("health")))
	}
	c := corev1ac.Container().
		WithName(containerName).
		WithImage(string(image)).
		WithPorts(
			corev1ac.ContainerPort().WithName("http").WithContainerPort(HTTPPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("health").WithContainerPort(HealthPort).WithProtocol(corev1.ProtocolTCP),
		).
		// envsubst must replace the resolver variable only, never an nginx
		// variable that happens to share a name with the environment.
		WithEnv(corev1ac.EnvVar().WithName("NGINX_ENVSUBST_FILTER").WithValue("^" + resolverVariable + "$")).
		WithReadinessProbe(probe().WithPeriodSeconds(5)).
		WithLivenessProbe(probe().WithPeriodSeconds(10)).
		WithSecurityContext(corev1ac.SecurityContext().
			WithAllowPrivilegeEscalation(false).
			WithReadOnlyRootFilesystem(true).
			WithRunAsNonRoot(true).
			WithCapabilities(corev1ac.Capabilities().WithDrop(corev1.Capability("ALL")))).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/nginx/templates").WithReadOnly(true))
	if p.LocalResolvers {
		c.WithEnv(corev1ac.EnvVar().WithName("NGINX_ENTRYPOINT_LOCAL_RESOLVERS").WithValue("1"))
	}
	for _, d := range writableDirs {
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(d.name).WithMountPath(d.path))
	}
	if r := gw.Spec.Resources; r != nil && (len(r.Limits) > 0 || len(r.Requests) > 0) {
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
