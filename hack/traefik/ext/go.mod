// Module ext stands in for Traefik's unpublished nested module of the same
// path (see ../go.mod).
module github.com/traefik/traefik/dynamic/ext

go 1.24.0
