package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	lua "github.com/yuin/gopher-lua"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/manifests/argocd"
	"example.com/apigateway-operator/ownership"
)

// TestEcosystemReadsStatus: what Flux (kstatus, the library it computes
// health with) and Argo CD (manifests/argocd/health.lua, run in the Lua
// interpreter Argo CD runs) make of the status computeStatus writes. A
// failure someone must fix reads as Failed and Degraded, so a deploy stops
// waiting at once; a rollout, a reload or a retry reads as in progress.
func TestEcosystemReadsStatus(t *testing.T) {
	ready := appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}
	rolling := appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 3, UpdatedReplicas: 1, ReadyReplicas: 2, AvailableReplicas: 2}
	stuck := liveOK
	stuck.stuck = []stuckContainer{{pod: "gw-1", container: "gateway", image: "missing:1", reason: "ImagePullBackOff", message: "Back-off"}}
	live := func(s metav1.ConditionStatus, reason string) liveState {
		return liveState{condition: metav1.Condition{Type: v1.ConditionLive, Status: s, Reason: reason, Message: "m"}}
	}
	type situation struct {
		replicas int32
		dep      *appsv1.DeploymentStatus
		failures []failure
		lost     bool
		live     liveState
		edited   bool // the spec changed after the operator wrote the status
	}
	tests := map[string]struct {
		situation
		kstatus status.Status
		argo    string
	}{
		"every replica serves the spec": {situation{dep: &ready, live: liveOK}, status.CurrentStatus, "Healthy"},
		"spec edited, not yet observed": {situation{dep: &ready, live: liveOK, edited: true}, status.InProgressStatus, "Progressing"},
		"no Deployment yet":             {situation{live: live(metav1.ConditionFalse, ReasonDeploymentMissing)}, status.InProgressStatus, "Progressing"},
		"rolling out":                   {situation{dep: &rolling, live: liveOK}, status.InProgressStatus, "Progressing"},
		"reloading":                     {situation{dep: &ready, live: live(metav1.ConditionFalse, v1.ReasonReloading)}, status.InProgressStatus, "Progressing"},
		"pods unreadable":               {situation{dep: &ready, live: live(metav1.ConditionUnknown, v1.ReasonStatusUnreachable)}, status.CurrentStatus, "Healthy"},
		"a child refused, retried": {situation{dep: &ready, live: liveOK,
			failures: []failure{{kind: "Service", name: "gw", reason: ReasonApplyFailed, err: errors.New("etcdserver: request timed out")}}},
			status.InProgressStatus, "Progressing"},
		"scaled to zero": {situation{replicas: -1, dep: &appsv1.DeploymentStatus{ObservedGeneration: 4},
			live: live(metav1.ConditionFalse, ReasonScaledToZero)}, status.InProgressStatus, "Suspended"},
		"image cannot be pulled": {situation{dep: &rolling, live: stuck}, status.FailedStatus, "Degraded"},
		"routes refused": {situation{live: live(metav1.ConditionFalse, ReasonInvalidRoutes),
			failures: []failure{{kind: "ConfigMap", name: "gw-config", reason: ReasonInvalidRoutes, err: errors.New("bad path")}}},
			status.FailedStatus, "Degraded"},
		"a child's name taken": {situation{dep: &ready, live: liveOK,
			failures: []failure{{kind: "Service", name: "gw", reason: ReasonChildNameTaken, err: &nameTakenError{}}}},
			status.FailedStatus, "Degraded"},
		"nginx refused the configuration": {situation{dep: &ready, live: live(metav1.ConditionFalse, v1.ReasonConfigurationRefused)},
			status.FailedStatus, "Degraded"},
		"a route held by another gateway": {situation{dep: &ready, live: liveOK, lost: true}, status.FailedStatus, "Degraded"},
		"rollout past its deadline": {situation{dep: &appsv1.DeploymentStatus{ObservedGeneration: 4, Replicas: 2, UpdatedReplicas: 2,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}},
			live: liveOK}, status.FailedStatus, "Degraded"},
	}
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80), route("a.example.com", "/x", v1.PathTypePrefix, "web", 80))
			gw.TypeMeta = metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"}
			gw.Spec.Replicas = ptr.To(int32(2))
			if tc.replicas < 0 {
				gw.Spec.Replicas = ptr.To(int32(0))
			}
			var dep *appsv1.Deployment
			if tc.dep != nil {
				dep = deploymentWith(4, *tc.dep)
			}
			var lost []routeConflict
			if tc.lost {
				lost = []routeConflict{{of: gw, Loss: ownership.Loss{Index: 1, Route: gw.Spec.Routes[1], Holder: competing("team-a", "shop", 1),
					Reason: v1.ReasonRouteConflict, Scope: "default"}}}
			}
			gw.Status = computeStatus(gw, dep, tc.failures, lost, nil, tc.live, now)
			if tc.edited {
				gw.Generation++
			}
			obj := toUnstructured(t, gw)

			res, err := status.Compute(obj)
			require.NoError(t, err)
			assert.Equal(t, tc.kstatus, res.Status, "kstatus: %s", res.Message)

			health, message := argoHealth(t, obj)
			assert.Equal(t, tc.argo, health, "Argo CD: %s", message)
			assert.NotEmpty(t, message)
		})
	}
}

// TestEcosystemBeforeFirstStatus: before the operator first writes a
// gateway's status, Argo CD waits; kstatus has nothing to read (no
// observedGeneration, no condition) and, by its rules, calls it Current.
func TestEcosystemBeforeFirstStatus(t *testing.T) {
	gw := gateway("gw", route("a.example.com", "/", v1.PathTypePrefix, "web", 80))
	gw.TypeMeta = metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "APIGateway"}
	obj := toUnstructured(t, gw)
	health, _ := argoHealth(t, obj)
	assert.Equal(t, "Progressing", health)
	res, err := status.Compute(obj)
	require.NoError(t, err)
	assert.Equal(t, status.CurrentStatus, res.Status, "kstatus changed its rule for objects without status: update docs/platform.md")
}

func toUnstructured(t *testing.T, gw *v1.APIGateway) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(gw)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: m}
}

// argoHealth runs health.lua as Argo CD does: obj a global table of the
// object, the script's returned table its hs.status and hs.message.
func argoHealth(t *testing.T, obj *unstructured.Unstructured) (health, message string) {
	t.Helper()
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for name, open := range map[string]lua.LGFunction{lua.BaseLibName: lua.OpenBase, lua.TabLibName: lua.OpenTable,
		lua.StringLibName: lua.OpenString, lua.MathLibName: lua.OpenMath} {
		l.Push(l.NewFunction(open))
		l.Push(lua.LString(name))
		l.Call(1, 0)
	}
	l.SetGlobal("obj", luaValue(l, obj.Object))
	require.NoError(t, l.DoString(argocd.Health))
	hs, ok := l.Get(-1).(*lua.LTable)
	require.True(t, ok, "the script returns %s, not a table", l.Get(-1).Type())
	return lua.LVAsString(hs.RawGetString("status")), lua.LVAsString(hs.RawGetString("message"))
}

// luaValue is v, decoded from JSON, as a Lua value, the way Argo CD hands
// an object to a health script: objects and arrays are tables, numbers
// float64.
func luaValue(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case nil:
		return lua.LNil
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case []any:
		tbl := l.NewTable()
		for _, item := range v {
			tbl.Append(luaValue(l, item))
		}
		return tbl
	case map[string]any:
		tbl := l.NewTable()
		for k, item := range v {
			tbl.RawSetString(k, luaValue(l, item))
		}
		return tbl
	}
	panic(fmt.Sprintf("no Lua value for %T", v))
}
