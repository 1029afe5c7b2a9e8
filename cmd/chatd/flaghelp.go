package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// group is a heading of `chatd --help` and of the docs' flag tables; the
// flags are listed group by group, in this order.
type group int

const (
	groupToken group = iota // `chatd token`'s own flags
	groupGeneral
	groupListening
	groupStorage
	groupNATS
	groupIdentity
	groupLimits
	groupDelivery
	groupWebhooks
	groupCluster
	groupObservability
	groupCount
)

func (g group) String() string {
	switch g {
	case groupGeneral:
		return "General"
	case groupListening:
		return "Listening"
	case groupStorage:
		return "Storage"
	case groupNATS:
		return "NATS"
	case groupIdentity:
		return "Identity"
	case groupLimits:
		return "Limits"
	case groupDelivery:
		return "Delivery"
	case groupWebhooks:
		return "Webhooks"
	case groupCluster:
		return "Cluster"
	case groupObservability:
		return "Observability"
	case groupToken:
		return "Token"
	}
	return "group " + strconv.Itoa(int(g))
}

// doc is what a flag's readers are told, kept beside its registration:
// --help prints short (one line, plain words); the tables in README.md and
// docs/architecture.md print long (Markdown, the whole story; short when
// empty). unset, when set, is what the flag's zero or empty default means
// ("keep forever"), shown in place of the bare value. negativeMeans is set
// for a flag whose long text gives a negative number a meaning; any other
// flag's negative count, size or duration is refused (checkNotNegative).
type doc struct {
	group         group
	short         string
	long          string
	unset         string
	negativeMeans bool
}

// flagSpec is one declared flag: its name, environment variable ("" for
// none), built-in default (before the environment) and doc.
type flagSpec struct {
	name string
	env  string
	def  any
	doc
}

// defaultText is the default in human units: 1 GiB, 90 days, 10s, off,
// or the doc's unset text for a zero default.
func (s flagSpec) defaultText() string {
	if s.unset != "" && reflect.ValueOf(s.def).IsZero() {
		return s.unset
	}
	switch v := s.def.(type) {
	case bool:
		if v {
			return "on"
		}
		return "off"
	case int:
		return s.number(int64(v))
	case int64:
		return s.number(v)
	case time.Duration:
		return humanDuration(v)
	}
	if raw := s.rawDefault(); raw != "" {
		return raw
	}
	return "none"
}

// number is n in binary units for a flag named *-bytes, so that a reader
// sees 1 GiB rather than 1073741824.
func (s flagSpec) number(n int64) string {
	if !strings.HasSuffix(s.name, "-bytes") {
		return strconv.FormatInt(n, 10)
	}
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// rawDefault is the default as one would type it on the command line.
func (s flagSpec) rawDefault() string {
	switch v := s.def.(type) {
	case []string:
		return strings.Join(v, ",")
	case time.Duration:
		return shortDuration(v)
	}
	return fmt.Sprint(s.def)
}

// humanDuration is d in days when it is whole days, else as shortDuration.
func humanDuration(d time.Duration) string {
	const day = 24 * time.Hour
	switch {
	case d == day:
		return "1 day"
	case d > 0 && d%day == 0:
		return fmt.Sprintf("%d days", d/day)
	}
	return shortDuration(d)
}

// shortDuration is d's String without its zero tail: 26h, not 26h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// printFlags writes fs's flags group by group, one line each: the flag,
// its environment variable ("-" for none), its default and the short help,
// in columns aligned within the group. The detail is left to the docs'
// tables, so each line fits 100 columns.
func printFlags(w io.Writer, fs *flag.FlagSet, specs []flagSpec) {
	for g := range groupCount {
		var rows [][4]string
		for _, s := range specs {
			if s.group == g && fs.Lookup(s.name) != nil {
				env := s.env
				if env == "" {
					env = "-"
				}
				rows = append(rows, [4]string{"--" + s.name, env, s.defaultText(), s.short})
			}
		}
		if len(rows) == 0 {
			continue
		}
		var width [3]int
		for _, r := range rows {
			for i := range width {
				width[i] = max(width[i], len(r[i]))
			}
		}
		fmt.Fprintf(w, "\n%s:\n", g)
		for _, r := range rows {
			line := fmt.Sprintf("  %-*s  %-*s  %-*s  %s", width[0], r[0], width[1], r[1], width[2], r[2], r[3])
			fmt.Fprintln(w, strings.TrimRight(line, " "))
		}
	}
	printUndeclared(w, fs, specs)
}

// printUndeclared lists, under "Other", any flag put on fs directly rather
// than declared with a doc, so it is still shown (and the help tests, which
// want every flag in a named group, fail until it is declared).
func printUndeclared(w io.Writer, fs *flag.FlagSet, specs []flagSpec) {
	declared := map[string]bool{}
	for _, s := range specs {
		declared[s.name] = true
	}
	heading := "\nOther:\n"
	fs.VisitAll(func(fl *flag.Flag) {
		if !declared[fl.Name] {
			fmt.Fprintf(w, "%s  --%s  %s\n", heading, fl.Name, fl.Usage)
			heading = ""
		}
	})
}
