package deploy_test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
)

const (
	chartDir     = "helm/chatd"
	unitPath     = "systemd/chatd@.service"
	unitEnvPath  = "systemd/chatd.env.example"
	chartTplGlob = "helm/chatd/templates/*.yaml"
)

// quotedFlag is a chatd flag as the chart writes one: a quoted "--name"
// list item (the chart quotes every argument it passes).
var quotedFlag = regexp.MustCompile(`"(--[a-z0-9][a-z0-9-]*)"`)

// The chart passes only flags and variables chatd has, in its templates
// and in every values file it is rendered with.
func TestHelmChartFlagsExist(t *testing.T) {
	c := mustChatd(t)
	files, err := filepath.Glob(chartTplGlob)
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates in %s: %v", chartTplGlob, err)
	}
	more, _ := filepath.Glob(filepath.Join(chartDir, "ci", "*.yaml"))
	files = append(files, filepath.Join(chartDir, "values.yaml"))
	files = append(files, more...)
	flags := 0
	for _, f := range files {
		text := mustRead(t, f)
		for _, m := range quotedFlag.FindAllStringSubmatch(text, -1) {
			flags++
			checkArgs(t, c, f, []string{m[1]})
		}
		checkEnvNames(t, c, f, text)
	}
	if flags == 0 {
		t.Fatal("the chart passes no flags; this test reads quoted \"--flag\" items")
	}
}

// The StatefulSet takes each node id from its pod name, probes /readyz and
// /healthz, and reads the secrets from a Secret.
func TestHelmStatefulSetEssentials(t *testing.T) {
	sts := mustRead(t, filepath.Join(chartDir, "templates/statefulset.yaml"))
	for _, want := range []string{
		"kind: StatefulSet",
		"- name: CHATD_NODE_ID\n              valueFrom:\n                fieldRef:\n                  fieldPath: metadata.name",
		"readinessProbe:\n            httpGet: {path: /readyz, port: http}",
		"livenessProbe:\n            httpGet: {path: /healthz, port: http}",
		"- name: CHATD_JWT_SECRET\n              valueFrom:\n                secretKeyRef:",
		"- name: CHATD_DATABASE_URL\n              valueFrom:\n                secretKeyRef:",
		"terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}",
	} {
		if !strings.Contains(sts, want) {
			t.Errorf("statefulset.yaml lacks:\n%s", want)
		}
	}
	for _, f := range []string{"pdb.yaml", "services.yaml", "servicemonitor.yaml", "secret.yaml"} {
		mustRead(t, filepath.Join(chartDir, "templates", f))
	}
}

// unitDirectives reads a unit file's Key=Value lines, by key, in order.
func unitDirectives(text string) map[string][]string {
	out := map[string][]string{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok {
			out[strings.TrimSpace(k)] = append(out[strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return out
}

// The unit runs chatd with its instance name as the node id, only flags
// and variables chatd has, hardened, settings from the instance's env file.
func TestSystemdUnit(t *testing.T) {
	c := mustChatd(t)
	d := unitDirectives(mustRead(t, unitPath))
	exec := d["ExecStart"]
	if len(exec) != 1 {
		t.Fatalf("ExecStart %v: want one", exec)
	}
	args, err := shellwords.Parse(strings.TrimLeft(exec[0], "-@:+!"))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(args[0]) != "chatd" || !filepath.IsAbs(args[0]) {
		t.Errorf("ExecStart runs %s: want an absolute path to chatd", args[0])
	}
	checkArgs(t, c, "ExecStart", args[1:])
	if id, _ := argValue(args, "node-id"); id != "%i" {
		t.Errorf("ExecStart --node-id %q, want %%i (the instance name)", id)
	}
	for _, e := range d["Environment"] {
		checkEnvNames(t, c, "Environment="+e, e)
	}
	if got := d["EnvironmentFile"]; !slices.Equal(got, []string{"/etc/chatd/%i.env"}) {
		t.Errorf("EnvironmentFile %v, want /etc/chatd/%%i.env", got)
	}
	env := mustRead(t, unitEnvPath)
	checkEnvNames(t, c, unitEnvPath, env)
	if strings.Contains(env, "\nCHATD_NODE_ID=") {
		t.Errorf("%s sets CHATD_NODE_ID; the instance name is the node id", unitEnvPath)
	}
	for k, want := range map[string]string{
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
		"PrivateTmp": "yes", "DynamicUser": "yes", "StateDirectory": "chatd/%i",
		"CapabilityBoundingSet": "", "KillSignal": "SIGTERM",
	} {
		if got := d[k]; len(got) != 1 || got[0] != want {
			t.Errorf("%s=%v, want %q", k, got, want)
		}
	}
}

// The single-machine unit runs chatd in embedded mode (no database or NATS
// URL anywhere), over TLS from credentials, and shares its user with the
// backup unit, which reaches PostgreSQL's private socket as that user.
func TestSystemdSingleMachineUnits(t *testing.T) {
	c := mustChatd(t)
	d := unitDirectives(mustRead(t, "systemd/chatd.service"))
	args, err := shellwords.Parse(d["ExecStart"][0])
	if err != nil {
		t.Fatal(err)
	}
	checkArgs(t, c, "chatd.service ExecStart", args[1:])
	for _, e := range d["Environment"] {
		checkEnvNames(t, c, "chatd.service Environment="+e, e)
	}
	env := mustRead(t, "systemd/chatd-single.env.example")
	checkEnvNames(t, c, "chatd-single.env.example", env)
	for _, embeddedOff := range []string{"CHATD_DATABASE_URL=", "CHATD_NATS_URL="} {
		if strings.Contains(env, "\n"+embeddedOff) || slices.ContainsFunc(d["Environment"], func(e string) bool { return strings.HasPrefix(e, embeddedOff) }) {
			t.Errorf("the single-machine unit sets %s: that is cluster mode", embeddedOff)
		}
	}
	if !slices.Contains(d["Environment"], "CHATD_TLS_CERT=%d/tls.crt") || !slices.Contains(d["Environment"], "CHATD_TLS_KEY=%d/tls.key") {
		t.Errorf("chatd.service does not serve TLS from its credentials: Environment=%v", d["Environment"])
	}
	b := unitDirectives(mustRead(t, "systemd/chatd-backup.service"))
	if d["User"][0] != "chatd" || b["User"][0] != "chatd" || b["DynamicUser"][0] != "yes" {
		t.Errorf("chatd.service User=%v and chatd-backup.service User=%v DynamicUser=%v: want one dynamic user chatd", d["User"], b["User"], b["DynamicUser"])
	}
	if !strings.Contains(b["ExecStart"][0], "backup.sh --data-dir %S/chatd ") {
		t.Errorf("chatd-backup.service ExecStart=%q does not dump chatd.service's data dir", b["ExecStart"][0])
	}
	timer := unitDirectives(mustRead(t, "systemd/chatd-backup.timer"))
	if len(timer["OnCalendar"]) != 1 || (timer["Persistent"][0] != "yes" && timer["Persistent"][0] != "true") {
		t.Errorf("chatd-backup.timer: OnCalendar=%v Persistent=%v, want a daily calendar that catches up", timer["OnCalendar"], timer["Persistent"])
	}
}
