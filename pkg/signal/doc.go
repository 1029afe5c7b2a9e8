// Package signal carries chatd's signals (typing, read receipts, presence)
// between the nodes of a cluster. Signals are not events: they are never
// stored in the outbox nor acked, and are best effort (docs/architecture.md,
// "Events and signals"). Typing and receipts travel on core
// NATS subjects, one per kind and chat, so no JetStream stream ever holds
// them; presence lives in a JetStream KV bucket whose entries expire on
// their own when a node dies (see Presence).
//
// The package hands incoming signals to a function the node wires to the
// API's gateway; it knows nothing of sockets.
package signal
