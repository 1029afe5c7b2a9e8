// Package codec is the one definition of a message's JSON: the members of
// the msg object as both the WebSocket msg frame (pkg/wire) and the stream
// envelope write and read them, the envelope around it, and the arithmetic
// that gives an envelope's encoded size without encoding it. A field added
// to chatd.Message is written, read and counted here, once.
//
// It imports only the root package, internal/jsonfast and the standard
// library, so pkg/wire (which clients import) may use it. Everything here
// is safe for concurrent use: there is no state.
package codec
