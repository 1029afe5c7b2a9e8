package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/api/apitest"
	"github.com/chatd/chatd/pkg/node"
	"github.com/chatd/chatd/pkg/node/nodetest"
	"github.com/prometheus/client_golang/prometheus"
	"go.yaml.in/yaml/v3"
)

const (
	dashboardPath = "grafana/chatd.json"
	alertsPath    = "prometheus/alerts.yaml"
)

// prometheusOwn are series Prometheus makes itself, not chatd.
var prometheusOwn = map[string]bool{"up": true}

var (
	promStrings  = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'(?:[^'\\\\]|\\\\.)*'|`[^`]*`")
	promMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promTokens   = regexp.MustCompile(`\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|[A-Za-z_:][A-Za-z0-9_:]*|[0-9][0-9A-Za-z_.]*`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "by": true, "without": true, "on": true,
		"ignoring": true, "group_left": true, "group_right": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true,
	}
)

// promqlMetrics returns the metric names a PromQL expression selects: every
// identifier that is not a function or aggregation (followed by "("), a
// keyword, a label name (inside {...} or a by/on list), a number or
// duration, or a Grafana variable.
func promqlMetrics(expr string) []string {
	e := promStrings.ReplaceAllString(expr, `""`)
	e = promMatchers.ReplaceAllString(e, "{}")
	e = promRanges.ReplaceAllString(e, "[]")
	e = promGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promTokens.FindAllStringIndex(e, -1) {
		tok := e[loc[0]:loc[1]]
		switch {
		case tok[0] == '$' || tok[0] >= '0' && tok[0] <= '9' || promKeywords[tok]:
			continue
		case strings.HasPrefix(strings.TrimLeft(e[loc[1]:], " \t\n"), "("):
			continue // a function or an aggregation
		}
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

func TestPromQLMetrics(t *testing.T) {
	tests := []struct {
		name, expr string
		want       []string
	}{
		{"bare", "chatd_relay_active", []string{"chatd_relay_active"}},
		{"matchers and range", `rate(chatd_x_total{instance=~"$instance",path="by(x)"}[5m])`, []string{"chatd_x_total"}},
		{"grouping", "sum by (le, instance) (rate(chatd_h_bucket[$__rate_interval]))", []string{"chatd_h_bucket"}},
		{"binary", "sum(a) / on(instance) group_left(node) b > 0.5 and c offset 5m", []string{"a", "b", "c"}},
		{"quantile", "histogram_quantile(0.99, sum without (pod) (rate(h_bucket[5m])))", []string{"h_bucket"}},
		{"vector and up", `(sum(r) or vector(0)) < 1 unless up{job="chatd"} == 0`, []string{"r", "up"}},
		{"numbers", "x > 1e3 and y < 2.5", []string{"x", "y"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := promqlMetrics(tt.expr); !slices.Equal(got, tt.want) {
				t.Errorf("promqlMetrics(%q) = %v, want %v", tt.expr, got, tt.want)
			}
		})
	}
}

// dashboard is the part of a Grafana dashboard the tests read.
type dashboard struct {
	Panels     []dashPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *dashDatasource `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
}

type dashPanel struct {
	Title      string          `json:"title"`
	Type       string          `json:"type"`
	Datasource *dashDatasource `json:"datasource"`
	Targets    []struct {
		Expr       string          `json:"expr"`
		Datasource *dashDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's panels
}

type dashDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func parseDashboard(t *testing.T, text string) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	return d
}

func allPanels(ps []dashPanel) []dashPanel {
	var out []dashPanel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*[A-Za-z_][A-Za-z0-9_]*\s*\)$`)

// dashboardQueries are the dashboard's PromQL expressions, by where they are:
// every panel target, and the selector of every label_values variable.
func dashboardQueries(t *testing.T, text string) map[string]string {
	t.Helper()
	d := parseDashboard(t, text)
	out := map[string]string{}
	for _, p := range allPanels(d.Panels) {
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for i, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("panel %q target %d: empty expr", p.Title, i)
			}
			out[fmt.Sprintf("panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct{ Query string }
		if err := json.Unmarshal(v.Query, &q); err != nil {
			if err := json.Unmarshal(v.Query, &q.Query); err != nil {
				t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
			}
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q: want label_values(selector, label)", v.Name, q.Query)
			continue
		}
		out["variable "+v.Name] = m[1]
	}
	return out
}

// dashboardDatasourceUIDs are the datasource uids the dashboard names.
func dashboardDatasourceUIDs(t *testing.T, text string) []string {
	t.Helper()
	d := parseDashboard(t, text)
	var out []string
	add := func(ds *dashDatasource) {
		if ds != nil && !slices.Contains(out, ds.UID) {
			out = append(out, ds.UID)
		}
	}
	for _, p := range allPanels(d.Panels) {
		add(p.Datasource)
		for _, tg := range p.Targets {
			add(tg.Datasource)
		}
	}
	for _, v := range d.Templating.List {
		add(v.Datasource)
	}
	return out
}

// alertQueries are the alert rules' expressions, by alert name.
func alertQueries(t *testing.T, text string) map[string]string {
	t.Helper()
	var f struct {
		Groups []struct {
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal([]byte(text), &f); err != nil {
		t.Fatalf("alerts: %v", err)
	}
	out := map[string]string{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out["alert "+r.Alert+r.Record] = r.Expr
		}
	}
	return out
}

var descName = regexp.MustCompile(`fqName: "([^"]+)"`)

// exportedMetrics starts a real node (real PostgreSQL, real JetStream), sends
// a message through it, and returns every metric it exports: the names of
// all the descriptors registered on its registry (a vector with no series
// yet, such as chatd_push_withdrawn_total before any withdrawal, is
// exported all the same). It cross-checks them against a scrape of
// /metrics, so a name read from the registry is a name Prometheus sees.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	const secret = "deploy-metrics-test-secret"
	ns := nodetest.NATS(t, t.TempDir(), "127.0.0.1:0")
	n := nodetest.Run(t, node.Config{
		DatabaseURL: testpg.NewDatabase(t), NATSURL: ns.ClientURL(),
		JWTSecret: secret, NodeID: "deploy-1",
	})

	ch := make(chan *prometheus.Desc)
	go func() { n.Registry().Describe(ch); close(ch) }()
	described := map[string]bool{}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read a metric name from %s", d)
		}
		described[m[1]] = true
	}

	sendOne(t, n.URL(), secret)
	if got := nodetest.Metric(t, n.Node, "chatd_ingest_accepted_total"); got < 1 {
		t.Fatalf("chatd_ingest_accepted_total = %v after a send, want >= 1", got)
	}
	for _, name := range scrape(t, n.URL()+"/metrics") {
		if !described[name] && !described[baseName(name, described)] {
			t.Errorf("/metrics serves %s, which the registry does not describe", name)
		}
	}
	return described
}

// sendOne has alice send bob a message over REST.
func sendOne(t *testing.T, base, secret string) {
	t.Helper()
	tok := apitest.Token(t, []byte(secret), "alice", chatd.DefaultDevice)
	var chat struct{ ID string }
	apitest.PostJSON(t, base+"/api/chats/direct", tok, `{"user":"bob"}`, &chat)
	var msg struct{ Seq int64 }
	apitest.PostJSON(t, base+"/api/chats/"+chat.ID+"/messages", tok, `{"cid":"deploy-1","body":"hello"}`, &msg)
	if msg.Seq != 1 {
		t.Fatalf("sent message seq %d, want 1", msg.Seq)
	}
}

// scrape returns the series names /metrics serves.
func scrape(t *testing.T, url string) []string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) == 0 {
		t.Fatalf("GET %s: no series", url)
	}
	return out
}

// baseName is a histogram or summary series' metric name (x for x_bucket,
// x_sum, x_count), or name itself.
func baseName(name string, exported map[string]bool) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok && exported[b] {
			return b
		}
	}
	return name
}

// Every metric the dashboard draws and the alerts read is one a running
// chatd node exports (or Prometheus's own up), so a renamed metric fails
// here instead of leaving a blank panel or an alert that can never fire.
func TestDashboardAndAlertsReadExportedMetrics(t *testing.T) {
	queries := dashboardQueries(t, mustRead(t, dashboardPath))
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries; want its panels", len(queries))
	}
	alerts := alertQueries(t, mustRead(t, alertsPath))
	if len(alerts) < 8 {
		t.Fatalf("alerts.yaml has %d rules; want the alerts", len(alerts))
	}
	for k, v := range alerts {
		queries[k] = v
	}
	exported := exportedMetrics(t)
	if exported["chatd_no_such_metric"] {
		t.Fatal("the exported set holds a name no code registers")
	}
	var where []string
	for w := range queries {
		where = append(where, w)
	}
	sort.Strings(where)
	used := map[string]bool{}
	for _, w := range where {
		ms := promqlMetrics(queries[w])
		if len(ms) == 0 {
			t.Errorf("%s: %q selects no metric", w, queries[w])
		}
		for _, m := range ms {
			used[baseName(m, exported)] = true
			if !exported[baseName(m, exported)] && !prometheusOwn[m] {
				t.Errorf("%s: %s is not a metric chatd exports (in %q)", w, m, queries[w])
			}
		}
	}
	t.Logf("%d queries read %d distinct metrics of the %d chatd exports", len(queries), len(used), len(exported))
}
