package push

// InFlight is how many stream messages the registry still tracks, for tests
// that prove nothing is left behind after a withdrawal.
func (r *Registry) InFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.deliveries) + len(r.finals)
}
