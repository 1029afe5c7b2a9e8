// Package cpushare counts the chatd processes that share this machine's
// CPUs, so that each can run Go on its share of them instead of all of
// them. Three nodes of a cluster on a 2-core box, each with Go's default of
// a processor per core, wake idle processors to look for work the other
// processes are doing, and spend about an eighth more CPU a message than
// with one processor each (docs/benchmarks-log.md, "One P per node for the
// cluster on one box").
//
// A process takes a seat: the first free of a group's numbered names in
// Linux's abstract socket namespace, bound by a socket it holds open. The
// kernel frees the name when the process exits, however it exits, so no
// file is left behind and a crashed process is never counted. The names are
// per network namespace: processes in separate containers do not see each
// other, and their CPU limits are the container's to set.
package cpushare

import "fmt"

// MaxSeats is how many processes of one group are counted; one more finds
// no seat (Take's error) and runs without a share.
const MaxSeats = 64

// Share is the number of Go processors (GOMAXPROCS) each of processes
// sharing cpus should run: the CPUs divided among them, at least one.
func Share(cpus, processes int) int {
	if processes < 1 {
		processes = 1
	}
	return max(1, cpus/processes)
}

// seatName is the abstract socket name of a group's seat i.
func seatName(group string, i int) string {
	return fmt.Sprintf("@%s-%d", group, i)
}
