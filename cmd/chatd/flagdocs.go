package main

import (
	"fmt"
	"strings"
)

// markdownFlags is the flag table README.md and docs/architecture.md carry
// between their flags:begin and flags:end markers: one table per group,
// each flag's long doc as its meaning.
func markdownFlags(specs []flagSpec) string {
	var b strings.Builder
	for g := range groupCount {
		first := true
		for _, s := range specs {
			if s.group != g {
				continue
			}
			if first {
				fmt.Fprintf(&b, "\n**%s**\n\n| flag | env | default | meaning |\n|---|---|---|---|\n", g)
				first = false
			}
			env, meaning := "", s.long
			if s.env != "" {
				env = "`" + s.env + "`"
			}
			if meaning == "" {
				meaning = s.short
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", s.name, env, s.markdownDefault(), strings.ReplaceAll(meaning, "|", `\|`))
		}
	}
	return b.String()
}

// markdownDefault is the default for the tables: the value as typed, and
// what it means when that is not plain (`1073741824` (1 GiB)).
func (s flagSpec) markdownDefault() string {
	raw, human := s.rawDefault(), s.defaultText()
	switch {
	case raw == "" && s.unset != "":
		return "empty: " + s.unset
	case raw == "":
		return "empty"
	case raw == human:
		return "`" + raw + "`"
	}
	if _, ok := s.def.(bool); ok {
		return "`" + raw + "`"
	}
	return "`" + raw + "` (" + human + ")"
}
