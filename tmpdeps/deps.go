package deps
import (
 _ "github.com/jackc/pgx/v5"
 _ "github.com/nats-io/nats-server/v2/server"
 _ "github.com/nats-io/nats.go/jetstream"
 _ "github.com/gofiber/fiber/v2"
 _ "github.com/gofiber/contrib/websocket"
 _ "github.com/oklog/ulid/v2"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/golang-jwt/jwt/v5"
 _ "golang.org/x/time/rate"
 _ "github.com/jackc/tern/v2/migrate"
 _ "go.uber.org/goleak"
 _ "golang.org/x/sync/errgroup"
 _ "github.com/fasthttp/websocket"
)
