package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/offline"
)

// weighted is a gateway with every column of the table set, and one that
// asks for its route later.
const weighted = `apiVersion: example.com/v1
kind: APIGateway
metadata: {name: shop, namespace: team-a}
spec:
  routes:
  - host: api.example.com
    path: /users/
    backendService: {name: user-service, port: 8080}
    additionalBackends: [{name: canary, port: 8080, weight: 20}]
    timeouts: {connectSeconds: 5, readSeconds: 300}
    externalAuth: {service: oauth2-proxy, port: 4180, path: /oauth2/auth}
    cors: {allowOrigins: ["https://app.example.com"]}
  - host: api.example.com
    path: /api
    backendService: {name: api, port: 80}
    rewritePrefix: /
    basicAuth: {secretName: api-users}
---
apiVersion: example.com/v1alpha1
kind: APIGateway
metadata: {name: later, namespace: team-a}
spec:
  routes:
  - {host: api.example.com, prefix: /users, serviceName: old, servicePort: 80}
`

func TestRoutesCommand(t *testing.T) {
	for _, tc := range []commandCase{
		{name: "help", args: []string{"--help"}, stdout: []string{"Usage: apigateway-operator routes", "-namespace-ownership", "the first\nclaim wins"}},
		{name: "the samples", args: []string{"-f", samples},
			stdout: []string{"HOST              PATH        TYPE    GATEWAY                 BACKENDS              TIMEOUTS  REWRITE  STATUS\n",
				"api.example.com   /users/     Prefix  default/my-app-gateway  user-service:8080     -         -        served\n",
				"shop.example.com  /orders/    Prefix  default/legacy-gateway  order-service:8080    -         -        served\n"}},
		{name: "a conflict in the files: the first in the input wins", args: []string{"-f", samples + "/apigateway_v1.yaml", "-f", invalid + "/conflicting-route.yaml"},
			stdout: []string{"default/my-app-gateway    user-service:8080     -         -        served, contested by default/users-v2-gateway\n",
				"default/users-v2-gateway  user-service-v2:8080  -         -        lost to default/my-app-gateway (RouteConflict)\n"}},
		{name: "every column", stdin: weighted, args: []string{"-f", "-"},
			stdout: []string{"REWRITE  AUTH                        CORS                     STATUS\n",
				"api.example.com  /api     Prefix  team-a/shop   api:80                                  -                      /        basic:api-users             -                        served\n",
				"api.example.com  /users/  Prefix  team-a/shop   user-service:8080 80%, canary:8080 20%  connect 5s, read 300s  -        external:oauth2-proxy:4180  https://app.example.com  served, contested by team-a/later\n",
				"api.example.com  /users   Prefix  team-a/later  old:80                                  -                      -        -                           -                        lost to team-a/shop (RouteConflict)\n"}},
		{name: "a refused gateway: its errors, no table", args: []string{"-f", samples + "/apigateway_v1.yaml", "-f", invalid + "/name-not-dns-label.yaml"}, code: 1,
			stderr: []string{"name-not-dns-label.yaml#0: The APIGateway"}},
		{name: "files or a cluster, not both", args: []string{"-f", samples, "--kubeconfig", "x"}, code: 2, stderr: []string{"give one or the other"}},
		{name: "a cluster that cannot be read", args: []string{"--kubeconfig", "does-not-exist"}, code: 2, stderr: []string{"loading the kubeconfig"}},
		{name: "a bad -o", args: []string{"-o", "yaml", "-f", samples}, code: 2, stderr: []string{`-o "yaml": want table or json`}},
		{name: "a bad --namespace-ownership", args: []string{"--namespace-ownership", "Loose", "-f", samples}, code: 2, stderr: []string{"want Strict or InterNamespaceAllowed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, _ := tc.run(t, "routes")
			if tc.code != 0 {
				assert.Empty(t, stdout, "no table")
			}
		})
	}
}

func TestRoutesCommandJSON(t *testing.T) {
	code, stdout, stderr := runCommand(t, weighted, "routes", "-o", "json", "-f", "-")
	require.Equal(t, 0, code, stderr)
	var out struct {
		Routes []offline.RouteRow `json:"routes"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out))
	require.Len(t, out.Routes, 3)
	users := out.Routes[1]
	assert.Equal(t, "/users/", users.Path)
	assert.Equal(t, []offline.WeightedBackend{{Name: "user-service", Port: 8080, Weight: 80}, {Name: "canary", Port: 8080, Weight: 20}}, users.Backends)
	assert.Equal(t, int32(300), *users.Timeouts.ReadSeconds)
	assert.Equal(t, []string{"team-a/later"}, users.ContestedBy)
	assert.Equal(t, &v1.ExternalAuth{Service: "oauth2-proxy", Port: 4180, Path: "/oauth2/auth"}, users.ExternalAuth)
	assert.Equal(t, []v1.CORSOrigin{"https://app.example.com"}, users.CORS.AllowOrigins)
	assert.Equal(t, &v1.BasicAuth{SecretName: "api-users"}, out.Routes[0].BasicAuth)
	assert.Nil(t, out.Routes[2].BasicAuth)
	assert.Equal(t, "team-a/shop", out.Routes[2].HeldBy)
	assert.Equal(t, "RouteConflict", out.Routes[2].Reason)

	code, stdout, stderr = runCommand(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\n", "routes", "-o", "json", "-f", "-")
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, `{"routes": []}`, stdout, "no gateway: an empty table")
	assert.False(t, strings.Contains(stdout, "null"))
}

// TestMigrationExample: the migration section's example (in the tenants'
// page, docs/tenants.md) is an APIGateway validate admits, and its routes
// table is what routes prints.
func TestMigrationExample(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "tenants.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(data), "\n## Migrating from ingress-nginx\n")
	require.True(t, ok, "docs/tenants.md has a migration section")
	section, _, _ = strings.Cut(section, "\n## ")
	_, example, ok := strings.Cut(section, "```yaml\n")
	require.True(t, ok, "the section has a YAML example")
	example, _, _ = strings.Cut(example, "```\n")
	_, console, ok := strings.Cut(section, "$ kubectl apigateway routes -f shop.yaml -f manifests/samples/apigateway_v1.yaml\n")
	require.True(t, ok, "the section shows routes' output")
	table, _, _ := strings.Cut(console, "$ ")

	checkRun(t, example, []string{"validate", "-f", "-"}, 0, []string{"apigateway.example.com/shop valid"}, nil)
	checkRun(t, example, []string{"routes", "-f", "-", "-f", seedSample}, 0, []string{table}, nil)
}
