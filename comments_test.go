package chatd_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Comments say why once and resolve inside the repository: a reader must be
// able to open whatever a comment cites. Benchmark passes live in
// docs/benchmarks-log.md, under headings a comment may quote exactly;
// BENCHMARKS.md holds only the current figures, so a pass cited there does
// not resolve, and neither do issue numbers, DESIGN.md (the design is
// docs/architecture.md) or a "STYLE:" tag (say the rule instead).
var (
	passRE      = regexp.MustCompile(`(?i)\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|thirteenth|fourteenth|fifteenth|sixteenth|seventeenth|eighteenth|nineteenth|twentieth|\d+(st|nd|rd|th)) pass\b`)
	issueRE     = regexp.MustCompile(`(?i)\bissue \d+`)
	designRE    = regexp.MustCompile(`\bDESIGN\.md\b`)
	styleRE     = regexp.MustCompile(`\bSTYLE:`)
	citedTestRE = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz|Example)[A-Z]\w*`)
	// A quoted heading right after the file it is in: docs/x.md, "Heading".
	headingRE = regexp.MustCompile(`((?:docs/)?[\w-]+\.md)[,:]?\s*\(?"([^"]+)"`)
)

func TestCommentsResolveInTheRepository(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	declared := map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		if path == "comments_test.go" {
			return nil // states the rules, so it names what it forbids
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, f)
		for _, decl := range f.Decls {
			if fn, ok := decl.(*ast.FuncDecl); ok {
				declared[fn.Name.Name] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	headings := map[string]map[string]bool{}
	for _, f := range files {
		for _, cg := range f.Comments {
			text := proseOf(cg)
			where := fset.Position(cg.Pos())
			for _, problem := range commentProblems(t, text, headings, declared) {
				t.Errorf("%s: %s: %q", where, problem, text)
			}
		}
	}
}

// proseOf is a comment's text on one line, without its code blocks (lines
// indented in the doc comment), whose names are examples, not citations.
func proseOf(cg *ast.CommentGroup) string {
	var prose []string
	for _, line := range strings.Split(cg.Text(), "\n") {
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, "    ") {
			prose = append(prose, line)
		}
	}
	return strings.Join(strings.Fields(strings.Join(prose, " ")), " ")
}

// commentProblems lists what in one comment's text does not resolve. A
// quoted heading of a markdown file is checked against that file and then
// set aside, so a heading that names a pass may be cited exactly.
func commentProblems(t *testing.T, text string, headings map[string]map[string]bool, declared map[string]bool) []string {
	var problems []string
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		file, heading := m[1], m[2]
		switch {
		case file == "BENCHMARKS.md" && passRE.MatchString(heading):
			problems = append(problems, "cites a benchmark pass in BENCHMARKS.md (the passes are docs/benchmarks-log.md's headings)")
		case !hasHeading(t, file, heading, headings):
			problems = append(problems, file+" has no heading "+`"`+heading+`"`)
		}
		text = strings.Replace(text, m[0], file, 1)
	}
	switch {
	case strings.Contains(text, "BENCHMARKS.md") && passRE.MatchString(text):
		problems = append(problems, "cites a benchmark pass in BENCHMARKS.md (the passes are docs/benchmarks-log.md's headings)")
	case passRE.MatchString(text):
		problems = append(problems, "cites a benchmark pass without its docs/benchmarks-log.md heading")
	}
	if issueRE.MatchString(text) {
		problems = append(problems, "cites an issue number (say the reason instead)")
	}
	if designRE.MatchString(text) {
		problems = append(problems, "names DESIGN.md (the design is docs/architecture.md)")
	}
	if styleRE.MatchString(text) {
		problems = append(problems, `names "STYLE:" (state the rule itself)`)
	}
	for _, name := range citedTestRE.FindAllString(text, -1) {
		if !declared[name] {
			problems = append(problems, "names "+name+", which no Go file declares")
		}
	}
	return problems
}

// boldRE finds a bold label, which names a step or item as a heading does.
var boldRE = regexp.MustCompile(`\*\*([^*]+?)\.?\*\*`)

// hasHeading reports whether the markdown file (a path from the repository's
// root, or a name under docs/) has the heading, or a bold label, that a
// reader searching for the cited text finds: one that begins with it (a
// section's number "4. " aside), or, for "Name (tag)", one that begins with
// Name and ends with (tag).
func hasHeading(t *testing.T, file, heading string, cache map[string]map[string]bool) bool {
	t.Helper()
	if _, ok := cache[file]; !ok {
		cache[file] = map[string]bool{}
		data, err := os.ReadFile(file)
		if err != nil && !strings.Contains(file, "/") {
			data, err = os.ReadFile(filepath.Join("docs", file))
		}
		if err != nil {
			return false
		}
		for _, line := range strings.Split(string(data), "\n") {
			for _, m := range boldRE.FindAllStringSubmatch(line, -1) {
				cache[file][m[1]] = true
			}
			if !strings.HasPrefix(line, "#") {
				continue
			}
			h := strings.TrimSpace(strings.TrimLeft(line, "#"))
			if i := strings.Index(h, ". "); i > 0 && strings.Trim(h[:i], "0123456789") == "" {
				h = h[i+2:]
			}
			cache[file][h] = true
		}
	}
	name, tag := heading, ""
	if i := strings.LastIndex(heading, " ("); i > 0 && strings.HasSuffix(heading, ")") {
		name, tag = heading[:i], heading[i:]
	}
	for h := range cache[file] {
		if strings.HasPrefix(h, heading) || (tag != "" && strings.HasPrefix(h, name) && strings.HasSuffix(h, tag)) {
			return true
		}
	}
	return false
}
