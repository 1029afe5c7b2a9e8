package node

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/chatd/chatd/pkg/stream"
)

// DefaultSubjectPrefix is Config.SubjectPrefix's default: the subjects
// chatd has always used (chat.out.<chat>, chat.sig.<kind>.<chat>), so
// existing deployments keep their stream; the presence bucket is
// chat_presence_v2 since its layout changed (presenceBucket).
const DefaultSubjectPrefix = "chat"

var (
	// NATS subject tokens without wildcards, and JetStream names (which
	// also become file names on the server).
	validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	validName   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// setNaming defaults and checks Stream.Name and SubjectPrefix.
func (c *Config) setNaming() error {
	if c.Stream.Name == "" {
		c.Stream.Name = stream.DefaultName
	}
	if c.SubjectPrefix == "" {
		c.SubjectPrefix = DefaultSubjectPrefix
	}
	if !validName.MatchString(c.Stream.Name) {
		return fmt.Errorf("node: --stream-name %q: want 1-64 of [A-Za-z0-9_-]", c.Stream.Name)
	}
	if !validPrefix.MatchString(c.SubjectPrefix) || len(c.SubjectPrefix) > 48 {
		return fmt.Errorf("node: --subject-prefix %q: want dot-separated tokens of [A-Za-z0-9_-], at most 48 bytes, no wildcards", c.SubjectPrefix)
	}
	return nil
}

// streamSubjects is the delivery stream's subject prefix (ends in a dot).
func (c *Config) streamSubjects() string { return c.SubjectPrefix + ".out." }

// takenSubjects is where a settling node with webhooks publishes the
// messages every recipient took live (stream.RelayConfig.TakenPrefix): in
// the delivery stream, one token deeper than a chat's subject, so that
// liveSubjects, the filter of live delivery and the notifier, leaves them
// out. A chat id is one token, so no chat's subject is among them.
func (c *Config) takenSubjects() string { return c.streamSubjects() + "taken." }
func (c *Config) liveSubjects() string  { return c.streamSubjects() + "*" }

// notifySubjects is the notification stream's subject prefix (ends in a
// dot), and notifyStream its name.
func (c *Config) notifySubjects() string { return c.SubjectPrefix + ".notify." }
func (c *Config) notifyStream() string   { return c.Stream.Name + "_NOTIFY" }

// changesSubjects is the changes stream's subject prefix (ends in a dot),
// and changesStream its name.
func (c *Config) changesSubjects() string { return c.SubjectPrefix + ".changes." }
func (c *Config) changesStream() string   { return c.Stream.Name + "_CHANGES" }

// relayWakeSubject is where the nodes announce their commits to the
// leading relay (stream.RelayConfig.WakeSubject).
func (c *Config) relayWakeSubject() string { return c.SubjectPrefix + ".relay.wake" }

// forwardSubject is where the node whose relay leads takes the other
// nodes' commit batches (pkg/forward).
func (c *Config) forwardSubject() string { return c.SubjectPrefix + ".ingest.commit" }

// sharedSubject is where the committing node shares its messages with the
// other nodes, settledSubjects (plus its node id) where they report those
// they settled, and skippedSubject where it says which it kept out of the
// stream (push.Config.Peers).
func (c *Config) sharedSubject() string   { return c.SubjectPrefix + ".settle.shared" }
func (c *Config) settledSubjects() string { return c.SubjectPrefix + ".settle.done." }
func (c *Config) skippedSubject() string  { return c.SubjectPrefix + ".settle.skipped" }

// signalPrefix is the signal bus's subject prefix.
func (c *Config) signalPrefix() string { return c.SubjectPrefix + ".sig" }

// presenceBucket is the presence KV bucket: bucket names take no dots.
// "_v2": heartbeats per node instead of refreshed entries per user, in a
// bucket without a TTL, which a node of the earlier layout would fight
// over (it sets one); so the two layouts never share a bucket.
func (c *Config) presenceBucket() string {
	return strings.ReplaceAll(c.SubjectPrefix, ".", "_") + "_presence_v2"
}
