package reloader

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Render is the file nginx loads for template: every ${variable} replaced
// by the resolvers, space-separated. Nothing else in the template is
// touched, so an nginx variable such as $host never meets the environment
// (the images' entrypoint needs NGINX_ENVSUBST_FILTER for that).
func Render(template []byte, variable string, resolvers []string) []byte {
	return bytes.ReplaceAll(template, []byte("${"+variable+"}"), []byte(strings.Join(resolvers, " ")))
}

// Nameservers are the resolvers of a resolv.conf as nginx's resolver
// directive takes them, read as the nginx images'
// 15-local-resolvers.envsh reads them: the address of every "nameserver"
// line, an IPv6 one in brackets.
func Nameservers(resolvConf []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(resolvConf))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "nameserver" {
			continue
		}
		if strings.Contains(f[1], ":") {
			out = append(out, "["+f[1]+"]")
		} else {
			out = append(out, f[1])
		}
	}
	return out
}

// probeLocation is the path the probe server answers with the hash of the
// configuration the answering worker runs.
const probeLocation = "/apigateway-reloader/loaded"

// probeConfig is the reloader's own file beside the rendered one: a server
// on a Unix socket, reachable only inside the container, that answers with
// hash. Written with every configuration, it tells the reloader when the
// workers of a reload serve (new workers answer the new hash) without
// touching the gateway's own servers.
func probeConfig(socket, hash string) []byte {
	return fmt.Appendf(nil, `# Written by the apigateway-operator reloader with every configuration:
# the workers answer here with the hash of the one they serve.
server {
    listen unix:%s;
    access_log off;

    location = %s {
        default_type text/plain;
        return 200 "%s";
    }
}
`, socket, probeLocation, hash)
}

var probeHash = regexp.MustCompile(`return 200 "([0-9a-f]{64})";`)

// probeConfigHash is the hash a probeConfig file was written for, "" when
// data is none.
func probeConfigHash(data []byte) string {
	if m := probeHash.FindSubmatch(data); m != nil {
		return string(m[1])
	}
	return ""
}

// logPrefix is the time and process of an nginx error log line, which
// nginx -t writes when the image's nginx.conf sends the log to stderr: a
// refusal's message says the same whatever the image logs to.
var logPrefix = regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d (\[[a-z]+\]) \d+#\d+: `)

// MaxMessage bounds a Refusal's message, in bytes.
const MaxMessage = 1024

// nginxMessage is what of nginx's output explains a refusal: its [emerg],
// [alert] and [crit] lines when it wrote any, else all of it; control
// characters become spaces, and the whole is cut to MaxMessage bytes on a
// character boundary.
func nginxMessage(out []byte) string {
	var keep []string
	all := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, l := range all {
		if strings.Contains(l, "[emerg]") || strings.Contains(l, "[alert]") || strings.Contains(l, "[crit]") {
			keep = append(keep, logPrefix.ReplaceAllString(strings.TrimSpace(l), "nginx: $1 "))
		}
	}
	if len(keep) == 0 {
		keep = all
	}
	return Bound(strings.Join(keep, "; "), MaxMessage)
}

// Bound makes s fit a status message: control characters and invalid
// UTF-8 become spaces, and s is cut to at most limit bytes on a character
// boundary, "..." marking the cut. The operator bounds what a pod sends
// with it again, trusting no pod.
func Bound(s string, limit int) string {
	var b strings.Builder
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = ' '
		}
		if b.Len()+utf8.RuneLen(r) > limit {
			cut := b.String()
			for len(cut) > 0 && len(cut)+3 > limit {
				_, size := utf8.DecodeLastRuneInString(cut)
				cut = cut[:len(cut)-size]
			}
			return cut + "..."
		}
		b.WriteRune(r)
	}
	return b.String()
}
