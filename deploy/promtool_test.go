package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// deployTool is the path of a tool scripts/ensure-deploy-tools.sh installs
// into Go's bin directory (make check-deploy, which make test runs first,
// calls it). Without it the test fails and says how to get it, rather than
// skipping.
func deployTool(t *testing.T, name string) string {
	t.Helper()
	dir, err := exec.Command("go", "env", "GOBIN").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := strings.TrimSpace(string(dir))
	if bin == "" {
		gopath, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			t.Fatal(err)
		}
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin")
	}
	p := filepath.Join(bin, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found at %s: run scripts/ensure-deploy-tools.sh (make check-deploy does)", name, p)
	}
	return p
}

// promtool is the promtool scripts/ensure-deploy-tools.sh installs.
func promtool(t *testing.T) string {
	t.Helper()
	return deployTool(t, "promtool")
}

// grafanaVars replaces the dashboard's variables with what Grafana would put
// there, so PromQL can parse the expression.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$instance", ".*")

// Every dashboard query is valid PromQL: Prometheus's own parser (promtool
// test rules, one promql_expr_test per query) parses and evaluates each.
func TestDashboardPromQLParses(t *testing.T) {
	bin := promtool(t)
	queries := dashboardQueries(t, mustRead(t, dashboardPath))
	var where []string
	for w := range queries {
		where = append(where, w)
	}
	sort.Strings(where)
	type exprTest struct {
		Expr       string `yaml:"expr"`
		EvalTime   string `yaml:"eval_time"`
		ExpSamples []any  `yaml:"exp_samples"`
	}
	var tests []exprTest
	for _, w := range where {
		tests = append(tests, exprTest{Expr: grafanaVars.Replace(queries[w]), EvalTime: "1m", ExpSamples: []any{}})
	}
	file := map[string]any{
		"rule_files":          []string{},
		"evaluation_interval": "1m",
		"tests": []map[string]any{{
			"interval":         "1m",
			"input_series":     []any{},
			"promql_expr_test": tests,
		}},
	}
	b, err := yaml.Marshal(file)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard_test.yaml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "test", "rules", path).CombinedOutput(); err != nil {
		t.Errorf("promtool test rules on the dashboard's %d queries: %v\n%s", len(tests), err, out)
	}
}
