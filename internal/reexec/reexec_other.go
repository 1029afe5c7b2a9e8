//go:build !linux

package reexec

// Apply does nothing outside Linux: there is no timer slack, and chatd
// does not execute itself again there for the monitor alone.
func Apply(Settings) error { return nil }

// MonitorPolls reports false: Apply does not set the monitor polling here.
func MonitorPolls() bool { return false }
