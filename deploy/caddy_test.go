package deploy_test

import (
	"debug/buildinfo"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/chatd/chatd/internal/testtool"
)

// caddyImage is the minor version in the proxy's image tag (caddy:2.10-alpine).
var caddyImage = regexp.MustCompile(`^caddy:(\d+\.\d+)`)

// Caddy itself accepts the compose proxy's Caddyfile: `caddy validate`
// adapts and provisions it, with the Caddy the image runs (same minor
// version), built by scripts/ensure-deploy-tools.sh. A regexp once passed a
// file Caddy refused.
func TestCaddyfileValidates(t *testing.T) {
	bin := testtool.Path(t, "caddy")
	proxy, ok := mustCompose(t).Services["proxy"]
	if !ok {
		t.Fatal("no proxy service")
	}
	m := caddyImage.FindStringSubmatch(proxy.Image)
	if m == nil {
		t.Fatalf("proxy image %q: want caddy:<major>.<minor>…", proxy.Image)
	}
	// `caddy version` says "unknown" when built with go install, so read
	// the module version the binary was built from.
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	if v := info.Main.Version; !strings.HasPrefix(v, "v"+m[1]+".") {
		t.Fatalf("%s is %s, the proxy runs %s: the check would be against another Caddy (set CADDY_VERSION in scripts/ensure-deploy-tools.sh)", bin, v, proxy.Image)
	}
	conf := hostPath(t, proxy, "/etc/caddy/Caddyfile")
	if out, err := exec.Command(bin, "validate", "--adapter", "caddyfile", "--config", conf).CombinedOutput(); err != nil {
		t.Errorf("caddy validate %s: %v\n%s", conf, err, out)
	}
}
