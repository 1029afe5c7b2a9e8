package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/testtool"
	"go.yaml.in/yaml/v3"
)

// promtool is the promtool scripts/ensure-deploy-tools.sh installs.
func promtool(t *testing.T) string { return testtool.Path(t, "promtool") }

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
