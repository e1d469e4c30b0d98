// Package reloader runs nginx inside a gateway pod and reloads it, in
// place, when the pod's mounted configuration changes or the operator
// pushes a signed one.
//
// The operator's pod template copies the reloader's binary
// (cmd/apigateway-reloader, beside the operator's in its image) into an
// emptyDir from an init container (Install), and the gateway container
// runs it as `apigateway-reloader run`: a supervisor that is the
// container's first process, renders the mounted template (the cluster DNS
// from the pod's /etc/resolv.conf in place of the resolver variable, as the
// nginx images' entrypoint would), starts the image's own nginx as its
// child, and on every change of the template writes the new file, tests it
// with that same nginx (`nginx -t`), and signals a reload only when the
// test passes. A refused configuration leaves the previous one serving and
// is reported, with nginx's own message, on the status port, where the
// operator reads which configuration each pod serves (Status).
//
// # Pushes
//
// The kubelet projects a changed ConfigMap 31 to 81 s after the write
// (issue 33), so the status port also takes the template itself, pushed
// by the operator (POST PushPath, with --push-identity): a push.Sign
// envelope of the gateway's namespace, name and UID, a serial and the
// template. The reloader opens it with the public key of the identity
// file (push.IdentityKey) in its current volume, requires the identity's
// gateway and a serial above the one it serves, and loads it exactly as a
// changed volume (one path: write, nginx -t, reload, wait for the
// workers). It answers 200 with its Status once the new hash is served,
// 422 with nginx's words when nginx -t refuses it (reported in Status as
// any refusal; the previous configuration keeps serving), 409 for a serial
// not above the served one (the same serial and template again is a retry:
// 200), 403 for a bad signature, another gateway or no identity in the
// volume, 400 for a malformed envelope, 413 past push.MaxEnvelope, 429
// while another push is being processed; without the flag the path does
// not exist (404). The volume stays the durable source: a restarted
// container starts from it, and a volume whose serial is below the served
// one (it lags a push) loads nothing, so it never undoes a push; one with
// the served serial and hash reloads nothing; a newer one loads. Without
// the identity file (an operator from before pushes) pushes are refused
// and the volume is followed as before.
//
// Whoever reaches the port cannot make nginx load anything the operator
// did not sign, nor replay a signed push to another gateway or to an older
// serial; it can read pushed configurations in transit (plain HTTP: a
// template holds routes, backend names and header values, never TLS keys,
// which the Ingress controller or the parent Gateway holds), and can hold
// the one push slot for the server's ReadTimeout at a time.
//
// The reloader never runs nginx on anything but the configuration of its
// own gateway, from its mounted volume or signed by the operator, and
// needs no credentials: no API token, no capability, a read-only root
// filesystem; the identity holds a public key only.
package reloader
