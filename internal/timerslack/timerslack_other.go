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

// Set reports that only Linux has a timer slack.
func Set(time.Duration) error {
	return errors.New("timer slack is a Linux setting")
}
