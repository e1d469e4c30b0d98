package monitoring_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/api/v1/defaults"
	"example.com/apigateway-operator/api/v1/validation"
	"example.com/apigateway-operator/controller"
	"example.com/apigateway-operator/reloader"
)

// samplePods are the pods the operator runs for the seed sample.
func samplePods(t *testing.T) (*v1.APIGateway, appsv1.Deployment) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "manifests", "samples", "apigateway_v1.yaml"))
	require.NoError(t, err)
	var stored v1.APIGateway
	require.NoError(t, yaml.Unmarshal(data, &stored))
	gw, err := defaults.Defaulted(&stored, defaults.Params{Image: "nginx"})
	require.NoError(t, err)
	d, err := controller.Children(gw, controller.ChildOptions{DefaultImage: "nginx", ReloaderImage: "operator"})
	require.NoError(t, err)
	raw, err := yaml.Marshal(d.Deployment)
	require.NoError(t, err)
	var dep appsv1.Deployment
	require.NoError(t, yaml.Unmarshal(raw, &dep))
	return gw, dep
}

// TestGatewayPodMonitor: the PodMonitor selects the pods the operator
// runs, on their metrics port and path, and labels them by gateway.
func TestGatewayPodMonitor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("gateways", "podmonitor.yaml"))
	require.NoError(t, err)
	var pm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			NamespaceSelector struct {
				Any bool `json:"any"`
			} `json:"namespaceSelector"`
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port        string `json:"port"`
				Path        string `json:"path"`
				Relabelings []struct {
					SourceLabels []string `json:"sourceLabels"`
					TargetLabel  string   `json:"targetLabel"`
				} `json:"relabelings"`
			} `json:"podMetricsEndpoints"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &pm))
	assert.Equal(t, "monitoring.coreos.com/v1", pm.APIVersion)
	assert.Equal(t, "PodMonitor", pm.Kind)
	assert.True(t, pm.Spec.NamespaceSelector.Any, "gateways run in every namespace")

	gw, dep := samplePods(t)
	selector, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
	require.NoError(t, err)
	pod := dep.Spec.Template
	assert.True(t, selector.Matches(labelSet(pod.Labels)), "the PodMonitor does not select the gateway pods %v", pod.Labels)
	require.Len(t, pm.Spec.Endpoints, 1)
	ep := pm.Spec.Endpoints[0]
	assert.Equal(t, reloader.MetricsPath, ep.Path)
	var port int32
	for _, p := range pod.Spec.Containers[0].Ports {
		if p.Name == ep.Port {
			port = p.ContainerPort
		}
	}
	assert.Equal(t, int32(controller.MetricsPort), port, "the pods' port %q", ep.Port)
	assert.Equal(t, "true", pod.Annotations["prometheus.io/scrape"])
	assert.Equal(t, reloader.MetricsPath, pod.Annotations["prometheus.io/path"])
	require.Len(t, ep.Relabelings, 1)
	assert.Equal(t, "gateway", ep.Relabelings[0].TargetLabel)
	assert.Equal(t, []string{"__meta_kubernetes_pod_label_app_kubernetes_io_instance"}, ep.Relabelings[0].SourceLabels)
	assert.Equal(t, gw.Name, pod.Labels["app.kubernetes.io/instance"])
}

type labelSet map[string]string

func (l labelSet) Has(k string) bool   { _, ok := l[k]; return ok }
func (l labelSet) Get(k string) string { return l[k] }
func (l labelSet) Lookup(k string) (string, bool) {
	v, ok := l[k]
	return v, ok
}

// TestKEDAScaledObjectExample: the example's query parses (promtool),
// uses only the gateway pods' metrics, and names a route of the sample
// gateway as the operator names it.
func TestKEDAScaledObjectExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("gateways", "keda-scaledobject.yaml"))
	require.NoError(t, err)
	var so struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Spec       struct {
			Triggers []struct {
				Type     string            `json:"type"`
				Metadata map[string]string `json:"metadata"`
			} `json:"triggers"`
		} `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(data, &so))
	assert.Equal(t, "keda.sh/v1alpha1", so.APIVersion)
	assert.Equal(t, "ScaledObject", so.Kind)
	require.Len(t, so.Spec.Triggers, 1)
	query := so.Spec.Triggers[0].Metadata["query"]
	assert.Equal(t, []string{reloader.RequestsMetric}, metricNames(query))

	rules, err := yaml.Marshal(map[string]any{"groups": []ruleGroup{{Name: "keda", Rules: []rule{{Record: "keda:query", Expr: query}}}}})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "keda_rules.yaml")
	require.NoError(t, os.WriteFile(file, rules, 0o600))
	run(t, "check", "rules", file)

	gw, _ := samplePods(t)
	var names []string
	for i := range gw.Spec.Routes {
		name, _ := validation.RouteMatch(&gw.Spec.Routes[i])
		names = append(names, name)
	}
	assert.Contains(t, query, `gateway="`+gw.Name+`"`)
	found := false
	for _, n := range names {
		found = found || strings.Contains(query, `route="`+n+`"`)
	}
	assert.True(t, found, "the query names none of the sample's routes %q", names)
}
