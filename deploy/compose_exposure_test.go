package deploy_test

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/cli"
)

// envValue is the value of the variable name in a list of name=value.
func envValue(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// shown is a service's environment value for a message: quoted, or unset.
func shown(v *string) string {
	if v == nil {
		return "unset"
	}
	return strconv.Quote(*v)
}

// Every published port is on loopback: Prometheus and Grafana have no
// authentication worth the name on a shared network, and the proxy is a
// local cluster's entry point unless the operator publishes it.
func TestComposePublishesOnLoopbackOnly(t *testing.T) {
	p := mustCompose(t)
	published := 0
	for name, s := range p.Services {
		for _, port := range s.Ports {
			published++
			if port.HostIP != "127.0.0.1" {
				t.Errorf("%s publishes %s on %q, want 127.0.0.1", name, port.Published, port.HostIP)
			}
		}
	}
	if published == 0 {
		t.Fatal("no service publishes a port")
	}
}

// Grafana has no anonymous access and its admin password comes from the
// env file, not Grafana's admin/admin.
func TestComposeGrafanaNeedsALogin(t *testing.T) {
	g, ok := mustCompose(t).Services["grafana"]
	if !ok {
		t.Fatal("no grafana service")
	}
	if v := g.Environment["GF_AUTH_ANONYMOUS_ENABLED"]; v == nil || *v != "false" {
		t.Errorf("GF_AUTH_ANONYMOUS_ENABLED %s, want \"false\"", shown(v))
	}
	want := envValue(composeSecrets(), "GRAFANA_ADMIN_PASSWORD")
	if v := g.Environment["GF_SECURITY_ADMIN_PASSWORD"]; v == nil || *v != want {
		t.Errorf("GF_SECURITY_ADMIN_PASSWORD %s, want GRAFANA_ADMIN_PASSWORD from the env file", shown(v))
	}
}

// PostgreSQL's password comes from the env file, and every node's database
// URL carries that same password.
func TestComposeDatabasePasswordFromTheEnvFile(t *testing.T) {
	p := mustCompose(t)
	want := envValue(composeSecrets(), "POSTGRES_PASSWORD")
	pg, ok := p.Services["postgres"]
	if !ok {
		t.Fatal("no postgres service")
	}
	if v := pg.Environment["POSTGRES_PASSWORD"]; v == nil || *v != want {
		t.Errorf("postgres: POSTGRES_PASSWORD %s, want POSTGRES_PASSWORD from the env file", shown(v))
	}
	for _, s := range servicesNamed(p, "chatd-") {
		db, _ := setting(s, "database-url")
		u, err := url.Parse(db)
		if err != nil {
			t.Fatalf("%s: database URL: %v", s.Name, err)
		}
		if pw, _ := u.User.Password(); pw != want {
			t.Errorf("%s: database URL password %q, want POSTGRES_PASSWORD from the env file", s.Name, pw)
		}
	}
}

// composeVar is a ${NAME...} reference in compose.yaml.
var composeVar = regexp.MustCompile(`\$\{([A-Z][A-Z0-9_]*)`)

// .env.example lists every variable compose.yaml reads (so an operator who
// copies it has nothing left to discover), and the real .env, which holds
// the secrets, is never committed.
func TestComposeEnvExample(t *testing.T) {
	example := mustRead(t, "compose/.env.example")
	seen := map[string]bool{}
	for _, m := range composeVar.FindAllStringSubmatch(mustRead(t, composePath), -1) {
		name := m[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if !regexp.MustCompile(`(?m)^#?\s*` + name + `=`).MatchString(example) {
			t.Errorf("compose.yaml reads %s; .env.example does not list it", name)
		}
	}
	for _, kv := range composeSecrets() {
		name, _, _ := strings.Cut(kv, "=")
		if !seen[name] {
			t.Errorf("compose.yaml does not read %s", name)
		}
	}
	// Filled in as the comment in .env.example says, it is all compose needs.
	var filled []string
	for _, line := range strings.Split(example, "\n") {
		if name, v, ok := strings.Cut(line, "="); ok && v == "" && !strings.HasPrefix(name, "#") {
			line += envValue(composeSecrets(), name)
		}
		filled = append(filled, line)
	}
	envFile := filepath.Join(t.TempDir(), ".env")
	if err := os.WriteFile(envFile, []byte(strings.Join(filled, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := cli.NewProjectOptions([]string{composePath},
		cli.WithName("chatd"), cli.WithEnvFiles(envFile), cli.WithDotEnv, cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := opts.LoadProject(ctx); err != nil {
		t.Errorf("load with .env.example filled in: %v", err)
	}
	if err := exec.Command("git", "check-ignore", "-q", "compose/.env").Run(); err != nil {
		t.Errorf("deploy/compose/.env is not ignored by git (%v): it holds the secrets", err)
	}
}
