package offline

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/ownership"
	"example.com/apigateway-operator/routeindex"
)

// ClusterGateways lists the APIGateways of every namespace of the cluster a
// kubeconfig names (empty: the usual loading rules, $KUBECONFIG then
// ~/.kube/config) in one of its contexts (empty: the current one). It only
// reads.
func ClusterGateways(ctx context.Context, kubeconfig, kubeContext string) ([]v1.APIGateway, error) {
	c, err := clusterClient(kubeconfig, kubeContext, "apigateway-operator-validate")
	if err != nil {
		return nil, err
	}
	return listGateways(ctx, c)
}

// ClusterRoutes reads what Routes decides a cluster's route table from:
// its APIGateways, and its IngressClasses (which exist, which is the
// default). A user who may list the gateways but not the classes gets the
// offline view of classes (every class exists, none is the default) and a
// warning saying so. It only reads.
func ClusterRoutes(ctx context.Context, kubeconfig, kubeContext string) ([]v1.APIGateway, ownership.Classes, []string, error) {
	c, err := clusterClient(kubeconfig, kubeContext, "apigateway-operator-routes")
	if err != nil {
		return nil, ownership.Classes{}, nil, err
	}
	gws, err := listGateways(ctx, c)
	if err != nil {
		return nil, ownership.Classes{}, nil, err
	}
	classes, err := routeindex.Classes(ctx, c)
	if apierrors.IsForbidden(err) {
		return gws, ownership.Classes{}, []string{"cannot list IngressClasses (" + err.Error() + "): every ingress class is taken to exist, and none to be the default"}, nil
	}
	if err != nil {
		return nil, ownership.Classes{}, nil, err
	}
	return gws, classes, nil, nil
}

// clusterClient is a client of the cluster a kubeconfig names, as
// ClusterGateways says, identified to the API server as agent.
func clusterClient(kubeconfig, kubeContext, agent string) (client.Client, error) {
	cfg, _, err := ClusterConfig(kubeconfig, kubeContext, agent)
	if err != nil {
		return nil, err
	}
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client: %w", err)
	}
	return c, nil
}

// ClusterConfig is the client configuration of the cluster a kubeconfig
// names (kubeconfig, or $KUBECONFIG, then ~/.kube/config; kubeContext, or
// the current context), identified to the API server as agent, and the
// context's namespace, as kubectl reads them.
func ClusterConfig(kubeconfig, kubeContext, agent string) (*rest.Config, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: kubeContext})
	cfg, err := loader.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	ns, _, err := loader.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = agent
	return cfg, ns, nil
}

func listGateways(ctx context.Context, c client.Client) ([]v1.APIGateway, error) {
	list := &v1.APIGatewayList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing the cluster's APIGateways: %w", err)
	}
	return list.Items, nil
}
