package deploy_test

import (
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/chatd/chatd/pkg/webhook"
)

// What a node serves on /metrics passes Prometheus's own linter (promtool
// check metrics: counters end in _total, units are base units, every
// metric has help), with a webhook endpoint configured so that the
// webhooks' and the notifier's metrics are served too, after one message.
func TestMetricsPassPromtoolCheck(t *testing.T) {
	const secret = "deploy-metrics-lint-secret"
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	n := nodetest.Run(t, node.Config{
		DatabaseURL: testpg.NewDatabase(t), NATSURL: ns.ClientURL(),
		JWTSecret: secret, NodeID: "deploy-lint",
		// Nothing listens there: the metrics exist whether posts succeed or not.
		Webhook: webhook.Config{Endpoints: []webhook.Endpoint{{URL: "http://127.0.0.1:9/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}},
	})
	sendOne(t, n.URL(), secret)
	resp, err := http.Get(n.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %v %s", err, resp.Status)
	}
	if !bytes.Contains(text, []byte("chatd_webhook_")) {
		t.Fatal("/metrics serves no chatd_webhook_ metric with a webhook configured")
	}
	cmd := exec.Command(promtool(t), "check", "metrics")
	cmd.Stdin = bytes.NewReader(text)
	out, err := cmd.CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("promtool check metrics (%d metrics): %v\n%s", bytes.Count(text, []byte("# HELP ")), err, out)
	}
	t.Logf("promtool check metrics: %d metrics, no problem", strings.Count(string(text), "# HELP "))
}
