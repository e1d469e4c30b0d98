package reloader

import (
	"regexp"
	"strings"
)

// errorContext starts the part of an nginx error line that describes the
// request: client, server, request line, upstream URI, host, referrer.
const errorContext = ", client: "

// queryString is a query string in that part: from "?" to the end of the
// quoted value or the request line's " HTTP/1.1".
var queryString = regexp.MustCompile(`\?[^\s"]*`)

// redactedQuery replaces each query string.
const redactedQuery = "?[redacted]"

// redactQueries removes the query strings from an nginx error line before
// it reaches the pod's output: nginx writes the request line, the
// upstream URI and the Referer of a failed request whole, and tokens
// travel in query strings, which the access log never writes either (see
// docs/tenants.md, "Access logs"). The message before the request's
// context is nginx's own and kept as it is.
func redactQueries(line string) string {
	i := strings.Index(line, errorContext)
	if i < 0 {
		return line
	}
	return line[:i] + queryString.ReplaceAllLiteralString(line[i:], redactedQuery)
}
