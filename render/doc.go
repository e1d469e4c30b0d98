// Package render turns an APIGateway into the nginx configuration its pods
// serve: the renderer, the bound on the configuration's size that
// admission checks, and the directives of each traffic setting.
//
// It is pure (no client, no I/O) and imports only the API and its
// validation, so admission (package admit), the offline commands and the
// reconciler (package controller) all read the same renderer without
// importing one another.
package render
