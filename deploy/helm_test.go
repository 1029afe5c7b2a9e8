package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/testtool"
)

// helmCommands returns the `helm install chatd deploy/helm/chatd` commands of
// docs/operations.md as written (continuation lines joined), each with the
// values file its comment block spells out when it reads `-f my-values.yaml`.
func helmCommands(t *testing.T) []helmCommand {
	t.Helper()
	lines := strings.Split(mustRead(t, "../docs/operations.md"), "\n")
	var cmds []helmCommand
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "helm install chatd deploy/helm/chatd") {
			continue
		}
		cmd := lines[i]
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd = strings.TrimSuffix(cmd, `\`) + " " + strings.TrimSpace(lines[i])
		}
		var values []string
		if strings.Contains(cmd, "-f my-values.yaml") {
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "# ") {
				i++
				values = append(values, strings.TrimPrefix(lines[i], "# "))
			}
		}
		if before, _, ok := strings.Cut(cmd, "#"); ok {
			cmd = strings.TrimSpace(before)
		}
		cmds = append(cmds, helmCommand{line: cmd, values: strings.Join(values, "\n")})
	}
	if len(cmds) < 2 {
		t.Fatalf("docs/operations.md: found %d `helm install chatd deploy/helm/chatd` commands, want the --set one and the values-file one", len(cmds))
	}
	return cmds
}

type helmCommand struct{ line, values string }

// Every helm command docs/operations.md shows renders with the real helm
// (helm template takes install's arguments), and what it renders is what the
// docs promise: every NATS server in CHATD_NATS_URL, the image `docker build`
// tags, and an Ingress when the values ask for one.
func TestHelmCommandsInDocsRender(t *testing.T) {
	helm := testtool.Path(t, "helm")
	for _, c := range helmCommands(t) {
		t.Run(c.line, func(t *testing.T) {
			dir := t.TempDir()
			if c.values != "" {
				if err := os.WriteFile(filepath.Join(dir, "my-values.yaml"), []byte(c.values), 0o600); err != nil {
					t.Fatal(err)
				}
				// The values file names only what it adds; the NATS
				// cluster and the secret come from the command above it.
				c.line += " --set 'nats.urls={nats://nats-0.nats:4222}' --set secrets.existingSecret=chatd-secrets"
			}
			line := strings.Replace(c.line, "helm install", "helm template", 1)
			line = strings.Replace(line, "deploy/helm/chatd", filepath.Join(repoRoot(t), "deploy/helm/chatd"), 1)
			cmd := exec.Command("bash", "-c", line)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(helm)+":"+os.Getenv("PATH"))
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			got := string(out)
			if !strings.Contains(got, "image: \"chatd:0.1.0\"") && !strings.Contains(got, "image: chatd:0.1.0") {
				t.Errorf("the rendered image is not chatd:0.1.0, the tag docs/operations.md's docker build gives")
			}
			if c.values == "" && !strings.Contains(got, `"nats://nats-0.nats:4222,nats://nats-1.nats:4222,nats://nats-2.nats:4222"`) {
				t.Errorf("CHATD_NATS_URL does not list the three servers the command names:\n%s", grepLines(got, "nats://"))
			}
			if c.values != "" && !strings.Contains(got, "kind: Ingress") {
				t.Errorf("the values ask for an Ingress and none was rendered")
			}
		})
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
