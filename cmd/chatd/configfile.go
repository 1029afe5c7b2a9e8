package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v4"
)

// applyConfigFile sets, from the YAML file at path, every flag that neither
// the command line nor its environment variable set: precedence is flag >
// env > file > default. The file's keys are the flag names (listen,
// nats-url, …); a list flag takes a YAML sequence or a comma-separated
// string. An unknown key is an error, so a typo does not silently keep a
// default.
func applyConfigFile(fs *flag.FlagSet, f *envFlags, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(raw, &settings); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	onCommandLine := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })
	var errs []error
	for key, v := range settings {
		if key == webhooksKey {
			continue // not a flag: webhooksFromFile reads it
		}
		if !f.declared(key) || key == "config" {
			errs = append(errs, fmt.Errorf("--config %s: unknown setting %q (keys are flag names without --)", path, key))
			continue
		}
		// A setting this command does not take (`chatd token` reading
		// the server's file) is left alone.
		if fs.Lookup(key) == nil || onCommandLine[key] {
			continue
		}
		if env, ok := f.envOf[key]; ok {
			if _, set := f.env(env); set {
				continue
			}
		}
		s, err := settingText(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("--config %s: %s: %w", path, key, err))
			continue
		}
		if err := fs.Set(key, s); err != nil {
			errs = append(errs, fmt.Errorf("--config %s: %s: %q: want %s", path, key, s, wantText(f.defOf(key))))
		}
	}
	return errors.Join(errs...)
}

// settingText is a YAML value as the flag's command-line text.
func settingText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			s, err := settingText(x)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case map[string]any:
		return "", errors.New("want a value or a list, not a mapping")
	}
	return fmt.Sprint(v), nil
}
