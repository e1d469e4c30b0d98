package node

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"example.com/apigateway-operator/test/testenv"
)

// The operator image the node runs holds the binaries where the
// Dockerfile puts them, runs as its user and with its entrypoint: the gateway pods'
// init container runs exactly what a release image would give it.
func TestOperatorImageIsTheDockerfiles(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	// The final stage: what follows the last FROM.
	final := string(dockerfile)[strings.LastIndex(string(dockerfile), "\nFROM "):]
	var copied []string
	var user string
	var entrypoint []string
	for _, line := range strings.Split(final, "\n") {
		fields := strings.Fields(line)
		switch {
		case len(fields) == 4 && fields[0] == "COPY" && fields[1] == "--from=builder":
			copied = append(copied, fields[3])
		case len(fields) == 2 && fields[0] == "USER":
			user = fields[1]
		case len(fields) > 1 && fields[0] == "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "ENTRYPOINT ")), &entrypoint))
		}
	}
	img := operatorImage(nil, nil)
	var paths []string
	for _, f := range img.Files {
		paths = append(paths, f.Path)
	}
	require.Equal(t, copied, paths)
	require.Equal(t, user, img.Config.User)
	require.Equal(t, entrypoint, img.Config.Entrypoint)
}

// RealIPGatewayImage's nginx.conf is GatewayImage's with the realip
// directives in http {}, before conf.d is included.
func TestRealIPImageConf(t *testing.T) {
	require.NotEqual(t, gatewayNginxConf, realIPNginxConf)
	realip := strings.Index(realIPNginxConf, "real_ip_recursive on;")
	require.Positive(t, realip)
	require.Less(t, realip, strings.Index(realIPNginxConf, "include /etc/nginx/conf.d/*.conf;"))
}
