package webhooks

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/apigateway-operator/api/v1/defaults"
)

// The leader reads and applies the one parameter ConfigMap in its own
// namespace: the ClusterRole's ConfigMap rule does not reach it when the
// chart's namespaced mode (watchNamespaces) leaves that namespace out.
// +kubebuilder:rbac:groups="",namespace=apigateway-operator-system,resources=configmaps,verbs=get;patch,resourceNames=apigateway-operator-defaults

// PolicyParams keeps the operator's defaults in the ConfigMap the defaults
// MutatingAdmissionPolicy reads (manifests/policy), so the API server fills
// in the same image and replicas as the mutating webhook, also while no
// replica answers. The leader writes them as it starts, and writes them
// again whenever it finds them changed: whoever may edit that ConfigMap
// would otherwise choose the image of every new gateway in the cluster,
// for as long as the operator runs.
//
// It writes only into a ConfigMap that exists: the manifests ship it
// empty, and a cluster installed without the policy gets nothing new.
type PolicyParams struct {
	// Reader reads the ConfigMap from the API server (the manager's cache
	// holds only the gateways' own ConfigMaps).
	Reader client.Reader
	// Client writes the ConfigMap.
	Client client.Client
	// ConfigMap is its namespace and name.
	ConfigMap types.NamespacedName
	// Defaults are what the webhook fills in.
	Defaults defaults.Operator
	// Every is how often the leader reads the ConfigMap again to put back
	// a change (one GET); 0 means 5 seconds.
	Every time.Duration
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: during a
// rollout that changes a flag, the new leader's value wins.
func (p PolicyParams) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable. It writes the defaults, retrying a
// failed write with backoff, then reads them again every p.Every and
// writes them back when anyone changed them, until the operator stops. It
// never stops the operator, whose webhook gives the same defaults
// meanwhile.
func (p PolicyParams) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("configMap", p.ConfigMap.String())
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 5 * time.Minute}
	installed := true
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := p.write(ctx)
		switch {
		case apierrors.IsNotFound(err):
			logger.Info("the defaults policy's parameter ConfigMap is not installed: the API server defaults nothing that needs the operator's flags while the operator is down")
			installed = false
			return true, nil
		case err != nil:
			logger.Error(err, "writing the operator's defaults for the defaults policy; retrying")
			return false, nil
		}
		logger.V(1).Info("wrote the operator's defaults for the defaults policy", "image", p.Defaults.Image, "replicas", p.Defaults.Replicas)
		return true, nil
	})
	if !installed {
		return nil
	}
	every := p.Every
	if every <= 0 {
		every = 5 * time.Second
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if restored, err := p.restore(ctx); err != nil {
			logger.Error(err, "putting back the operator's defaults for the defaults policy")
		} else if restored {
			logger.Info("someone changed the defaults policy's parameters: put the operator's back", "image", p.Defaults.Image, "replicas", p.Defaults.Replicas)
		}
	}, every)
	return nil
}

// restore writes the defaults again when the ConfigMap holds others, and
// reports whether it did.
func (p PolicyParams) restore(ctx context.Context) (bool, error) {
	cm := &corev1.ConfigMap{}
	if err := p.Reader.Get(ctx, p.ConfigMap, cm); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	want := p.Defaults.PolicyData()
	if holds(cm.Data, want) {
		return false, nil
	}
	if err := p.write(ctx); err != nil {
		return false, err
	}
	return true, nil
}

func (p PolicyParams) write(ctx context.Context) error {
	if err := p.Reader.Get(ctx, p.ConfigMap, &corev1.ConfigMap{}); err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(p.ConfigMap.Name, p.ConfigMap.Namespace).WithData(p.Defaults.PolicyData())
	if err := p.Client.Apply(ctx, cm, client.FieldOwner("apigateway-operator"), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s: %w", p.ConfigMap, err)
	}
	return nil
}

// holds reports whether data has every key of want with its value (keys
// the policy does not read may be there too).
func holds(data, want map[string]string) bool {
	for k, v := range want {
		if got, ok := data[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// Defaults are the values the mutating webhook fills in under o:
// defaults.DefaultImage when o names no image.
func (o Options) Defaults() defaults.Operator {
	d := defaults.Operator{Image: o.DefaultImage, Replicas: o.DefaultReplicas}
	if d.Image == "" {
		d.Image = defaults.DefaultImage
	}
	return d
}
