package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/render"
)

// TestWhatRollsThePods: the pod template's inputs digest, whose change
// rolls the pods, moves with what the gateway asks of its pods and with
// nothing else; the configuration is one of them with the Rollout
// strategy only.
func TestWhatRollsThePods(t *testing.T) {
	base := func() (*v1.APIGateway, deploymentParams) {
		gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
		gw.Spec.Image = "nginx:1"
		return gw, deploymentParams{Image: testImage, ConfigHash: "h1", ReloaderImage: "operator:1"}
	}
	digest := func(gw *v1.APIGateway, p deploymentParams) string {
		return desiredDeployment(gw, p).Spec.Template.Annotations[PodInputsAnnotation]
	}
	gw, p := base()
	before := digest(gw, p)
	tests := map[string]struct {
		change func(*v1.APIGateway, *deploymentParams)
		rolls  bool
	}{
		"the image": {change: func(gw *v1.APIGateway, _ *deploymentParams) { gw.Spec.Image = "nginx:2" }, rolls: true},
		"the resources": {change: func(gw *v1.APIGateway, _ *deploymentParams) {
			gw.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}
		}, rolls: true},
		"the strategy":              {change: func(gw *v1.APIGateway, _ *deploymentParams) { gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateRollout }, rolls: true},
		"the configuration":         {change: func(_ *v1.APIGateway, p *deploymentParams) { p.ConfigHash = "h2" }},
		"the replicas":              {change: func(gw *v1.APIGateway, _ *deploymentParams) { gw.Spec.Replicas = ptr.To[int32](7) }},
		"the operator's image":      {change: func(_ *v1.APIGateway, p *deploymentParams) { p.ReloaderImage = "operator:2" }},
		"empty resources":           {change: func(gw *v1.APIGateway, _ *deploymentParams) { gw.Spec.Resources = &corev1.ResourceRequirements{} }},
		"the default image, unused": {change: func(_ *v1.APIGateway, p *deploymentParams) { p.Image = "other" }},
		"the Reload strategy, written out": {change: func(gw *v1.APIGateway, _ *deploymentParams) {
			gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateReload
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw, p := base()
			tc.change(gw, &p)
			assert.Equal(t, tc.rolls, digest(gw, p) != before)
		})
	}
	t.Run("the configuration, with the Rollout strategy", func(t *testing.T) {
		gw, p := base()
		gw.Spec.ConfigUpdateStrategy = v1.ConfigUpdateRollout
		first := desiredDeployment(gw, p).Spec.Template
		p.ConfigHash = "h2"
		second := desiredDeployment(gw, p).Spec.Template
		assert.NotEqual(t, first.Annotations[PodInputsAnnotation], second.Annotations[PodInputsAnnotation])
		assert.Equal(t, "h2", second.Annotations[ConfigHashAnnotation])
		assert.Contains(t, second.Spec.Containers[0].Command, "--watch=false")
	})
}

// TestOperatorUpgradeRollsNoGateway: an operator of another version (here
// another reloader image) keeps the pod template the running pods have;
// the gateway's next rollout of its own takes the new one.
func TestOperatorUpgradeRollsNoGateway(t *testing.T) {
	ns := newNamespace(t, "upgrade")
	gw := gateway("up", route("up.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	version := func(image string) func(*Options) { return func(o *Options) { o.ReloaderImage = image } }
	initImage := func(dep appsv1.Deployment) string { return dep.Spec.Template.Spec.InitContainers[0].Image }
	var before children
	t.Run("version 1", func(t *testing.T) {
		startOperator(t, version("operator:1"))
		gw, before = settled(t, gw)
		assert.Equal(t, "operator:1", initImage(before.dep))
	})
	t.Run("version 2 keeps the running pods", func(t *testing.T) {
		startOperator(t, version("operator:2"))
		require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":2}}`))))
		var after children
		gw, after = settled(t, gw)
		assert.Equal(t, int32(2), *after.dep.Spec.Replicas)
		assert.Equal(t, before.dep.Spec.Template, after.dep.Spec.Template, "the pods would roll")
		require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType,
			[]byte(`{"spec":{"image":"nginxinc/nginx-unprivileged:1.30"}}`))))
		_, after = settled(t, gw)
		assert.Equal(t, "operator:2", initImage(after.dep), "a rollout of the gateway's own takes the operator's template")
	})
}

// TestPodsFromBeforeTheReloader: a Deployment an operator without the
// reloader wrote (the configuration's hash on its template) keeps its pods
// when the operator is upgraded, and says whether they serve the current
// configuration; the next configuration change, which rolled them before
// anyway, rolls them onto the reloader.
func TestPodsFromBeforeTheReloader(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "legacy")
	gw := gateway("old", route("old.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw = createGateway(t, gw)
	want, err := Children(gw, ChildOptions{DefaultImage: testImage, ReloaderImage: testReloaderImage})
	require.NoError(t, err)
	require.NoError(t, env.Client.Apply(ctx, want.ConfigMap, client.FieldOwner(FieldOwner), client.ForceOwnership))
	legacy := want.Deployment
	legacy.Spec.Template = legacyTemplate(gw, want.ConfigHash)
	require.NoError(t, env.Client.Apply(ctx, legacy, client.FieldOwner(FieldOwner), client.ForceOwnership))

	startOperator(t)
	gw, ch := settled(t, gw)
	assert.Equal(t, want.ConfigHash, ch.dep.Spec.Template.Annotations[ConfigHashAnnotation])
	assert.Empty(t, ch.dep.Spec.Template.Spec.InitContainers, "the pods would roll onto the reloader for nothing")
	setDeploymentStatus(t, gw, 1)
	gw = waitCondition(t, gw, v1.ConditionLive, "True", v1.ReasonLive)
	assert.Equal(t, int32(1), gw.Status.LiveReplicas)

	require.NoError(t, env.Client.Patch(ctx, gw, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"routes":[{"host":"old.example.com","path":"/new","backendService":{"name":"web","port":80}}]}}`))))
	_, ch = settled(t, gw)
	assert.Contains(t, ch.dep.Spec.Template.Annotations, PodInputsAnnotation)
	assert.NotContains(t, ch.dep.Spec.Template.Annotations, ConfigHashAnnotation)
	require.Len(t, ch.dep.Spec.Template.Spec.InitContainers, 1)
	assert.Equal(t, testReloaderImage, ch.dep.Spec.Template.Spec.InitContainers[0].Image)
}

// legacyTemplate is the pod template of the operator before the reloader
// (commit 8593716): the image's entrypoint renders the mounted template,
// and the configuration's hash on the template rolls the pods.
func legacyTemplate(gw *v1.APIGateway, hash string) *corev1ac.PodTemplateSpecApplyConfiguration {
	c := corev1ac.Container().WithName(containerName).WithImage(string(gw.Spec.Image)).
		WithPorts(corev1ac.ContainerPort().WithName("http").WithContainerPort(HTTPPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(corev1ac.EnvVar().WithName("NGINX_ENVSUBST_FILTER").WithValue("^" + resolverVariable + "$")).
		WithVolumeMounts(corev1ac.VolumeMount().WithName("config").WithMountPath("/etc/nginx/templates").WithReadOnly(true))
	return corev1ac.PodTemplateSpec().
		WithLabels(childLabels(gw)).
		WithAnnotations(map[string]string{ConfigHashAnnotation: hash}).
		WithSpec(corev1ac.PodSpec().WithContainers(c).
			WithVolumes(corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(configMapName(gw)))))
}

// TestWritableVolumesAreBounded: every emptyDir of a gateway pod has a size
// limit, so a pod that writes without end (nginx buffering uploads to its
// temp directory) is evicted alone instead of filling its node's disk; the
// temp directories hold 16 of the largest bodies nginx should buffer.
func TestWritableVolumesAreBounded(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	dep := desiredDeployment(gw, deploymentParams{Image: testImage, ReloaderImage: testReloaderImage})
	limits := map[string]string{}
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		if assert.NotNil(t, v.EmptyDir.SizeLimit, "emptyDir %s has no size limit", *v.Name) {
			limits[*v.Name] = v.EmptyDir.SizeLimit.String()
		}
	}
	assert.Equal(t, map[string]string{"reloader": reloaderSize, "conf-d": smallDirSize, "run": smallDirSize,
		"cache": tempDirSize, "tmp": tempDirSize}, limits)
	temp, small := resource.MustParse(tempDirSize), resource.MustParse(smallDirSize)
	assert.GreaterOrEqual(t, temp.Value(), int64(16*render.MaxBufferedBody), "a temp directory holds 16 buffered bodies")
	assert.Greater(t, small.Value(), int64(2*render.MaxConfigBytes), "the configuration, twice")
}

func TestPullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                                           corev1.PullAlways,
		"nginx:latest":                                    corev1.PullAlways,
		"registry.local:5000/nginx":                       corev1.PullAlways,
		"registry.local:5000/team/nginx:latest":           corev1.PullAlways,
		"nginx:1.27":                                      corev1.PullIfNotPresent,
		"registry.local:5000/nginx:1.27":                  corev1.PullIfNotPresent,
		"nginx@sha256:" + strings.Repeat("ab", 32):        corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + strings.Repeat("ab", 32): corev1.PullIfNotPresent,
	} {
		assert.Equal(t, want, pullPolicy(image), image)
	}
}

// TestPinnedImageIsNotPulledAlways: a gateway created with a latest tag
// and then pinned gets the pinned image's pull policy. Left to the API
// server, the policy it defaulted at creation (Always) stayed, and pods
// whose image is preloaded, without a registry, never started.
func TestPinnedImageIsNotPulledAlways(t *testing.T) {
	ns := newNamespace(t, "pull")
	gw := gateway("pull", route("pull.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.Namespace = ns
	gw.Spec.Image = "nginxinc/nginx-unprivileged:latest"
	gw = createGateway(t, gw)
	startOperator(t)
	policy := func(dep appsv1.Deployment) corev1.PullPolicy {
		return dep.Spec.Template.Spec.Containers[0].ImagePullPolicy
	}
	gw, ch := settled(t, gw)
	assert.Equal(t, corev1.PullAlways, policy(ch.dep))
	require.NoError(t, env.Client.Patch(context.Background(), gw, client.RawPatch(types.MergePatchType,
		[]byte(`{"spec":{"image":"nginxinc/nginx-unprivileged:1.30"}}`))))
	_, ch = settled(t, gw)
	assert.Equal(t, "nginxinc/nginx-unprivileged:1.30", ch.dep.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, corev1.PullIfNotPresent, policy(ch.dep))
}
