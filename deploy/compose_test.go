package deploy_test

import (
	"context"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"go.yaml.in/yaml/v3"
)

const composePath = "compose/compose.yaml"

// testJWTSecret stands in for the operator's CHATD_JWT_SECRET.
const testJWTSecret = "compose-test-secret-0123456789abcdef"

// composeSecrets are the variables the operator puts in deploy/compose/.env
// (docs/operations.md), with test values, as name=value.
func composeSecrets() []string {
	return []string{
		"CHATD_JWT_SECRET=" + testJWTSecret,
		"POSTGRES_PASSWORD=compose-test-postgres-password",
		"GRAFANA_ADMIN_PASSWORD=compose-test-grafana-password",
	}
}

// loadCompose loads compose.yaml with the compose specification's loader, as
// `docker compose` would, with env as the shell's environment.
func loadCompose(t *testing.T, env ...string) (*types.Project, error) {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{composePath},
		cli.WithName("chatd"), cli.WithEnv(env), cli.WithDiscardEnvFile, cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return opts.LoadProject(ctx)
}

func mustCompose(t *testing.T) *types.Project {
	t.Helper()
	p, err := loadCompose(t, composeSecrets()...)
	if err != nil {
		t.Fatalf("load %s: %v", composePath, err)
	}
	return p
}

// servicesNamed are the project's services whose names start with prefix,
// sorted.
func servicesNamed(p *types.Project, prefix string) []types.ServiceConfig {
	var out []types.ServiceConfig
	for name, s := range p.Services {
		if strings.HasPrefix(name, prefix) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// argValue is the value of --name (or -name) in a command: the next
// argument, or after "=".
func argValue(cmd []string, name string) (string, bool) {
	for i, a := range cmd {
		if (a == "--"+name || a == "-"+name) && i+1 < len(cmd) {
			return cmd[i+1], true
		}
		for _, p := range []string{"--" + name + "=", "-" + name + "="} {
			if v, ok := strings.CutPrefix(a, p); ok {
				return v, true
			}
		}
	}
	return "", false
}

// setting is a chatd setting as a service gives it: its flag, else its
// CHATD_* variable.
func setting(s types.ServiceConfig, flag string) (string, bool) {
	if v, ok := argValue(s.Command, flag); ok {
		return v, true
	}
	env := "CHATD_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
	if v, ok := s.Environment[env]; ok && v != nil {
		return *v, true
	}
	return "", false
}

// urlHosts are the host:port of each comma-separated URL.
func urlHosts(t *testing.T, list string) []string {
	t.Helper()
	var out []string
	for _, u := range strings.Split(list, ",") {
		pu, err := url.Parse(strings.TrimSpace(u))
		if err != nil {
			t.Fatalf("%q: %v", u, err)
		}
		out = append(out, pu.Host)
	}
	sort.Strings(out)
	return out
}

// pgHosts are the host:port of a multi-host PostgreSQL URL, sorted.
func pgHosts(t *testing.T, db string) []string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatalf("database URL: %v", err)
	}
	hosts := strings.Split(u.Host, ",")
	sort.Strings(hosts)
	return hosts
}

func names(ss []types.ServiceConfig, port string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, net.JoinHostPort(s.Name, port))
	}
	return out
}

// Each secret is required: without it compose refuses to start and names
// it, rather than running with a default anyone can read in this file.
func TestComposeNeedsItsSecrets(t *testing.T) {
	all := composeSecrets()
	for i, kv := range all {
		name, _, _ := strings.Cut(kv, "=")
		others := slices.Delete(slices.Clone(all), i, i+1)
		if _, err := loadCompose(t, others...); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("load without %s: got %v, want an error naming it", name, err)
		}
	}
}

// Three NATS servers with JetStream, each routing to all three.
func TestComposeNATSCluster(t *testing.T) {
	p := mustCompose(t)
	nats := servicesNamed(p, "nats-")
	if len(nats) != 3 {
		t.Fatalf("got %d nats services, want 3", len(nats))
	}
	want := names(nats, "6222")
	seen := map[string]bool{}
	for _, s := range nats {
		if !slices.Contains(s.Command, "-js") && !slices.Contains(s.Command, "--jetstream") {
			t.Errorf("%s: JetStream is off (no -js)", s.Name)
		}
		if v, _ := argValue(s.Command, "cluster_name"); v == "" {
			t.Errorf("%s: no --cluster_name", s.Name)
		}
		listen, _ := argValue(s.Command, "cluster")
		if u, err := url.Parse(listen); err != nil || u.Port() != "6222" {
			t.Errorf("%s: --cluster %q: want a listener on 6222", s.Name, listen)
		}
		routes, _ := argValue(s.Command, "routes")
		if got := urlHosts(t, routes); !slices.Equal(got, want) {
			t.Errorf("%s: --routes %v, want every server %v", s.Name, got, want)
		}
		name, _ := argValue(s.Command, "n")
		if name == "" || seen[name] {
			t.Errorf("%s: server name %q missing or not unique", s.Name, name)
		}
		seen[name] = true
		if s.HealthCheck == nil || s.HealthCheck.Disable {
			t.Errorf("%s: no health check (chatd waits for service_healthy)", s.Name)
		}
	}
}

// Three chatd nodes with distinct stable ids, stream replicas 3, every NATS
// server in their URL, the PostgreSQL service, the secret from the
// environment, and only flags and variables chatd has.
func TestComposeChatdNodes(t *testing.T) {
	c := mustChatd(t)
	p := mustCompose(t)
	nodes := servicesNamed(p, "chatd-")
	if len(nodes) != 3 {
		t.Fatalf("got %d chatd services, want 3", len(nodes))
	}
	nats := names(servicesNamed(p, "nats-"), "4222")
	ids := map[string]string{}
	for _, s := range nodes {
		checkArgs(t, c, s.Name+" command", s.Command)
		checkArgs(t, c, s.Name+" entrypoint", s.Entrypoint)
		for name := range s.Environment {
			if strings.HasPrefix(name, "CHATD_") && !c.env[name] {
				t.Errorf("%s: chatd reads no %s", s.Name, name)
			}
		}
		id, _ := setting(s, "node-id")
		if id == "" {
			t.Errorf("%s: no --node-id: its consumer name would change with its data dir", s.Name)
		} else if other, dup := ids[id]; dup {
			t.Errorf("%s and %s share node id %s", other, s.Name, id)
		}
		ids[id] = s.Name
		if r, _ := setting(s, "stream-replicas"); r != "3" {
			t.Errorf("%s: stream replicas %q, want 3", s.Name, r)
		}
		natsURL, _ := setting(s, "nats-url")
		if got := urlHosts(t, natsURL); !slices.Equal(got, nats) {
			t.Errorf("%s: NATS URLs %v, want every server %v", s.Name, got, nats)
		}
		db, _ := setting(s, "database-url")
		if got, want := pgHosts(t, db), []string{"postgres-standby:5432", "postgres:5432"}; !slices.Equal(got, want) {
			t.Errorf("%s: database URL hosts %v, want the primary and its standby %v", s.Name, got, want)
		}
		if u, err := url.Parse(db); err != nil || u.Query().Get("target_session_attrs") != "read-write" {
			t.Errorf("%s: database URL %q: want target_session_attrs=read-write, so a node follows the promoted standby", s.Name, db)
		}
		if _, ok := argValue(s.Command, "jwt-secret"); ok {
			t.Errorf("%s: the JWT secret is on the command line (readable in ps); use CHATD_JWT_SECRET", s.Name)
		}
		if v := s.Environment["CHATD_JWT_SECRET"]; v == nil || *v != testJWTSecret {
			t.Errorf("%s: CHATD_JWT_SECRET is not taken from the environment", s.Name)
		}
		for _, dep := range []string{"postgres", "postgres-standby", "nats-1", "nats-2", "nats-3"} {
			if d, ok := s.DependsOn[dep]; !ok || d.Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: does not wait for %s to be healthy", s.Name, dep)
			}
		}
		if s.Build == nil || s.Build.Dockerfile != "deploy/docker/Dockerfile" || filepath.Clean(s.Build.Context) != mustAbs(t, root) {
			t.Errorf("%s: build %+v: want deploy/docker/Dockerfile with the repository root as context", s.Name, s.Build)
		}
		if _, ok := setting(s, "listen"); !ok {
			t.Errorf("%s: no listen address", s.Name)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// hostPath is the file a service mounts at target, resolved on the host.
func hostPath(t *testing.T, s types.ServiceConfig, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		if v.Type == types.VolumeTypeBind && v.Target == target {
			return v.Source
		}
	}
	t.Fatalf("%s mounts nothing at %s", s.Name, target)
	return ""
}

var (
	caddyUpstreams = regexp.MustCompile(`(?m)^\s*reverse_proxy\s+([^{\n]+)`)
	caddyHealthURI = regexp.MustCompile(`(?m)^\s*health_uri\s+(\S+)`)
	caddyInterval  = regexp.MustCompile(`(?m)^\s*health_interval\s+(\S+)`)
)

// The proxy spreads over every node, follows /readyz, and checks it more
// often than a node's --shutdown-delay, so a draining node gets no new
// sockets before it closes its old ones.
func TestComposeProxy(t *testing.T) {
	p := mustCompose(t)
	proxy, ok := p.Services["proxy"]
	if !ok {
		t.Fatal("no proxy service")
	}
	conf := mustRead(t, hostPath(t, proxy, "/etc/caddy/Caddyfile"))
	m := caddyUpstreams.FindStringSubmatch(conf)
	if m == nil {
		t.Fatal("Caddyfile: no reverse_proxy")
	}
	got := strings.Fields(m[1])
	sort.Strings(got)
	var want []string
	var delays []time.Duration
	for _, s := range servicesNamed(p, "chatd-") {
		listen, _ := setting(s, "listen")
		_, port, err := net.SplitHostPort(listen)
		if err != nil {
			t.Fatalf("%s: listen %q: %v", s.Name, listen, err)
		}
		want = append(want, net.JoinHostPort(s.Name, port))
		d, _ := setting(s, "shutdown-delay")
		delay, err := time.ParseDuration(d)
		if err != nil {
			t.Errorf("%s: --shutdown-delay %q: %v", s.Name, d, err)
		}
		delays = append(delays, delay)
	}
	if !slices.Equal(got, want) {
		t.Errorf("Caddyfile upstreams %v, want every node %v", got, want)
	}
	if h := caddyHealthURI.FindStringSubmatch(conf); h == nil || h[1] != "/readyz" {
		t.Errorf("Caddyfile: health_uri %v, want /readyz", h)
	}
	iv := caddyInterval.FindStringSubmatch(conf)
	if iv == nil {
		t.Fatal("Caddyfile: no health_interval")
	}
	interval, err := time.ParseDuration(iv[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range delays {
		if d <= interval {
			t.Errorf("--shutdown-delay %v is not above the proxy's health_interval %v", d, interval)
		}
	}
	if len(proxy.Ports) == 0 {
		t.Error("the proxy publishes no port")
	}
}

// promConfig is the part of prometheus.yml the test reads.
type promConfig struct {
	RuleFiles     []string `yaml:"rule_files"`
	ScrapeConfigs []struct {
		JobName       string `yaml:"job_name"`
		StaticConfigs []struct {
			Targets []string `yaml:"targets"`
		} `yaml:"static_configs"`
	} `yaml:"scrape_configs"`
}

// Prometheus scrapes every node (job chatd, as the alerts expect) and loads
// the alert rules; Grafana gets the datasource and the dashboard.
func TestComposeMonitoring(t *testing.T) {
	p := mustCompose(t)
	prom, ok := p.Services["prometheus"]
	if !ok {
		t.Fatal("no prometheus service")
	}
	dir := hostPath(t, prom, "/etc/prometheus")
	var cfg promConfig
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(dir, "prometheus.yml"))), &cfg); err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, sc := range cfg.ScrapeConfigs {
		if sc.JobName != "chatd" {
			continue
		}
		for _, st := range sc.StaticConfigs {
			targets = append(targets, st.Targets...)
		}
	}
	sort.Strings(targets)
	var want []string
	for _, s := range servicesNamed(p, "chatd-") {
		listen, _ := setting(s, "listen")
		_, port, _ := net.SplitHostPort(listen)
		want = append(want, net.JoinHostPort(s.Name, port))
	}
	if !slices.Equal(targets, want) {
		t.Errorf("job chatd scrapes %v, want every node %v", targets, want)
	}
	if !slices.Contains(cfg.RuleFiles, "alerts.yaml") {
		t.Errorf("rule_files %v: want alerts.yaml", cfg.RuleFiles)
	}
	for _, rf := range cfg.RuleFiles {
		mustRead(t, filepath.Join(dir, rf))
	}

	graf, ok := p.Services["grafana"]
	if !ok {
		t.Fatal("no grafana service")
	}
	prov := hostPath(t, graf, "/etc/grafana/provisioning")
	var ds struct {
		Datasources []struct{ UID, URL string } `yaml:"datasources"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(prov, "datasources/prometheus.yaml"))), &ds); err != nil {
		t.Fatal(err)
	}
	if len(ds.Datasources) != 1 || ds.Datasources[0].UID != "prometheus" || !strings.Contains(ds.Datasources[0].URL, "//prometheus:") {
		t.Errorf("datasources %+v: want uid prometheus at the prometheus service", ds.Datasources)
	}
	var dp struct {
		Providers []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal([]byte(mustRead(t, filepath.Join(prov, "dashboards/chatd.yaml"))), &dp); err != nil {
		t.Fatal(err)
	}
	if len(dp.Providers) != 1 {
		t.Fatalf("dashboard providers %+v: want one", dp.Providers)
	}
	dash := hostPath(t, graf, filepath.Join(dp.Providers[0].Options.Path, "chatd.json"))
	if want := mustAbs(t, "grafana/chatd.json"); dash != want {
		t.Errorf("grafana mounts %s as the dashboard, want %s", dash, want)
	}
	for _, uid := range dashboardDatasourceUIDs(t, mustRead(t, dash)) {
		if uid != "prometheus" {
			t.Errorf("the dashboard uses datasource uid %q; the provisioned one is prometheus", uid)
		}
	}
}

// PostgreSQL is a primary and a synchronous streaming standby: the
// primary's first-start script makes commits wait for the standby by the
// application_name the standby streams under; the standby copies the
// primary once it is healthy and clears the copied synchronous_standby_names,
// so that once promoted it does not wait for a standby of its own.
func TestComposePostgresSynchronousStandby(t *testing.T) {
	p := mustCompose(t)
	primary, ok := p.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	standby, ok := p.Services["postgres-standby"]
	if !ok {
		t.Fatal("no postgres-standby service")
	}
	repl, ok := p.Configs["postgres-replication"]
	if !ok {
		t.Fatal("no postgres-replication config")
	}
	for _, want := range []string{"host replication chatd", "synchronous_commit = 'on'", "synchronous_standby_names = 'standby'"} {
		if !strings.Contains(repl.Content, want) {
			t.Errorf("config postgres-replication %q: want %q in it", repl.Content, want)
		}
	}
	mounted := false
	for _, c := range primary.Configs {
		mounted = mounted || c.Source == "postgres-replication" && strings.HasPrefix(c.Target, "/docker-entrypoint-initdb.d/")
	}
	if !mounted {
		t.Errorf("postgres configs %+v: want postgres-replication in /docker-entrypoint-initdb.d", primary.Configs)
	}
	script := strings.Join(standby.Command, " ")
	for _, want := range []string{"pg_basebackup", " -R ", "host=postgres ", "application_name=standby", "-c synchronous_standby_names="} {
		if !strings.Contains(script, want) {
			t.Errorf("postgres-standby command %q: want %q in it", script, want)
		}
	}
	if d, ok := standby.DependsOn["postgres"]; !ok || d.Condition != types.ServiceConditionHealthy {
		t.Error("postgres-standby does not wait for the primary to be healthy before its base backup")
	}
	if len(standby.Volumes) != 1 || standby.Volumes[0].Source != "postgres-standby" {
		t.Errorf("postgres-standby volumes %+v: want a volume of its own", standby.Volumes)
	}
}
