package main

import (
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
}

func (e *envFlags) track(name, env string) {
	if e.envOf == nil {
		e.envOf = map[string]string{}
	}
	e.envOf[name] = env
}

func (e *envFlags) env(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	return v, ok && v != ""
}

func (e *envFlags) usage(usage, env string) string {
	return fmt.Sprintf("%s (env %s)", usage, env)
}

func (e *envFlags) String(p *string, name, env, def, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		def = v
	}
	e.fs.StringVar(p, name, def, e.usage(usage, env))
}

func (e *envFlags) Int(p *int, name, env string, def int, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want an integer", env, v))
		} else {
			def = n
		}
	}
	e.fs.IntVar(p, name, def, e.usage(usage, env))
}

func (e *envFlags) Int64(p *int64, name, env string, def int64, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want an integer", env, v))
		} else {
			def = n
		}
	}
	e.fs.Int64Var(p, name, def, e.usage(usage, env))
}

func (e *envFlags) Bool(p *bool, name, env string, def bool, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want true or false", env, v))
		} else {
			def = b
		}
	}
	e.fs.BoolVar(p, name, def, e.usage(usage, env))
}

func (e *envFlags) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			e.errs = append(e.errs, fmt.Errorf("%s=%q: want a duration like 10s", env, v))
		} else {
			def = d
		}
	}
	e.fs.DurationVar(p, name, def, e.usage(usage, env))
}

// List registers a comma-separated list flag.
func (e *envFlags) List(p *[]string, name, env, usage string) {
	e.track(name, env)
	def := ""
	if v, ok := e.env(env); ok {
		def = v
	}
	*p = splitList(def)
	e.fs.Func(name, e.usage(usage+" (comma-separated)", env), func(s string) error {
		*p = splitList(s)
		return nil
	})
}

// Repeated registers a flag that may be given more than once, each adding
// to the list; its environment variable is a comma-separated list. The
// command line replaces the environment's list rather than adding to it.
func (e *envFlags) Repeated(p *[]string, name, env, usage string) {
	e.track(name, env)
	if v, ok := e.env(env); ok {
		*p = splitList(v)
	}
	fromEnv := true
	e.fs.Func(name, fmt.Sprintf("%s (env %s, comma-separated)", usage, env), func(s string) error {
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
