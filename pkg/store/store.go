// Package store is chatd's PostgreSQL layer: the schema and its migrations,
// chats and members, history, the group-commit write path, the outbox the
// relay drains, read state and retention.
//
// A Store is safe for concurrent use. All durable truth of chatd lives here;
// the invariants of docs/architecture.md that the database keeps are named
// where the code keeps them.
package store

import (
	"context"
	"fmt"
	"log/slog"
	"math"

	"github.com/chatd/chatd/internal/logsample"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DefaultMaxConns is the pool size when Config.MaxConns is zero.
const DefaultMaxConns = 16

// DefaultMaxGroupMembers is the group size cap when Config.MaxGroupMembers
// is zero. Every message of a group carries its member list to the delivery
// stream, so the cap bounds the envelope: 1000 ids of 64 bytes are ~67 KB,
// well inside NATS's default 1 MB max payload beside a maximal body.
const DefaultMaxGroupMembers = 1000

// Config tunes a Store. The zero value is usable.
type Config struct {
	// MaxConns caps the connection pool (a pool_max_conns in the DSN is
	// overridden). 0 means DefaultMaxConns. The dedicated connection of a
	// held RelayLock is not counted against it.
	MaxConns int
	// MaxGroupMembers caps a group's size, checked when it is created and
	// when a member is added (chatd.ErrTooManyMembers). 0 means
	// DefaultMaxGroupMembers. Groups already larger keep their members.
	MaxGroupMembers int
	// MinChatRetention is the shortest history retention a chat may have:
	// the node sets it to the delivery stream's max age, so that anything
	// the stream still holds stays recoverable from history
	// (docs/architecture.md, invariant 4). SetChatRetention refuses less, and
	// PruneHistory never keeps less. 0 means no floor.
	MinChatRetention time.Duration
	// Logger receives the store's warnings (e.g. a lost LISTEN connection).
	// nil means slog.Default().
	Logger *slog.Logger
	// Tracer, if set, sees every statement the pool's connections run (and
	// every pipelined batch, if it also implements pgx.BatchTracer): a hook
	// for query tracing, and how the tests count round trips.
	Tracer pgx.QueryTracer
	// HighWater, if set, says what the database handed out that clients or
	// the stream have seen. When a new connection finds the primary on a
	// new timeline (a failover), the store raises its counters past it
	// before the connection takes any send (see HighWater). Nil skips that.
	HighWater func(context.Context) (HighWater, error)
	// RecordMembers and RecordReads write each member change, and each read
	// position that moves, to the chat_changes table in the change's own
	// transaction, for the webhooks that take them (ReadChanges). Off, the
	// changes cost what they cost without webhooks.
	RecordMembers, RecordReads bool
}

// Store is a handle on chatd's PostgreSQL database. Create it with Open and
// release it with Close.
type Store struct {
	pool             *pgxpool.Pool
	log              *slog.Logger
	sampled          *logsample.Sampler // what can repeat for every batch (a row refused)
	minChatRetention time.Duration
	maxGroupMembers  int
	highWater        func(context.Context) (HighWater, error)
	recordMembers    bool
	markReadSQL      string // markReadSQL, or markReadRecordedSQL while recording reads

	tlMu sync.Mutex   // serializes failover repairs (checkTimeline)
	tl   atomic.Int64 // the primary's timeline the pool last connected to; 0 before the first
	// failover is the last change of tl; nil before the first.
	failover atomic.Pointer[Failover]
}

// Open connects to the database at dsn and applies every pending migration
// before it returns, so a Store that opened is on the latest schema. Opening
// several Stores on one database at once is safe: migrations serialize on an
// advisory lock and a database already up to date is left alone.
func Open(ctx context.Context, dsn string, cfg Config) (*Store, error) {
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open store: parse dsn: %w", err)
	}
	pcfg.MaxConns = int32(min(cfg.MaxConns, math.MaxInt32))
	if cfg.Tracer != nil {
		pcfg.ConnConfig.Tracer = cfg.Tracer
	}
	if pcfg.MaxConns <= 0 {
		pcfg.MaxConns = DefaultMaxConns
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "store")
	s := &Store{
		log: log, sampled: logsample.New(log, logsample.Config{}),
		minChatRetention: max(cfg.MinChatRetention, 0), maxGroupMembers: cfg.MaxGroupMembers,
		highWater:     cfg.HighWater,
		recordMembers: cfg.RecordMembers, markReadSQL: markReadSQL,
	}
	if cfg.RecordReads {
		s.markReadSQL = markReadRecordedSQL
	}
	pcfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		registerArrays(conn)
		return s.checkTimeline(ctx, conn)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.pool = pool
	if s.maxGroupMembers <= 0 {
		s.maxGroupMembers = DefaultMaxGroupMembers
	}
	if err := s.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	s.warnLossyReplication(ctx)
	return s, nil
}

// Close closes the pool, waiting for borrowed connections to come back.
// A held RelayLock's dedicated connection is closed by its owner.
func (s *Store) Close() {
	s.pool.Close()
	s.sampled.Flush()
}

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

// Ready reports whether the database answers and its schema is at least
// the latest version this binary knows (for /readyz). A newer schema is
// ready: during a rolling upgrade the first new node migrates it while the
// old ones serve on (a release's migrations only add).
func (s *Store) Ready(ctx context.Context) error {
	if err := s.Ping(ctx); err != nil {
		return err
	}
	v, err := s.schemaVersion(ctx)
	if err != nil {
		return err
	}
	if want := latestVersion(); v < want {
		return fmt.Errorf("schema version %d, want %d", v, want)
	}
	return nil
}

// Pool exposes the connection pool for callers that need a raw query (tests,
// admin tooling). Writes that bypass the Store's methods bypass its invariants.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }
