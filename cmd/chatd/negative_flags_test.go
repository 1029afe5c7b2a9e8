package main

import (
	"flag"
	"strings"
	"testing"
	"time"
)

// A negative count, size or duration is a mistake for every flag but the
// one whose doc gives negative a meaning (--settle-wait: settling off):
// it is refused with the flag, its variable and what to give, from the
// command line, the environment and the config file alike, instead of
// silently taking the default as zero does.
func TestNegativeNumbersAreRefused(t *testing.T) {
	var s settings
	fs := flag.NewFlagSet("chatd", flag.ContinueOnError)
	f := registerFlags(fs, &s)
	checked := 0
	for _, spec := range f.specs {
		var neg string
		switch spec.def.(type) {
		case int, int64:
			neg = "-1"
		case time.Duration:
			neg = "-1s"
		default:
			continue
		}
		_, err := parseWith(t, "--"+spec.name, neg)
		if spec.negativeMeans {
			if err != nil || !strings.Contains(spec.long, "Negative:") {
				t.Errorf("--%s %s: %v; its doc gives negative a meaning (its long text must say which)", spec.name, neg, err)
			}
			continue
		}
		checked++
		if err == nil || !strings.Contains(err.Error(), "--"+spec.name+" ("+spec.env+")") || !strings.Contains(err.Error(), "negative") {
			t.Errorf("--%s %s: err %v, want a refusal naming --%s (%s)", spec.name, neg, err, spec.name, spec.env)
		}
	}
	if checked < 30 {
		t.Fatalf("checked %d numeric flags; the declarations changed?", checked)
	}
	t.Setenv("CHATD_RATE", "-5")
	if _, err := parseWith(t); err == nil || !strings.Contains(err.Error(), "--rate (CHATD_RATE)") {
		t.Errorf("CHATD_RATE=-5: err %v, want a refusal", err)
	}
	t.Setenv("CHATD_RATE", "")
	path := mustConfigFile(t, "lease: -10s\n")
	if _, err := parseWith(t, "--config", path); err == nil || !strings.Contains(err.Error(), "--lease (CHATD_LEASE)") {
		t.Errorf("lease: -10s in the config file: err %v, want a refusal", err)
	}
}
