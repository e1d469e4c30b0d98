// Package ext holds the extension points Traefik's dynamic configuration
// embeds (dynamic.HTTP and dynamic.Router inline them); the open-source
// build adds nothing to them.
package ext

// HTTP extends dynamic.HTTP.
type HTTP struct{}

// Router extends dynamic.Router.
type Router struct{}
