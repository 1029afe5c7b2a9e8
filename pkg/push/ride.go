package push

import (
	"strings"

	"github.com/nats-io/nats.go"
)

// Reports and skipped ids ride messages the nodes send anyway (peers.go).
// A node that does not lead forwards its clients' sends to the leading
// node every few milliseconds (pkg/forward), and the leading node shares
// every commit: both go more often than the reporter gathers. So a report
// rides the next forwarded batch and a skipped announcement the next share,
// and the reporter sends a message of its own only for what none took
// within its gathering. Every NATS message costs both nodes a read, a
// parse and a wake-up, far more than the ids in it. A node of an older
// build ignores the headers: what rode to it is lost, as a lost report or
// announcement is (its message is published, its entries reaped).

// reportsHeader carries reports on a forwarded batch: one value per node
// reported to, its id and then the ids it committed, separated by spaces.
const reportsHeader = "Chatd-Reports"

// skippedHeader carries, on a share, ids the sharing node kept out of the
// stream, separated by spaces.
const skippedHeader = "Chatd-Skipped"

// RiderRoom is the most a rider adds to a NATS message's header: a few
// hundred ids, more than a gathering holds at thousands of messages a
// second. What does not fit waits for the next message or the reporter.
const RiderRoom = 16 << 10

// AttachReports moves the queued reports into h, for a forwarded batch
// (pkg/forward's Config.Attach), as many as fit room bytes (at most
// RiderRoom).
func (r *Registry) AttachReports(h nats.Header, room int) {
	if !r.cfg.Peers {
		return
	}
	room = min(room, RiderRoom)
	r.mu.Lock()
	defer r.unlock()
	st := &r.settle
	if len(st.reports) == 0 {
		return
	}
	for origin, ids := range st.reports {
		// The header line, and the origin and a space before the ids.
		n := fitting(ids, room-headerLine(reportsHeader)-len(origin)-1)
		if n == 0 {
			continue
		}
		value := origin + " " + strings.Join(ids[:n], " ")
		room -= headerLine(reportsHeader) + len(value)
		h.Add(reportsHeader, value)
		r.metrics.reports.Add(float64(n))
		if n == len(ids) {
			delete(st.reports, origin)
		} else {
			st.reports[origin] = ids[n:]
		}
	}
	st.tookQueued()
}

// TakeReports applies the reports that rode a batch forwarded by the node
// from to this one (pkg/forward's Config.Attached). Reports meant for another
// node, queued before the lead moved here, are dropped: their messages are
// published after the settle wait, as for a lost report.
func (r *Registry) TakeReports(from string, h nats.Header) {
	values := h.Values(reportsHeader)
	if !r.cfg.Peers || len(values) == 0 || from == "" || from == r.cfg.NodeID {
		return
	}
	r.mu.Lock()
	defer r.unlock()
	for _, v := range values {
		origin, ids, _ := strings.Cut(v, " ")
		if origin == r.cfg.NodeID {
			r.settle.reported(from, strings.Fields(ids))
		}
	}
}

// attachSkipped moves queued skipped ids into h, for a share, as many as
// fit RiderRoom.
func (r *Registry) attachSkipped(h nats.Header) {
	r.mu.Lock()
	defer r.unlock()
	st := &r.settle
	n := fitting(st.skipped, RiderRoom-headerLine(skippedHeader))
	if n == 0 {
		return
	}
	h.Set(skippedHeader, strings.Join(st.skipped[:n], " "))
	st.skipped = st.skipped[n:]
	if len(st.skipped) == 0 {
		st.skipped = nil
	}
	st.tookQueued()
}

// skippedRode applies the skipped ids that rode a share from origin.
func (r *Registry) skippedRode(origin string, h nats.Header) {
	v := h.Get(skippedHeader)
	if v == "" {
		return
	}
	r.mu.Lock()
	defer r.unlock()
	r.settle.skippedBy(origin, strings.Fields(v))
}

// headerLine is what a header line takes besides its value: the name,
// ": " and CRLF.
func headerLine(name string) int { return len(name) + len(": \r\n") }

// fitting is how many of ids, joined by spaces, fit room bytes.
func fitting(ids []string, room int) int {
	n, size := 0, -1
	for _, id := range ids {
		if size+1+len(id) > room {
			break
		}
		size += 1 + len(id)
		n++
	}
	return n
}

// tookQueued tells the reporter, when a rider took everything queued, that
// its gathering has nothing left to send.
func (st *settling) tookQueued() { st.signalEmpty(st.rode) }

// queued reports whether a report or a skipped id waits for sending.
func (st *settling) queued() bool { return len(st.reports) > 0 || len(st.skipped) > 0 }
