package render

import (
	"crypto/sha1" //nolint:gosec // {SHA} is the htpasswd scheme under test, not a choice of ours
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	v1 "example.com/apigateway-operator/api/v1"
	"example.com/apigateway-operator/basicauth"
)

// aliceBcrypt is alice's line, password "secret1", bcrypt of cost 4.
const aliceBcrypt = "alice:$2y$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2\n"

// schemeLines are a user for each other scheme basicauth.Check accepts,
// each password "<user>-<scheme>" (frank's and grace's "<user>-rounds").
// Fixed vectors: made with OpenSSL 3.0's `openssl passwd -apr1 -salt
// Qp3Jm8xZ carol-apr1`, `-5 -salt yBa7cuWq0LkN dave-sha256`, `-6 -salt
// Tz1mR4pXq9eW erin-sha512`, `-5 -salt 'rounds=1000$Vh2kLq8N'
// frank-rounds` and `-6` likewise for grace, and checked against glibc's
// crypt(3); henry's and ivan's are aliceBcrypt under the $2b$ and $2a$
// prefixes, which hash an ASCII password as $2y$ does. openssl is not
// one of the project's tools, so the test does not run it; no module the
// project requires makes these hashes.
const schemeLines = "carol:$apr1$Qp3Jm8xZ$lFd052x/L9J4Em/8AJ4ux.\n" +
	"dave:$5$yBa7cuWq0LkN$geV20Nq0ygQfnFPZIso8il83SZJ7wjNemGVAMdS/tK3\n" +
	"erin:$6$Tz1mR4pXq9eW$Wosb8d.l3Z8kewrsAe8kRbKE9moi6w32PaiDcYFccvszKywsyMHiZe1hcKavIINol7MasVFbHqDXCUL.IQ4GW.\n" +
	"frank:$5$rounds=1000$Vh2kLq8N$X3qpEIBW/PFFYF0SGpgsOA.vtYhmyugXGsAdRuwcsaC\n" +
	"grace:$6$rounds=1000$Vh2kLq8N$B4X0lH.PKDqLcpOwGYg9d8NFB3NWHPp1KviIPl3KDLyMWcGJIRvHrZH62v0fnWRzCGZ6x4AVTgzqF0LFYVcdi/\n" +
	"henry:$2b$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2\n" +
	"ivan:$2a$04$yNnYsa4BI8knQfCPVP3jUe8eBQkLTe9RcnVusx6DmmDE9tIaGpYO2\n"

// schemePasswords are schemeLines' users, their scheme and password.
var schemePasswords = map[string][2]string{
	"carol": {"$apr1$", "carol-apr1"}, "dave": {"$5$", "dave-sha256"}, "erin": {"$6$", "erin-sha512"},
	"frank": {"$5$ rounds=", "frank-rounds"}, "grace": {"$6$ rounds=", "grace-rounds"},
	"henry": {"$2b$", "secret1"}, "ivan": {"$2a$", "secret1"},
}

// shaLine is user's htpasswd line of password in the {SHA} scheme.
func shaLine(user, password string) string {
	sum := sha1.Sum([]byte(password)) //nolint:gosec // the scheme under test
	return user + ":{SHA}" + base64.StdEncoding.EncodeToString(sum[:]) + "\n"
}

// basicAuthRoutes: /private/ asks for the users of Secret "users";
// /office/ too, behind a source range that refuses 127.0.0.4; /ruled
// hands a request with X-Canary to its rule's named location, which asks
// again; /secure/ redirects http to https before asking; /broken/ names
// a Secret the operator refused (an empty file) and /lost/ one whose
// file the pod lacks.
func basicAuthRoutes(ports map[string]int32) []v1.Route {
	users := &v1.BasicAuth{SecretName: "users", Realm: "Staff only"}
	private := route("api.example.com", "/private/", v1.PathTypePrefix, "private", ports["private"])
	private.BasicAuth = users
	office := route("api.example.com", "/office/", v1.PathTypePrefix, "private", ports["private"])
	office.BasicAuth = users
	office.SourceRanges = &v1.SourceRanges{Deny: []v1.CIDR{"127.0.0.4/32"}}
	ruled := v1.Route{Host: "api.example.com", Path: "/ruled", PathType: v1.PathTypeExact, Rules: []v1.RouteRule{{
		Matches:        []v1.RequestMatch{{Headers: []v1.HeaderMatch{{Name: "X-Canary", Type: v1.MatchPresent}}}},
		BackendService: v1.BackendService{Name: "private", Port: v1.PortNumber(ports["private"])},
	}}, BasicAuth: users}
	secure := route("api.example.com", "/secure/", v1.PathTypePrefix, "private", ports["private"])
	secure.BasicAuth = users
	secure.Redirect = &v1.HTTPRedirect{Scheme: "https"}
	broken := route("api.example.com", "/broken/", v1.PathTypePrefix, "private", ports["private"])
	broken.BasicAuth = &v1.BasicAuth{SecretName: "refused"}
	lost := route("api.example.com", "/lost/", v1.PathTypePrefix, "private", ports["private"])
	lost.BasicAuth = &v1.BasicAuth{SecretName: "not-delivered"}
	open := route("api.example.com", "/open/", v1.PathTypePrefix, "open", ports["open"])
	return []v1.Route{private, office, ruled, secure, broken, lost, open}
}

// writeAtomically replaces dir/name with data as the kubelet updates a
// Secret volume: the new file appears whole, by a rename.
func writeAtomically(t *testing.T, dir, name, data string) {
	t.Helper()
	tmp := filepath.Join(dir, "."+name+".tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(data), 0o644))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, name)))
}

// TestDataPlaneBasicAuth: through real nginx (Debian's 1.22), each
// answer of a basicAuth route: the right password of a bcrypt and a
// {SHA} user, a wrong one, the right and a wrong one of each other scheme
// basicauth.Check accepts ($apr1$, $5$, $6$, rounds=, $2a$, $2b$), none, an unknown user; a source range's 403
// before the question; a rule's named location asks too; a redirect to
// the other scheme comes first; a refused Secret (empty file) is 401 and
// a file the pod lacks 403, never the backend; a route without basicAuth
// does not ask. Then the file is replaced, as the kubelet does, without a
// reload: the new password opens, the old one no longer does.
func TestDataPlaneBasicAuth(t *testing.T) {
	dir := t.TempDir()
	users := aliceBcrypt + shaLine("bob", "hunter2") + schemeLines
	checked, err := basicauth.Check([]byte(users))
	require.NoError(t, err, "every scheme is one the operator accepts")
	writeAtomically(t, dir, basicauth.File("users"), checked)
	writeAtomically(t, dir, basicauth.File("refused"), "")
	ports := startEchoBackends(t, "private", "open")
	gw := gateway("auth", basicAuthRoutes(ports)...)
	nginx := startNginxOn(t, nginxBinary(t), "127.0.0.1", func(opts Options) (string, error) {
		config, err := Config(gw, opts)
		// The pod's path, moved into the test's directory.
		return strings.ReplaceAll(config, basicauth.Dir+"/", dir+"/"), err
	}, startServiceDNS(t))

	type request struct {
		from, target, user, password string
		canary                       bool
		service                      string
		status                       int
	}
	check := func(t *testing.T, requests map[string]request) {
		t.Helper()
		for name, tc := range requests {
			t.Run(name, func(t *testing.T) {
				header := http.Header{}
				if tc.canary {
					header.Set("X-Canary", "1")
				}
				from := tc.from
				if from == "" {
					from = "127.0.0.1"
				}
				c := gatewayClient(from)
				c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
				req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+nginx.httpAddr+tc.target, nil)
				require.NoError(t, err)
				req.Host, req.Header = "api.example.com", header
				if tc.user != "" {
					req.SetBasicAuth(tc.user, tc.password)
				}
				resp, err := c.Do(req)
				require.NoError(t, err)
				defer resp.Body.Close()
				var body strings.Builder
				_, _ = io.Copy(&body, resp.Body)
				if tc.service == "" {
					assert.Equal(t, tc.status, resp.StatusCode, "body: %s", body.String())
					if tc.status == http.StatusUnauthorized {
						assert.Equal(t, `Basic realm="`+realmOf(tc.target)+`"`, resp.Header.Get("WWW-Authenticate"))
					}
					return
				}
				require.Equal(t, http.StatusOK, resp.StatusCode, "body: %s\n%s", body.String(), nginx.logs())
				assert.Equal(t, tc.service, echoed(t, body.String()).Service)
			})
		}
	}
	check(t, map[string]request{
		"bcrypt, right password":      {target: "/private/x", user: "alice", password: "secret1", service: "private"},
		"{SHA}, right password":       {target: "/private/x", user: "bob", password: "hunter2", service: "private"},
		"wrong password":              {target: "/private/x", user: "alice", password: "secret2", status: http.StatusUnauthorized},
		"another user's password":     {target: "/private/x", user: "bob", password: "secret1", status: http.StatusUnauthorized},
		"unknown user":                {target: "/private/x", user: "mallory", password: "secret1", status: http.StatusUnauthorized},
		"no credentials":              {target: "/private/x", status: http.StatusUnauthorized},
		"the exact path":              {target: "/private", status: http.StatusUnauthorized},
		"source range first":          {from: "127.0.0.4", target: "/office/x", user: "alice", password: "secret1", status: http.StatusForbidden},
		"inside the source range":     {from: "127.0.0.2", target: "/office/x", user: "alice", password: "secret1", service: "private"},
		"the rule's location asks":    {target: "/ruled", canary: true, status: http.StatusUnauthorized},
		"the rule's location serves":  {target: "/ruled", canary: true, user: "alice", password: "secret1", service: "private"},
		"no rule takes it":            {target: "/ruled", status: http.StatusNotFound},
		"redirect to https first":     {target: "/secure/x", status: http.StatusFound},
		"refused Secret, right creds": {target: "/broken/x", user: "alice", password: "secret1", status: http.StatusUnauthorized},
		"refused Secret, no creds":    {target: "/broken/x", status: http.StatusUnauthorized},
		"file not delivered":          {target: "/lost/x", user: "alice", password: "secret1", status: http.StatusForbidden},
		"a route without basicAuth":   {target: "/open/x", service: "open"},
		"a path no route covers":      {target: "/nowhere", user: "alice", password: "secret1", status: http.StatusNotFound},
	})
	// Each other scheme: its password opens, another does not.
	schemes := map[string]request{}
	for user, sp := range schemePasswords {
		schemes[sp[0]+", right password"] = request{target: "/private/x", user: user, password: sp[1], service: "private"}
		schemes[sp[0]+", wrong password"] = request{target: "/private/x", user: user, password: sp[1] + "x", status: http.StatusUnauthorized}
	}
	check(t, schemes)

	// Rotation: alice's password changes and bob leaves; nginx is not
	// reloaded (it opens the file on each request).
	writeAtomically(t, dir, basicauth.File("users"), shaLine("alice", "secret3"))
	check(t, map[string]request{
		"rotated: the new password":                       {target: "/private/x", user: "alice", password: "secret3", service: "private"},
		"rotated: the old password":                       {target: "/private/x", user: "alice", password: "secret1", status: http.StatusUnauthorized},
		"rotated: the user that left":                     {target: "/private/x", user: "bob", password: "hunter2", status: http.StatusUnauthorized},
		"rotated: a refused Secret fixed later still 401": {target: "/broken/x", user: "alice", password: "secret3", status: http.StatusUnauthorized},
	})
	writeAtomically(t, dir, basicauth.File("refused"), shaLine("alice", "secret3"))
	check(t, map[string]request{
		"fixed: the Secret's users now pass": {target: "/broken/x", user: "alice", password: "secret3", service: "private"},
	})
}

// realmOf is the realm the test's route of target asks with.
func realmOf(target string) string {
	if strings.HasPrefix(target, "/broken/") {
		return DefaultBasicAuthRealm
	}
	return "Staff only"
}
