// Package api is chatd's HTTP edge, built on Fiber: the WebSocket gateway
// (auth on upgrade, hello, send → accepted/rejected, acks, read receipts,
// keepalive, per-connection limits and close codes), the REST calls of the
// wire contract (chats, members, history, REST send), health and readiness,
// the Prometheus endpoint, and for browsers: CORS for the allowed origins,
// the embedded demo app and JavaScript SDK (static.go), and the development
// login that exists only when configured (dev_login.go).
//
// It is the only package that knows HTTP and WebSocket, and the only one
// that maps the domain errors of package chatd to HTTP statuses, `rejected`
// codes and close codes. The codes themselves, the frames and their
// encoding are package wire's, shared with the clients. Everything behind
// it is reached through the small consumer-owned interfaces in deps.go:
// Chats (the store), Ingester (the accept path) and Deliverer (the push
// registry).
package api
