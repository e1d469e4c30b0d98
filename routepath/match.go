package routepath

import "strings"

// MatchPath is the path a route matches as nginx and the Ingress see it:
// path percent-decoded as nginx decodes request paths (see Decode) and,
// for a prefix route, without its trailing "/" ("/" itself stays "/"), since
// prefix matching is element-wise and "/users/" and "/users" match the same
// requests. An empty path is "/", the schema's default. Two routes with the
// same host, pathType and MatchPath serve the same requests: the conflict
// checks, the Ingress builder and the renderer all key on it.
func MatchPath(path string, prefix bool) (string, error) {
	if path == "" {
		path = "/"
	}
	decoded, err := Decode(path)
	if err != nil {
		return "", err
	}
	if prefix && decoded != "/" {
		decoded = strings.TrimSuffix(decoded, "/")
	}
	return decoded, nil
}
