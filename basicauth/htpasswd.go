package basicauth

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

const (
	// SecretKey is the key of a tenant's Secret that holds the htpasswd
	// file, as ingress-nginx's auth-secret.
	SecretKey = "auth"
	// MaxFileBytes bounds the htpasswd file of one Secret: some 500 users
	// with bcrypt hashes. A gateway copies at most MaxSecrets of them
	// into its own Secret, which the API server bounds at 1 MiB.
	MaxFileBytes = 64 << 10
	// MaxUsers bounds the users of one file: nginx reads the file from
	// the start on every request until it finds the user.
	MaxUsers = 512
	// MaxSecrets bounds the distinct Secrets the routes of one gateway
	// name; a route naming one more answers 401, as with a Secret that is
	// missing.
	MaxSecrets = 8
	// maxUserBytes bounds a user name.
	maxUserBytes = 255
	// maxBcryptCost and maxShaRounds bound the work of one check: nginx
	// checks a password inside its event loop, so a costly hash stalls
	// every request of that worker (bcrypt cost 12 takes some 250 ms).
	maxBcryptCost = 12
	maxShaRounds  = 100000

	// Dir is where a gateway pod finds the htpasswd files: the gateway's
	// own Secret (controller), mounted read-only.
	Dir = "/etc/apigateway/basic-auth"
)

// File is the file name, in Dir and as the key of the gateway's own
// Secret, of the htpasswd file from the Secret named secretName: a digest
// of the name, so it holds only [0-9a-f], whatever the tenant wrote, and
// routes naming the same Secret share it.
func File(secretName string) string {
	sum := sha256.Sum256([]byte(secretName))
	return "htpasswd-" + hex.EncodeToString(sum[:8])
}

// Path is the absolute path of File(secretName) in a gateway pod.
func Path(secretName string) string { return Dir + "/" + File(secretName) }

// ErrRefused wraps every reason Check refuses a file for.
var ErrRefused = errors.New("htpasswd refused")

// A scheme is a hash format nginx 1.22 verifies (itself, or through the
// C library's crypt(3): glibc's libxcrypt in Debian's images, musl in
// Alpine's, both of which know these), with its exact syntax.
// render.TestDataPlaneBasicAuth serves a user of each through nginx.
type scheme struct {
	name   string
	re     *regexp.Regexp
	tooHot func(m []string) bool
}

var schemes = []scheme{
	{name: "bcrypt", re: regexp.MustCompile(`^\$2[aby]\$([0-9]{2})\$[./A-Za-z0-9]{53}$`), tooHot: func(m []string) bool {
		cost, _ := strconv.Atoi(m[1])
		return cost < 4 || cost > maxBcryptCost
	}},
	{name: "apr1", re: regexp.MustCompile(`^\$apr1\$[./0-9A-Za-z]{1,8}\$[./0-9A-Za-z]{22}$`)},
	{name: "sha", re: regexp.MustCompile(`^\{SHA\}[A-Za-z0-9+/]{27}=$`)},
	{name: "sha256-crypt", re: regexp.MustCompile(`^\$5\$(?:rounds=([0-9]{1,9})\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{43}$`), tooHot: roundsTooHot},
	{name: "sha512-crypt", re: regexp.MustCompile(`^\$6\$(?:rounds=([0-9]{1,9})\$)?[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{86}$`), tooHot: roundsTooHot},
}

func roundsTooHot(m []string) bool {
	if m[1] == "" {
		return false
	}
	n, _ := strconv.Atoi(m[1])
	return n > maxShaRounds
}

// Check reads an htpasswd file and returns it as the gateway serves it:
// one "user:hash" line per user, comments and blank lines left out. It
// refuses (ErrRefused) a file over MaxFileBytes or MaxUsers, without a
// user, with a line that is not "user:hash", a user twice, a plaintext
// password or a hash whose scheme it does not accept. The error names
// the line by its number, never its user or hash.
func Check(data []byte) (string, error) {
	if len(data) > MaxFileBytes {
		return "", fmt.Errorf("%w: %d bytes, over the bound of %d", ErrRefused, len(data), MaxFileBytes)
	}
	var out strings.Builder
	users := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, err := checkLine(line)
		if err != nil {
			return "", fmt.Errorf("%w: line %d: %w", ErrRefused, i+1, err)
		}
		if users[user] {
			return "", fmt.Errorf("%w: line %d: a user listed on an earlier line again", ErrRefused, i+1)
		}
		if users[user] = true; len(users) > MaxUsers {
			return "", fmt.Errorf("%w: more than %d users", ErrRefused, MaxUsers)
		}
		out.WriteString(user + ":" + hash + "\n")
	}
	if len(users) == 0 {
		return "", fmt.Errorf("%w: no user", ErrRefused)
	}
	return out.String(), nil
}

// checkLine splits one line into its user and hash and checks both.
func checkLine(line string) (user, hash string, err error) {
	user, hash, ok := strings.Cut(line, ":")
	switch {
	case !ok:
		return "", "", errors.New(`not "user:hash"`)
	case user == "" || len(user) > maxUserBytes || !printable(user):
		return "", "", fmt.Errorf("the user must be 1 to %d printable ASCII characters, without spaces", maxUserBytes)
	case strings.HasPrefix(hash, "{PLAIN}"):
		return "", "", errors.New("a plaintext password ({PLAIN}): use a bcrypt hash (htpasswd -B)")
	}
	// An htpasswd line may carry a comment after a second colon, which
	// nginx ignores; the gateway's copy leaves it out.
	hash, _, _ = strings.Cut(hash, ":")
	for _, s := range schemes {
		m := s.re.FindStringSubmatch(hash)
		if m == nil {
			continue
		}
		if s.tooHot != nil && s.tooHot(m) {
			return "", "", fmt.Errorf("a %s hash whose cost is outside what the gateway accepts (bcrypt 4 to %d, rounds up to %d)", s.name, maxBcryptCost, maxShaRounds)
		}
		return user, hash, nil
	}
	return "", "", errors.New("not a hash the gateway accepts: bcrypt ($2y$, $2a$, $2b$), $apr1$, {SHA}, $5$ or $6$")
}

// printable reports whether s is printable ASCII without spaces.
func printable(s string) bool {
	for i := range len(s) {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}
