package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

const (
	// startTimeout bounds how long a start waits for the server to accept
	// connections; crash recovery after a kill replays WAL first.
	startTimeout = 2 * time.Minute
	// pingInterval is how often a start polls for readiness.
	pingInterval = 25 * time.Millisecond
	// killWait is how long Stop waits after escalating to an immediate
	// shutdown before it kills the postmaster outright.
	killWait = 5 * time.Second
	// defaultPort only names the socket file (.s.PGSQL.5432): the server
	// has no TCP listener, and its socket directory is private to the
	// cluster, so no other server can clash with it.
	defaultPort = 5432
)

// deathSignal is what the kernel sends postgres when chatd dies, however it
// dies (kill -9 included). SIGQUIT is PostgreSQL's immediate shutdown: the
// postmaster kills its backends and exits at once, without a checkpoint.
// That loses nothing: with fsync and synchronous_commit on, every commit is
// already in the WAL, and the next start replays it. SIGINT (fast shutdown)
// would checkpoint first, which under load can keep an orphan server, its
// port and its cluster busy for many seconds after chatd is gone, and block
// the restart that follows.
const deathSignal = syscall.SIGQUIT

// PostgresConfig configures StartPostgres.
type PostgresConfig struct {
	// Dir is the cluster (data) directory, e.g. <data-dir>/pg. Required. It
	// is created and initialized with initdb on first start. When chatd
	// runs as root and the postgres user cannot search every directory
	// above it, a new cluster goes under ReachableRoot instead.
	Dir string
	// BinDir holds the server binaries (initdb, postgres). Empty means
	// FindBinDir.
	BinDir string
	// ReachableRoot is where the cluster lives instead of Dir when chatd
	// runs as root and the postgres user cannot reach Dir (a data dir in
	// a 0700 home): ReachableRoot/<name>/pg, <name> derived from Dir so
	// the next start finds it again. Empty means /var/lib/chatd.
	ReachableRoot string
	// Logger receives the server's own log lines (at the levels serverLog
	// describes) and supervision events. Nil discards them.
	Logger *slog.Logger
	// Port names the unix socket file (.s.PGSQL.<Port>) in the private
	// socket directory. The server opens no TCP port: with trust
	// authentication, a TCP listener would make every local OS user a
	// superuser. Zero means 5432.
	Port int
}

// Postgres is a private PostgreSQL server run from the machine's installed
// binaries as a supervised child process: restarted with backoff if it
// exits on its own, killed by the kernel if chatd dies. Its methods are safe
// for concurrent use.
type Postgres struct {
	binDir  string
	dataDir string
	sockDir string
	port    int
	as      runAs
	log     *slog.Logger
	srvLog  *serverLog

	mu  sync.Mutex  // serializes start and stop
	sup *supervisor // nil while stopped
}

// StartPostgres initializes the cluster on first use, starts the server and
// returns once it accepts connections. The caller must call Stop.
func StartPostgres(ctx context.Context, cfg PostgresConfig) (*Postgres, error) {
	p, err := newPostgres(cfg)
	if err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if created, err := initCluster(ctx, p.binDir, p.dataDir, p.as); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	} else if created {
		p.log.Info("initialized postgres cluster", "dir", p.dataDir)
	}
	if err := p.as.own(p.dataDir); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	if p.sockDir, err = prepareSocketDir(p.dataDir, p.as); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.startLocked(ctx, "postgres started"); err != nil {
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	return p, nil
}

func newPostgres(cfg PostgresConfig) (*Postgres, error) {
	if cfg.Dir == "" {
		return nil, errors.New("the cluster dir (PostgresConfig.Dir) is required")
	}
	dataDir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("cluster dir: %w", err)
	}
	as, err := lookupRunAs()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "postgres")
	place, err := placeCluster(dataDir, cfg.ReachableRoot, as)
	if err != nil {
		return nil, err
	}
	switch {
	case place.moved && place.why != nil:
		log.Info("postgres cluster kept outside the data dir: the server's user cannot reach it there",
			"dir", place.dir, "data_dir_pg", dataDir, "reason", place.why.Error())
	case place.moved:
		log.Info("postgres cluster kept outside the data dir, where an earlier start put it",
			"dir", place.dir, "data_dir_pg", dataDir)
	}
	dataDir = place.dir
	binDir := cfg.BinDir
	switch {
	case binDir != "":
		err = checkBinDir(binDir)
	case hasCluster(dataDir):
		binDir, err = binDirForCluster(dataDir)
	default:
		binDir, err = FindBinDir()
	}
	if err != nil {
		return nil, err
	}
	port := cfg.Port
	if port == 0 {
		port = defaultPort
	}
	return &Postgres{
		binDir:  binDir,
		dataDir: dataDir,
		port:    port,
		as:      as,
		log:     log,
		srvLog:  newServerLog(log),
	}, nil
}

// startLocked starts a supervisor, waits for the server to be ready and
// logs msg. The messages differ for a first start and a Restart, and the
// supervisor's own restart after a crash logs "postgres restarted", so the
// log tells the three apart.
func (p *Postgres) startLocked(ctx context.Context, msg string) error {
	if err := waitOrphan(ctx, p.dataDir); err != nil {
		return err
	}
	if err := ensureSocketDir(p.sockDir, p.as); err != nil {
		return err
	}
	sup := newSupervisor(p.newCmd, p.ping, p.log, p.srvLog)
	go sup.run()
	if err := p.waitReady(ctx, sup); err != nil {
		sup.stop(deathSignal)
		<-sup.done
		return err
	}
	sup.markReady()
	p.sup = sup
	p.log.Info(msg, "dir", p.dataDir, "port", p.port, "socket_dir", p.sockDir)
	return nil
}

// newCmd builds the postgres command for one child of the supervisor.
func (p *Postgres) newCmd() *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.binDir, "postgres"), serverArgs(p.dataDir, p.sockDir, p.port)...)
	cmd.Dir = p.dataDir
	cmd.Env = serverEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: p.as.cred,
		Pdeathsig:  deathSignal,
		// Own process group: a Ctrl-C in chatd's terminal must not reach
		// postgres directly, or it would shut down before chatd has flushed
		// its writes. chatd stops it last, in order.
		Setpgid: true,
	}
	return cmd
}

// waitReady polls until the server accepts a connection, the child exits,
// or ctx (bounded by startTimeout) ends.
func (p *Postgres) waitReady(ctx context.Context, sup *supervisor) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(pingInterval)
	defer tick.Stop()
	for {
		err := p.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-sup.done:
			return sup.err
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w (last error: %v): %s", ctx.Err(), err, p.srvLog.lastLines())
		case <-tick.C:
		}
	}
}

func (p *Postgres) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := pgconn.Connect(ctx, p.DSN("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.Ping(ctx)
}

// DSN returns a connection string for database dbname that reaches the
// server over its private unix socket, as the superuser "postgres". It works
// with pgx and libpq.
func (p *Postgres) DSN(dbname string) string {
	return fmt.Sprintf("host=%s port=%d user=%s dbname=%s sslmode=disable",
		dsnQuote(p.sockDir), p.port, superuser, dsnQuote(dbname))
}

// dsnQuote quotes a keyword/value connection string value when it needs it.
func dsnQuote(v string) string {
	if v != "" && !strings.ContainsAny(v, " '\\\t\n") {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// Port returns the port number in the socket file's name. The server
// listens on no TCP port.
func (p *Postgres) Port() int { return p.port }

// Restart stops the server (fast shutdown) and starts it again, returning once it accepts connections; on a stopped server it just
// starts it. Fault tests use it to take the database away under load.
func (p *Postgres) Restart(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stopLocked(ctx); err != nil {
		return fmt.Errorf("restart postgres: %w", err)
	}
	if err := p.startLocked(ctx, "postgres restarted on request"); err != nil {
		return fmt.Errorf("restart postgres: %w", err)
	}
	return nil
}

// Stop shuts the server down with a fast shutdown (clients disconnected,
// checkpoint written) and returns once every postgres process has exited.
// If ctx ends first it escalates to an immediate shutdown, then to SIGKILL,
// and returns ctx's error; committed data is safe either way. Stopping a
// stopped server is a no-op.
func (p *Postgres) Stop(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.stopLocked(ctx); err != nil {
		return fmt.Errorf("stop postgres: %w", err)
	}
	return nil
}

func (p *Postgres) stopLocked(ctx context.Context) error {
	sup := p.sup
	if sup == nil {
		return nil
	}
	p.sup = nil
	defer p.removeFallbackSocketDir()
	sup.stop(syscall.SIGINT)
	select {
	case <-sup.done:
		p.log.Info("postgres stopped", "dir", p.dataDir)
		return nil
	case <-ctx.Done():
	}
	sup.stop(syscall.SIGQUIT)
	select {
	case <-sup.done:
	case <-time.After(killWait):
		sup.stop(syscall.SIGKILL)
		<-sup.done
	}
	p.log.Warn("postgres stopped forcibly", "dir", p.dataDir, "err", ctx.Err())
	return ctx.Err()
}

// removeFallbackSocketDir removes a socket dir under /tmp once the server
// has gone; startLocked makes it again at the same path (the DSN must not
// change) and refuses it if someone else created it meanwhile. One inside
// the cluster stays.
func (p *Postgres) removeFallbackSocketDir() {
	if filepath.Dir(p.sockDir) != p.dataDir {
		_ = os.Remove(p.sockDir) // best effort: a crashed server may leave its lock file
	}
}

// Dir returns the cluster directory the server runs on.
func (p *Postgres) Dir() string { return p.dataDir }
