package api

// userConnectedLocked tells presence that user's first session on this node
// started. Under g.mu, so that one user's connects and disconnects reach
// presence in the order they happened.
func (g *gateway) userConnectedLocked(user string) {
	if p := g.cfg.Presence; p != nil {
		p.Connected(user)
	}
}

// userDisconnectedLocked tells presence that user's last session on this
// node ended; under g.mu like userConnectedLocked.
func (g *gateway) userDisconnectedLocked(user string) {
	if p := g.cfg.Presence; p != nil {
		p.Disconnected(user)
	}
}
