package webhooks

import (
	"context"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"example.com/apigateway-operator/manifests/policy"
)

// PolicyParams writes the operator's defaults into the ConfigMap the
// defaults MutatingAdmissionPolicy reads (manifests/policy), so the API
// server fills in the same image and replicas as the mutating webhook,
// also while no replica answers. It runs once per leadership, when the
// operator starts: the flags it writes cannot change without a restart.
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
	Defaults Defaults
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: during a
// rollout that changes a flag, the new leader's value wins.
func (p PolicyParams) NeedLeaderElection() bool { return true }

// Start implements manager.Runnable. A write that fails is retried with
// backoff until it succeeds or the operator stops; it never stops the
// operator, whose webhook gives the same defaults meanwhile.
func (p PolicyParams) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithValues("configMap", p.ConfigMap.String())
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Steps: 1 << 30, Cap: 5 * time.Minute}
	_ = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		err := p.write(ctx)
		switch {
		case apierrors.IsNotFound(err):
			logger.Info("the defaults policy's parameter ConfigMap is not installed: the API server defaults nothing that needs the operator's flags while the operator is down")
			return true, nil
		case err != nil:
			logger.Error(err, "writing the operator's defaults for the defaults policy; retrying")
			return false, nil
		}
		logger.V(1).Info("wrote the operator's defaults for the defaults policy", "image", p.Defaults.Image, "replicas", p.Defaults.Replicas)
		return true, nil
	})
	return nil
}

func (p PolicyParams) write(ctx context.Context) error {
	if err := p.Reader.Get(ctx, p.ConfigMap, &corev1.ConfigMap{}); err != nil {
		return err
	}
	cm := corev1ac.ConfigMap(p.ConfigMap.Name, p.ConfigMap.Namespace).WithData(PolicyParamsData(p.Defaults))
	if err := p.Client.Apply(ctx, cm, client.FieldOwner("apigateway-operator"), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s: %w", p.ConfigMap, err)
	}
	return nil
}

// PolicyParamsData is the ConfigMap's data for d, in the keys the policy
// reads.
func PolicyParamsData(d Defaults) map[string]string {
	return map[string]string{
		policy.ParamImage:    d.Image,
		policy.ParamReplicas: strconv.Itoa(int(d.Replicas)),
	}
}

// Defaults are the values the mutating webhook fills in under o:
// DefaultImage when o names no image.
func (o Options) Defaults() Defaults {
	d := Defaults{Image: o.DefaultImage, Replicas: o.DefaultReplicas}
	if d.Image == "" {
		d.Image = DefaultImage
	}
	return d
}
