package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// envFlags registers flags whose defaults come from environment variables,
// so every setting is a flag with an env fallback and `--help` shows both.
// An env value that does not parse is an error, not a silent default.
type envFlags struct {
	fs   *flag.FlagSet
	errs []error
	// envOf names each flag's environment variable, so a config file
	// (configfile.go) knows which settings the environment already gave.
	envOf map[string]string
	// specs are every declared flag in declaration order, also those fs
	// leaves out (see only): --help, the docs' tables and the config file
	// read them.
	specs []flagSpec
	// only, when not nil, names the flags fs takes: `chatd token` declares
	// every setting (so its config file may be the server's) but takes only
	// the few that decide the secret. A flag left out keeps its default.
	only map[string]bool
}

// declare records a flag and reports whether fs takes it.
func (e *envFlags) declare(name, env string, def any, d doc) bool {
	if e.envOf == nil {
		e.envOf = map[string]string{}
	}
	e.envOf[name] = env
	e.specs = append(e.specs, flagSpec{name: name, env: env, def: def, doc: d})
	return e.only == nil || e.only[name]
}

// declared reports whether name is any flag declared, taken by fs or not.
func (e *envFlags) declared(name string) bool {
	_, ok := e.envOf[name]
	return ok
}

// defOf is the built-in default of the declared flag name (nil for none).
func (e *envFlags) defOf(name string) any {
	for _, s := range e.specs {
		if s.name == name {
			return s.def
		}
	}
	return nil
}

// env is the environment variable's value; a flag without one ("") and
// an empty value both count as unset.
func (e *envFlags) env(name string) (string, bool) {
	if name == "" {
		return "", false
	}
	v, ok := os.LookupEnv(name)
	return v, ok && v != ""
}

func (e *envFlags) String(p *string, name, env, def string, d doc) {
	if !e.declare(name, env, def, d) {
		*p = def
		return
	}
	if v, ok := e.env(env); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, d.short)
}

func (e *envFlags) Int(p *int, name, env string, def int, d doc) {
	if !e.declare(name, env, def, d) {
		*p = def
		return
	}
	if v, ok := e.env(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want %s", env, v, wantText(def)))
		} else {
			def = n
		}
	}
	e.fs.IntVar(p, name, def, d.short)
}

func (e *envFlags) Int64(p *int64, name, env string, def int64, d doc) {
	if !e.declare(name, env, def, d) {
		*p = def
		return
	}
	if v, ok := e.env(env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want %s", env, v, wantText(def)))
		} else {
			def = n
		}
	}
	e.fs.Int64Var(p, name, def, d.short)
}

func (e *envFlags) Bool(p *bool, name, env string, def bool, d doc) {
	if !e.declare(name, env, def, d) {
		*p = def
		return
	}
	if v, ok := e.env(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want %s", env, v, wantText(def)))
		} else {
			def = b
		}
	}
	e.fs.BoolVar(p, name, def, d.short)
}

func (e *envFlags) Duration(p *time.Duration, name, env string, def time.Duration, d doc) {
	if !e.declare(name, env, def, d) {
		*p = def
		return
	}
	if v, ok := e.env(env); ok {
		dur, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want %s", env, v, wantText(def)))
		} else {
			def = dur
		}
	}
	e.fs.DurationVar(p, name, def, d.short)
}

// wantText says what a flag whose default is def takes, for an error about
// a value that does not parse (from the environment or the config file).
func wantText(def any) string {
	switch def.(type) {
	case int, int64:
		return "a whole number"
	case bool:
		return "true or false"
	case time.Duration:
		return "a duration like 10s or 1m30s"
	}
	return "a value"
}

// List registers a comma-separated list flag; its default is empty.
func (e *envFlags) List(p *[]string, name, env string, d doc) {
	*p = nil
	if !e.declare(name, env, []string(nil), d) {
		return
	}
	if v, ok := e.env(env); ok {
		*p = splitList(v)
	}
	e.fs.Func(name, d.short, func(s string) error {
		*p = splitList(s)
		return nil
	})
}

// Repeated registers a flag that may be given more than once, each adding
// to the list; its environment variable is a comma-separated list. The
// command line replaces the environment's list rather than adding to it.
func (e *envFlags) Repeated(p *[]string, name, env string, d doc) {
	*p = nil
	if !e.declare(name, env, []string(nil), d) {
		return
	}
	if v, ok := e.env(env); ok {
		*p = splitList(v)
	}
	fromEnv := true
	e.fs.Func(name, d.short, func(s string) error {
		if fromEnv {
			*p, fromEnv = nil, false
		}
		*p = append(*p, splitList(s)...)
		return nil
	})
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// checkNotNegative refuses a negative count, size or duration in any flag
// fs took, wherever its value came from (command line, environment or
// config file): the components read zero and below as "the default", so a
// mistyped sign would otherwise pass unnoticed. A flag whose doc gives
// negative a meaning is left alone.
func (e *envFlags) checkNotNegative(fs *flag.FlagSet) error {
	var refused []string
	for _, spec := range e.specs {
		fl := fs.Lookup(spec.name)
		if fl == nil || spec.negativeMeans {
			continue
		}
		g, ok := fl.Value.(flag.Getter)
		if !ok {
			continue
		}
		var negative bool
		switch v := g.Get().(type) {
		case int:
			negative = v < 0
		case int64:
			negative = v < 0
		case time.Duration:
			negative = v < 0
		}
		if !negative {
			continue
		}
		name := "--" + spec.name
		if spec.env != "" {
			name += " (" + spec.env + ")"
		}
		refused = append(refused, fmt.Sprintf("%s: %s is negative; give 0 or more (unset: %s)", name, fl.Value, spec.defaultText()))
	}
	if len(refused) == 0 {
		return nil
	}
	return errors.New(strings.Join(refused, "; "))
}
