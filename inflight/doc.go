// Package inflight bounds the memory the webhook server's requests hold
// together.
//
// The webhook server is part of the cluster's control plane (admission
// fails closed, every v1alpha1 read converts through it), and any pod can
// reach it: one large request, or many, must not take it past its memory
// limit. So every request reserves the bytes it will hold before its
// handler runs, from one Budget for all requests in flight together, and
// gives them back when the handler returns. A request holds its body
// several times over (the body read whole, what is decoded from it, the
// answer), so it reserves its Content-Length times the copies its handler
// holds, measured per handler, plus requestOverhead. What does not fit
// waits a little for room, then is refused with 429 and Retry-After (the
// API server retries webhook calls answered 429); a body that could never
// fit is refused with 413 at once.
//
// Bytes are not the whole story: JSON of a few bytes per element ("{},"
// in a list of structs) decodes into Go values a hundred times larger.
// So a handler that decodes charges the request for the most its JSON can
// decode into (Charge, DecodedBound), and the request's reservation grows,
// or it is refused, before the values exist.
//
// golang.org/x/sync/semaphore does not serve here: it wakes waiters in
// order, so a large request waiting at the head would hold every small one
// behind it, which is the starvation the reserve prevents.
package inflight
