//go:build !linux

package cpushare

import "errors"

// Seat is this process's place in its group; only Linux has them.
type Seat struct{}

var errLinux = errors.New("counting the processes that share the CPUs needs Linux")

// Take reports that only Linux has seats.
func Take(string) (*Seat, error) { return nil, errLinux }

// Count reports that only Linux has seats.
func (*Seat) Count() (int, error) { return 0, errLinux }

// Close does nothing.
func (*Seat) Close() error { return nil }

// MachineGroup reports that only Linux has seats.
func MachineGroup() (string, error) { return "", errLinux }
