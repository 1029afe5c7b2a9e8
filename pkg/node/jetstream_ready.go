package node

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// jetStreamWait bounds how long a starting node waits for JetStream to take
// its streams. A NATS cluster started together with chatd (compose, a
// Kubernetes release, a host's reboot) elects its metadata leader and learns
// its servers in the first seconds; until then it answers a stream request
// late, not at all, or with "temporarily unavailable" or "no suitable peers".
const jetStreamWait = time.Minute

// Retries between the attempts of one set-up step start at the first and
// double up to the last.
const (
	jetStreamRetryFirst = 250 * time.Millisecond
	jetStreamRetryMax   = 4 * time.Second
)

// The JetStream API errors of a cluster still forming (the client library
// names none of them).
const (
	noPeersForPlacement   jetstream.ErrorCode = 10005 // replicas not placeable yet
	clusterNotAvailable   jetstream.ErrorCode = 10008 // no metadata leader
	clusterCannotHandle   jetstream.ErrorCode = 10009 // a server that cannot answer for the cluster
	insufficientResources jetstream.ErrorCode = 10023 // peers whose resources it has not heard
)

// untilJetStream runs set, the set-up step named what, again while it fails
// because JetStream is not ready yet, warning each time, until it succeeds,
// fails for another reason, ctx ends or jetStreamWait has passed.
func (n *Node) untilJetStream(ctx context.Context, what string, set func(context.Context) error) error {
	give := time.Now().Add(jetStreamWait)
	retry := jetStreamRetryFirst
	for {
		err := set(ctx)
		if err == nil || !jetStreamNotReady(ctx, err) {
			return err
		}
		if time.Now().Add(retry).After(give) {
			return fmt.Errorf("%w (JetStream was not ready for %v: check that the NATS servers run, reach each other and have JetStream on, and that there are at least --stream-replicas of them)", err, jetStreamWait)
		}
		n.log.Warn("JetStream is not ready; trying again", "step", what, "in", retry, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(retry):
		}
		retry = min(2*retry, jetStreamRetryMax)
	}
}

// jetStreamNotReady says whether err is one a forming cluster gives, rather
// than a refusal that waiting does not mend (a stream of another
// deployment, a configuration the servers reject).
func jetStreamNotReady(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders) {
		return true
	}
	var api *jetstream.APIError
	if !errors.As(err, &api) {
		return false
	}
	switch api.ErrorCode {
	case noPeersForPlacement, clusterNotAvailable, clusterCannotHandle, insufficientResources:
		return true
	}
	return false
}
