package cpushare

import (
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// Seat is this process's place in its group. Close gives it up.
type Seat struct {
	group string
	conn  *net.UnixConn
}

// Take takes the first free seat of group. An error means no seat could be
// taken (every one is in use, or the namespace refused); the caller runs
// on its own count.
func Take(group string) (*Seat, error) {
	for i := range MaxSeats {
		conn, err := bind(group, i)
		if errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &Seat{group: group, conn: conn}, nil
	}
	return nil, fmt.Errorf("all %d seats of %s are taken", MaxSeats, group)
}

// Count is the number of the group's seats in use, this one included. A
// seat is in use when its name cannot be bound; a free one is bound and let
// go at once, so a process taking a seat meanwhile takes the next.
func (s *Seat) Count() (int, error) {
	n := 0
	for i := range MaxSeats {
		conn, err := bind(s.group, i)
		switch {
		case errors.Is(err, syscall.EADDRINUSE):
			n++
		case err != nil:
			return 0, err
		default:
			_ = conn.Close()
		}
	}
	return n, nil
}

// Close gives the seat up.
func (s *Seat) Close() error { return s.conn.Close() }

func bind(group string, i int) (*net.UnixConn, error) {
	return net.ListenUnixgram("unixgram", &net.UnixAddr{Name: seatName(group, i), Net: "unixgram"})
}

// MachineGroup names the group of chatd processes that may run on this
// process's CPUs: the same set of CPUs allowed (processes pinned to
// different cores do not share them).
func MachineGroup() (string, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return "", fmt.Errorf("read this process's CPUs: %w", err)
	}
	h := fnv.New64a()
	for cpu := range len(set) * 64 {
		if set.IsSet(cpu) {
			_, _ = fmt.Fprintf(h, "%d,", cpu)
		}
	}
	return fmt.Sprintf("chatd-cpus-%016x", h.Sum64()), nil
}
