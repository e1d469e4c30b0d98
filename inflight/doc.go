// Package inflight is the webhook server: what each connection and each
// request may take of it, in time, connections and memory.
//
// The webhook server is part of the cluster's control plane (admission
// answers every write, every v1alpha1 read converts through it), and any
// pod that reaches it can call it: /convert must stay open to callers
// without a client certificate, since the API server presents none to
// conversion webhooks. So nothing a caller does, however slowly and
// however often, may take the server from the API server.
//
// Server serves what is registered on controller-runtime's webhook.Server
// with an http.Server of its own (Limits): the TLS handshake and each
// request's headers within seconds, a whole request within seconds more,
// headers of a few KiB. controller-runtime's has no read timeout, a 32 s
// header timeout and 1 MiB of headers, and no option to change them. A
// gate under TLS caps the connections of callers it cannot tell from an
// attacker (see gate): a full gate closes one of the source address that
// holds the most, never refusing the next caller, who may be the API
// server.
//
// Budget bounds the bytes the requests in flight hold together. It reads
// each request's body itself, into a buffer that grows as bytes arrive, and
// charges each growth before it is made: a request holds room for what its
// client sent, never for the Content-Length it declared, and the read
// deadline ends one that sends slowly. Once the body is whole the request
// is charged the copies its handler holds, measured per handler, and the
// handler runs; what does not fit waits a little for room, then is refused
// with 429 and Retry-After (the API server retries webhook calls answered
// 429); a body that could never fit is refused with 413 at once. Two
// reserves are kept: one for the admission paths, which /convert never
// takes, and one for small requests, which large ones never take.
//
// Bytes are not the whole story: JSON of a few bytes per element ("{},"
// in a list of structs) decodes into Go values a hundred times larger.
// So a handler that decodes charges the request for the most its JSON can
// decode into (Charge, DecodedBound), and the request's reservation grows,
// or it is refused, before the values exist.
//
// golang.org/x/sync/semaphore does not serve here: it wakes waiters in
// order, so a large request waiting at the head would hold every small one
// behind it, which is the starvation the reserve prevents; nor does
// golang.org/x/net/netutil.LimitListener, which stops accepting at its cap,
// so that an attacker who fills it shuts the API server out.
package inflight
