package offline

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
)

// ClusterGateways lists the APIGateways of every namespace of the cluster a
// kubeconfig names (empty: the usual loading rules, $KUBECONFIG then
// ~/.kube/config) in one of its contexts (empty: the current one). It only
// reads.
func ClusterGateways(ctx context.Context, kubeconfig, kubeContext string) ([]v1.APIGateway, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "apigateway-operator-validate"
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	list := &v1.APIGatewayList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the cluster's APIGateways: %w", err)
	}
	return list.Items, nil
}
