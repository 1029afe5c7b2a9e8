//go:build !linux

package timerslack

import (
	"errors"
	"time"
)

// Current reports that only Linux has a timer slack.
func Current() (time.Duration, error) {
	return 0, errors.New("timer slack is a Linux setting")
}

// Apply does nothing where there is no timer slack to set.
func Apply(time.Duration) error { return nil }
