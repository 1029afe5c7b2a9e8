package node

import (
	"fmt"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// BuildInfo is what the binary knows of its own build: the module version
// (a tag for `go install …@vX`, "(devel)" for a build in a checkout) and the
// VCS revision the go command stamps into a build in a git work tree.
type BuildInfo struct {
	Version   string
	Revision  string // "" when not built from a VCS checkout
	Time      string // the revision's commit time, RFC 3339
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string
}

// ReadBuildInfo reads the running binary's build information.
func ReadBuildInfo() BuildInfo {
	b := BuildInfo{Version: "unknown"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.GoVersion = bi.GoVersion
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Revision = s.Value
		case "vcs.time":
			b.Time = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// String is the one line `chatd --version` prints.
func (b BuildInfo) String() string {
	rev := b.Revision
	if rev == "" {
		rev = "unknown"
	}
	if b.Modified {
		rev += "-modified"
	}
	s := fmt.Sprintf("chatd %s revision %s", b.Version, rev)
	if b.Time != "" {
		s += " (" + b.Time + ")"
	}
	return s + " " + b.GoVersion
}

// registerBuildInfo exports chatd_build_info: always 1, the build in its
// labels, so a dashboard shows which version each node runs.
func (n *Node) registerBuildInfo() {
	b := ReadBuildInfo()
	rev := b.Revision
	if b.Modified {
		rev += "-modified"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "chatd_build_info",
		Help:        "Always 1; the labels say which build this node runs.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": rev, "goversion": b.GoVersion},
	})
	g.Set(1)
	n.reg.MustRegister(g)
}
