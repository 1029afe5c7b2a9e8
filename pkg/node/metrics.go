package node

// registerOutboxGauges exposes the PostgreSQL outbox's depth and oldest age
// from counts that Run's outbox loop refreshes (see outboxStats), so a
// scrape never queries the database.
func (n *Node) registerOutboxGauges() {
	n.outboxStats = newOutboxStats(n.Store.OutboxStats, n.reg, n.log)
}
