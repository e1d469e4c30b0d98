// Package reloader runs nginx inside a gateway pod and reloads it, in
// place, when the pod's mounted configuration changes.
//
// The operator's pod template copies the operator's own binary into an
// emptyDir from an init container (Install), and the gateway container
// runs it as `apigateway-operator reloader run`: a supervisor that is the
// container's first process, renders the mounted template (the cluster DNS
// from the pod's /etc/resolv.conf in place of the resolver variable, as the
// nginx images' entrypoint would), starts the image's own nginx as its
// child, and on every change of the template writes the new file, tests it
// with that same nginx (`nginx -t`), and signals a reload only when the
// test passes. A refused configuration leaves the previous one serving and
// is reported, with nginx's own message, on the status port, where the
// operator reads which configuration each pod serves (Status).
//
// The reloader never runs nginx on anything but the pod's own mounted
// configuration, and needs no credentials: no API token, no capability, a
// read-only root filesystem.
package reloader
