package web_test

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/chatd/chatd/web"
)

// importRE finds the module specifiers of static imports and re-exports
// (`import … from '…'`, `export … from '…'`, `import '…'`).
var importRE = regexp.MustCompile(`(?m)^\s*(?:import\s*['"]([^'"]+)['"]|(?:import|export)\b[^;'"]*?\bfrom\s*['"]([^'"]+)['"])`)

// Every module a served file imports must be served too: the embed
// patterns name file types explicitly, so a new kind of file (or a
// subfolder) in the SDK or the demo would otherwise be missing at run time
// and found only by a browser.
func TestEveryImportIsEmbedded(t *testing.T) {
	trees := map[string]fs.FS{"/": web.Demo(), "/sdk/": web.SDK()}
	served := func(url string) bool {
		for prefix, fsys := range trees {
			if name, ok := strings.CutPrefix(url, prefix); ok && name != "" && !strings.Contains(name, "/../") {
				if _, err := fs.Stat(fsys, name); err == nil {
					return true
				}
			}
		}
		return false
	}
	n := 0
	for prefix, fsys := range trees {
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
				return err
			}
			src, err := fs.ReadFile(fsys, p)
			if err != nil {
				return err
			}
			for _, m := range importRE.FindAllStringSubmatch(string(src), -1) {
				spec := m[1] + m[2]
				if !strings.HasPrefix(spec, ".") && !strings.HasPrefix(spec, "/") {
					t.Errorf("%s%s imports %q: a bare specifier, which a browser cannot load without a build step", prefix, p, spec)
					continue
				}
				url := spec
				if strings.HasPrefix(spec, ".") {
					url = path.Join(prefix, path.Dir(p), spec)
				}
				n++
				if !served(url) {
					t.Errorf("%s%s imports %q (%s), which is not embedded", prefix, p, spec, url)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n == 0 {
		t.Fatal("found no imports at all: the pattern or the files are wrong")
	}
}

func TestEntryPointsExist(t *testing.T) {
	for _, tt := range []struct {
		name string
		fsys fs.FS
		file string
	}{
		{"demo page", web.Demo(), "index.html"},
		{"demo app", web.Demo(), "app.js"},
		{"demo style", web.Demo(), "style.css"},
		{"SDK", web.SDK(), "index.js"},
	} {
		if _, err := fs.Stat(tt.fsys, tt.file); err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}
