package api

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Defaults of JWKSConfig.
const (
	DefaultJWTUserClaim        = "sub"
	DefaultJWTServiceClaim     = "svc"
	DefaultJWKSRefreshInterval = time.Hour
	// DefaultJWKSMinRefresh is the least time between two refreshes caused by
	// an unknown kid: anyone can send a token with a made-up kid, and each
	// must not cost the identity provider a request.
	DefaultJWKSMinRefresh = 30 * time.Second
	// jwksFetchTimeout bounds one JWKS fetch. A refresh for an unknown kid
	// runs inside a request, which waits for it.
	jwksFetchTimeout = 5 * time.Second
)

// JWKSConfig makes the Server accept tokens signed by an identity provider's
// keys besides its own HS256 tokens. Zero URL disables it; then only HS256
// tokens verify, and Issuer, Audience and UserClaim are ignored.
type JWKSConfig struct {
	// URL serves the JWK Set (RFC 7517). New fetches it and fails when it
	// does not answer a valid set with at least one usable key.
	URL string
	// Issuer, when set, must equal a JWKS token's iss.
	Issuer string
	// Audience, when set, must be among a JWKS token's aud.
	Audience string
	// UserClaim names the JWKS token claim that holds the user id; its value
	// must pass chatd.ValidUserID. Zero means "sub". HS256 tokens always use
	// sub: chatd issues them itself.
	UserClaim string
	// ServiceClaim names the JWKS token claim that marks a service identity
	// when it is the boolean true (absent or false: a person; any other
	// value: 401). Zero means "svc", the claim chatd's own tokens use.
	ServiceClaim string
	// RefreshInterval is how often the set is fetched again in the
	// background, while Serve runs. Zero means 1 h.
	RefreshInterval time.Duration
	// MinRefresh is the least time between two fetches caused by a token
	// whose kid is not in the set (a rotated key). Zero means 30 s.
	MinRefresh time.Duration
	// Client fetches the set. Nil means a client with a 5 s timeout.
	Client *http.Client
}

func (c *JWKSConfig) setDefaults() {
	if c.UserClaim == "" {
		c.UserClaim = DefaultJWTUserClaim
	}
	if c.ServiceClaim == "" {
		c.ServiceClaim = DefaultJWTServiceClaim
	}
	setDur(&c.RefreshInterval, DefaultJWKSRefreshInterval)
	setDur(&c.MinRefresh, DefaultJWKSMinRefresh)
	if c.Client == nil {
		c.Client = &http.Client{Timeout: jwksFetchTimeout}
	}
}

// jwks is the identity provider's key set, kept fresh. The JWK parsing is
// jwkset's; the refresh loop is ours so that Serve owns and waits for it (the
// library's refresh goroutine cannot be waited for). Safe for concurrent use.
type jwks struct {
	cfg   JWKSConfig
	log   *slog.Logger
	now   func() time.Time
	store jwkset.Storage // concurrent-safe; replaced whole on each fetch
	// fetches counts fetches by result (ok, failed): a provider outage
	// shows here before the first withdrawn key is wrongly still accepted.
	fetches *prometheus.CounterVec

	// fetchMu serialises fetches, so concurrent unknown kids cause one.
	fetchMu sync.Mutex
	// lastKid is when the last fetch for an unknown kid started. Only those
	// count against MinRefresh: a key published just after the periodic
	// fetch must still work on first use.
	lastKid time.Time // guarded by fetchMu
}

// newJWKS fetches the set once: a wrong URL fails the start, not the first
// login.
func newJWKS(cfg JWKSConfig, reg prometheus.Registerer, log *slog.Logger, now func() time.Time) (*jwks, error) {
	cfg.setDefaults()
	k := &jwks{cfg: cfg, log: log, now: now, store: jwkset.NewMemoryStorage()}
	ctx, cancel := context.WithTimeout(context.Background(), jwksFetchTimeout)
	defer cancel()
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	if err := k.fetchLocked(ctx); err != nil {
		cfg.Client.CloseIdleConnections()
		return nil, fmt.Errorf("api: JWKS %s: %w", cfg.URL, err)
	}
	// Registered only once the set is good, so a failed New leaves the
	// registry as it was.
	k.fetches = promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Name: "chatd_jwks_fetches_total",
		Help: "JWK Set fetches after the one at start (hourly and for unknown kids), by result: ok or failed (previous keys kept).",
	}, []string{"result"})
	return k, nil
}

// fetchLocked replaces the stored keys with the set at the URL. On failure
// the old keys stay: an identity provider's outage must not log everyone out.
func (k *jwks) fetchLocked(ctx context.Context) error {
	remote, err := jwkset.NewStorageFromHTTP(k.cfg.URL, jwkset.HTTPClientStorageOptions{
		Client: k.cfg.Client, Ctx: ctx, HTTPTimeout: jwksFetchTimeout,
	})
	if err != nil {
		return err
	}
	all, err := remote.KeyReadAll(ctx)
	if err != nil {
		return err
	}
	keys := all[:0]
	for _, j := range all {
		if use := j.Marshal().USE; use == "" || use == jwkset.UseSig {
			if j.Marshal().KID != "" {
				keys = append(keys, j)
			}
		}
	}
	if len(keys) == 0 {
		return errors.New("no signing key with a kid in the set")
	}
	return k.store.KeyReplaceAll(ctx, keys)
}

// run refreshes the set every RefreshInterval until ctx ends.
func (k *jwks) run(ctx context.Context) {
	t := time.NewTicker(k.cfg.RefreshInterval)
	defer t.Stop()
	defer k.cfg.Client.CloseIdleConnections()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			k.refresh(ctx, false)
		}
	}
}

// refresh fetches the set. forKid marks a fetch for an unknown kid: it is
// skipped when the last such fetch started less than MinRefresh ago.
func (k *jwks) refresh(ctx context.Context, forKid bool) {
	k.fetchMu.Lock()
	defer k.fetchMu.Unlock()
	if forKid {
		now := k.now()
		if !k.lastKid.IsZero() && now.Sub(k.lastKid) < k.cfg.MinRefresh {
			return
		}
		k.lastKid = now
	}
	ctx, cancel := context.WithTimeout(ctx, jwksFetchTimeout)
	defer cancel()
	if err := k.fetchLocked(ctx); err != nil {
		k.fetches.WithLabelValues("failed").Inc()
		k.log.Warn("JWKS refresh failed; keeping the previous keys", "url", k.cfg.URL, "err", err)
		return
	}
	k.fetches.WithLabelValues("ok").Inc()
}

// key returns the public key named kid for a token signed with alg. An
// unknown kid refetches the set (rate-limited) before it fails, so a key the
// provider just added works on first use.
func (k *jwks) key(kid, alg string) (any, error) {
	if kid == "" {
		return nil, errors.New("token has no kid")
	}
	ctx := context.Background()
	j, err := k.store.KeyRead(ctx, kid)
	if errors.Is(err, jwkset.ErrKeyNotFound) {
		k.refresh(ctx, true)
		j, err = k.store.KeyRead(ctx, kid)
	}
	if err != nil {
		return nil, fmt.Errorf("kid %q: %w", kid, err)
	}
	if a := j.Marshal().ALG.String(); a != "" && a != alg {
		return nil, fmt.Errorf("kid %q is for %s, token says %s", kid, a, alg)
	}
	pub := j.Key()
	// A set may hold private keys; verifying needs only their public half.
	if p, ok := pub.(interface{ Public() crypto.PublicKey }); ok {
		pub = p.Public()
	}
	if !keyFits(pub, alg) {
		return nil, fmt.Errorf("kid %q holds a %T, not a key for %s", kid, pub, alg)
	}
	return pub, nil
}

// keyFits pins each algorithm to its key type (and ES256 to P-256), so a
// token cannot pick a verification the key was not made for.
func keyFits(key any, alg string) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return alg == jwt.SigningMethodRS256.Alg()
	case *ecdsa.PublicKey:
		return alg == jwt.SigningMethodES256.Alg() && k.Curve == elliptic.P256()
	case ed25519.PublicKey:
		return alg == jwt.SigningMethodEdDSA.Alg()
	}
	return false
}
