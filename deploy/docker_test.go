package deploy_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mattn/go-shellwords"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

const (
	dockerfilePath   = "docker/Dockerfile"
	dockerignorePath = "docker/Dockerfile.dockerignore"
	module           = "github.com/chatd/chatd"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd   string // upper case: FROM, COPY, RUN, ...
	args  string
	line  int
	stage int // index of the FROM it follows
}

// parseDockerfile splits a Dockerfile into instructions. It knows what this
// repository's Dockerfile uses: comments, blank lines, backslash
// continuations; no heredocs.
func parseDockerfile(text string) []instruction {
	var out []instruction
	var cur *instruction
	stage := -1
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(trimmed, "#") {
			continue // a comment inside a continued instruction
		}
		cont := strings.HasSuffix(trimmed, `\`)
		trimmed = strings.TrimSpace(strings.TrimSuffix(trimmed, `\`))
		if cur == nil {
			cmd, args, _ := strings.Cut(trimmed, " ")
			cmd = strings.ToUpper(cmd)
			if cmd == "FROM" {
				stage++
			}
			cur = &instruction{cmd: cmd, args: strings.TrimSpace(args), line: i + 1, stage: stage}
		} else {
			cur.args += " " + trimmed
		}
		if !cont {
			out = append(out, *cur)
			cur = nil
		}
	}
	return out
}

// copyArgs splits a COPY's arguments into its --flags, sources and
// destination.
func copyArgs(args string) (flags map[string]string, srcs []string, dst string, err error) {
	words, err := shellwords.Parse(args)
	if err != nil {
		return nil, nil, "", err
	}
	flags = map[string]string{}
	for len(words) > 0 && strings.HasPrefix(words[0], "--") {
		k, v, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
		flags[k] = v
		words = words[1:]
	}
	if len(words) < 2 {
		return nil, nil, "", fmt.Errorf("COPY %s: want sources and a destination", args)
	}
	return flags, words[:len(words)-1], words[len(words)-1], nil
}

// goBuild finds the Dockerfile's `go build` line: its environment
// assignments and the go command's arguments (from "build" on).
func goBuild(ins []instruction) (run instruction, env, args []string, err error) {
	var found []instruction
	for _, in := range ins {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		return run, nil, nil, fmt.Errorf("want exactly one RUN with go build, found %d", len(found))
	}
	run = found[0]
	words, err := shellwords.Parse(run.args)
	if err != nil {
		return run, nil, nil, err
	}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		env, words = append(env, words[0]), words[1:]
	}
	if len(words) < 2 || words[0] != "go" || words[1] != "build" {
		return run, nil, nil, fmt.Errorf("line %d: want [VAR=value ...] go build ..., got %q", run.line, run.args)
	}
	return run, env, words[1:], nil
}

// flagValue is the value of -name in go-style args (-name v or -name=v).
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if a == "-"+name && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "-"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// dockerIgnore is the matcher of the Dockerfile's own ignore file.
func dockerIgnore(path string) (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, err
	}
	return patternmatcher.New(patterns)
}

// dockerBuildDryRun runs the Dockerfile's own `go build` line with -n (plan
// the build, compile nothing) in a copy of the repository holding only what
// the ignore file lets into the build context: the package loads, every
// file it needs is in the context, and the flags are ones go build takes.
// A real -trimpath build would compile every dependency apart from the
// build cache `make build` fills, for no more certainty about the flags.
func dockerBuildDryRun(dockerfile string) error {
	text, err := os.ReadFile(dockerfile)
	if err != nil {
		return err
	}
	ins := parseDockerfile(string(text))
	run, env, args, err := goBuild(ins)
	if err != nil {
		return err
	}
	copiesAll := slices.ContainsFunc(ins, func(in instruction) bool {
		return in.cmd == "COPY" && in.stage == run.stage && in.line < run.line && strings.Fields(in.args)[0] == "."
	})
	if !copiesAll {
		return errors.New("the go build stage does not COPY . (the whole context) before building; this test assumes it does")
	}
	pm, err := dockerIgnore(strings.TrimSuffix(dockerfile, "Dockerfile") + "Dockerfile.dockerignore")
	if err != nil {
		return err
	}
	ctxDir, err := os.MkdirTemp("", "chatd-docker-context-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ctxDir)
	if err := copyContext(root, ctxDir, pm); err != nil {
		return fmt.Errorf("copy the build context: %w", err)
	}
	o := slices.Index(args, "-o")
	if o < 0 || o+1 >= len(args) {
		return fmt.Errorf("line %d: go build has no -o", run.line)
	}
	args = slices.Clone(args)
	args[o+1] = filepath.Join(ctxDir, "chatd")
	args = slices.Insert(args, 1, "-n")
	cmd := exec.Command("go", args...)
	cmd.Dir = ctxDir
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s (in the Dockerfile's build context): %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// copyContext copies the files of src the matcher does not exclude to dst.
func copyContext(src, dst string, pm *patternmatcher.PatternMatcher) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil || rel == "." {
			return err
		}
		excluded, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		switch {
		case excluded && d.IsDir() && !pm.Exclusions():
			return filepath.SkipDir
		case excluded:
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case !d.Type().IsRegular():
			return nil // sockets, symlinks: not part of a Go build
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

func TestParseDockerfile(t *testing.T) {
	got := parseDockerfile("# syntax=docker/dockerfile:1\nFROM a AS b\n\nRUN x \\\n  # note\n  y\ncopy . .\nFROM c\nUSER 1\n")
	want := []instruction{
		{cmd: "FROM", args: "a AS b", line: 2, stage: 0},
		{cmd: "RUN", args: "x y", line: 4, stage: 0},
		{cmd: "COPY", args: ". .", line: 7, stage: 0},
		{cmd: "FROM", args: "c", line: 8, stage: 1},
		{cmd: "USER", args: "1", line: 9, stage: 1},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

// Every COPY from the context names files that exist and that the ignore
// file lets in; every COPY from the build stage names a path a RUN of that
// stage makes.
func TestDockerfileCopiesWhatExists(t *testing.T) {
	ins := parseDockerfile(mustRead(t, dockerfilePath))
	pm, err := dockerIgnore(dockerignorePath)
	if err != nil {
		t.Fatal(err)
	}
	stageOf := map[string]int{}
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				stageOf[f[2]] = in.stage
			}
		}
	}
	copies := 0
	for _, in := range ins {
		if in.cmd != "COPY" && in.cmd != "ADD" {
			continue
		}
		copies++
		flags, srcs, _, err := copyArgs(in.args)
		if err != nil {
			t.Fatalf("line %d: %v", in.line, err)
		}
		if from, ok := flags["from"]; ok {
			stage, ok := stageOf[from]
			if !ok {
				t.Errorf("line %d: COPY --from=%s: no stage of that name", in.line, from)
				continue
			}
			for _, src := range srcs {
				if !slices.ContainsFunc(ins, func(r instruction) bool {
					return r.cmd == "RUN" && r.stage == stage && strings.Contains(r.args, src)
				}) {
					t.Errorf("line %d: COPY --from=%s %s: no RUN in that stage makes it", in.line, from, src)
				}
			}
			continue
		}
		for _, src := range srcs {
			matches, _ := filepath.Glob(filepath.Join(root, src))
			if len(matches) == 0 {
				t.Errorf("line %d: COPY %s: no such file in the context (the repository root)", in.line, src)
			}
			if src == "." {
				continue
			}
			if excluded, _ := pm.MatchesOrParentMatches(src); excluded {
				t.Errorf("line %d: COPY %s: %s leaves it out of the context", in.line, src, dockerignorePath)
			}
		}
	}
	if copies == 0 {
		t.Fatal("the Dockerfile copies nothing")
	}
}

var makeBuildChatd = regexp.MustCompile(`(?m)^\t\$\(GO\) build (.*)-o bin/chatd (\S+)\s*$`)

// The image's binary is `make build`'s bin/chatd, built static (no cgo),
// reproducible (-trimpath), from what the context holds; any -X it sets
// names a variable that exists.
func TestDockerfileBuildLine(t *testing.T) {
	_, env, args, err := goBuild(parseDockerfile(mustRead(t, dockerfilePath)))
	if err != nil {
		t.Fatal(err)
	}
	m := makeBuildChatd.FindStringSubmatch(mustRead(t, filepath.Join(root, "Makefile")))
	if m == nil {
		t.Fatal("Makefile: no `$(GO) build ... -o bin/chatd PKG` line in build")
	}
	if got, want := args[len(args)-1], m[2]; got != want {
		t.Errorf("the Dockerfile builds %s, make build builds %s", got, want)
	}
	if !slices.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("go build env %v: want CGO_ENABLED=0 (the runtime image has no libc)", env)
	}
	if !slices.Contains(args, "-trimpath") {
		t.Errorf("go build %v: want -trimpath", args)
	}
	if err := dockerBuildDryRun(dockerfilePath); err != nil {
		t.Error(err)
	}
	ldflags, _ := flagValue(args, "ldflags")
	words, err := shellwords.Parse(ldflags)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range words {
		if w != "-X" || i+1 >= len(words) {
			continue
		}
		sym, _, _ := strings.Cut(words[i+1], "=")
		pkg, name := sym[:strings.LastIndex(sym, ".")], sym[strings.LastIndex(sym, ".")+1:]
		if pkg == "main" {
			pkg = module + "/" + strings.TrimPrefix(args[len(args)-1], "./")
		}
		if !hasStringVar(t, pkg, name) {
			t.Errorf("-ldflags -X %s: %s has no package-level string variable %s", words[i+1], pkg, name)
		}
	}
}

// hasStringVar reports whether the Go package pkg (an import path of this
// module) declares a package-level variable name (what -X can set), in
// the files `go list` says it builds.
func hasStringVar(t *testing.T, pkg, name string) bool {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, pkg)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pkg, err)
	}
	f := strings.Fields(string(out))
	for _, file := range f[1:] {
		af, err := parser.ParseFile(token.NewFileSet(), filepath.Join(f[0], file), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				if slices.ContainsFunc(s.(*ast.ValueSpec).Names, func(n *ast.Ident) bool { return n.Name == name }) {
					return true
				}
			}
		}
	}
	return false
}

// The runtime stage: a non-root user, the entrypoint is the binary copied
// in, its CMD flags and ENV names exist, the port it listens on is exposed,
// the labels carry version and revision, and the health check is decided.
func TestDockerfileRuntimeStage(t *testing.T) {
	c := mustChatd(t)
	ins := parseDockerfile(mustRead(t, dockerfilePath))
	last := ins[len(ins)-1].stage
	var final []instruction
	for _, in := range ins {
		if in.stage == last {
			final = append(final, in)
		}
	}
	get := func(cmd string) []instruction {
		var out []instruction
		for _, in := range final {
			if in.cmd == cmd {
				out = append(out, in)
			}
		}
		return out
	}
	jsonArray := func(in instruction) []string {
		var a []string
		if err := json.Unmarshal([]byte(in.args), &a); err != nil {
			t.Fatalf("line %d: %s wants the JSON (exec) form: %v", in.line, in.cmd, err)
		}
		return a
	}

	users := get("USER")
	if len(users) == 0 {
		t.Error("the runtime stage sets no USER: it would run as root")
	}
	for _, u := range users {
		if name, _, _ := strings.Cut(u.args, ":"); name == "root" || name == "0" {
			t.Errorf("line %d: USER %s is root", u.line, u.args)
		}
	}

	var binDst string
	for _, in := range get("COPY") {
		_, srcs, dst, err := copyArgs(in.args)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(srcs, func(s string) bool { return filepath.Base(s) == "chatd" }) {
			binDst = dst
		}
	}
	eps := get("ENTRYPOINT")
	if len(eps) != 1 {
		t.Fatalf("want one ENTRYPOINT, got %d", len(eps))
	}
	if ep := jsonArray(eps[0]); len(ep) == 0 || ep[0] != binDst {
		t.Errorf("ENTRYPOINT %v: want the copied binary %s first", ep, binDst)
	} else {
		checkArgs(t, c, "ENTRYPOINT", ep[1:])
	}
	for _, in := range get("CMD") {
		checkArgs(t, c, "CMD", jsonArray(in))
	}

	var env string
	for _, in := range get("ENV") {
		env += in.args + " "
		checkEnvNames(t, c, fmt.Sprintf("line %d: ENV", in.line), in.args)
	}
	listen := regexp.MustCompile(`CHATD_LISTEN=(\S+)`).FindStringSubmatch(env)
	if listen == nil {
		t.Fatal("ENV sets no CHATD_LISTEN: chatd's default 127.0.0.1:8080 is unreachable from outside the container")
	}
	host, port, err := net.SplitHostPort(listen[1])
	if err != nil || (host != "0.0.0.0" && host != "" && host != "::") {
		t.Errorf("CHATD_LISTEN=%s: want every interface", listen[1])
	}
	if exp := get("EXPOSE"); len(exp) != 1 || exp[0].args != port {
		t.Errorf("EXPOSE %v: want %s", exp, port)
	}

	labels := ""
	for _, in := range get("LABEL") {
		labels += in.args
	}
	args := ""
	for _, in := range get("ARG") {
		args += in.args + " "
	}
	for _, l := range []struct{ label, arg string }{
		{"org.opencontainers.image.version", "VERSION"},
		{"org.opencontainers.image.revision", "REVISION"},
	} {
		if !strings.Contains(labels, l.label+`="${`+l.arg+`}"`) {
			t.Errorf("LABEL %s is not set from the build arg %s", l.label, l.arg)
		}
		if !regexp.MustCompile(`(^| )` + l.arg + `(=| |$)`).MatchString(args) {
			t.Errorf("the runtime stage declares no ARG %s", l.arg)
		}
	}
	if len(get("HEALTHCHECK")) != 1 {
		t.Error("want one HEALTHCHECK (NONE, with why, when the image has no probe of its own)")
	}
}
