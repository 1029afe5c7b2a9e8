package main

import (
	"bytes"
	"log/slog"
	"strings"
	"syscall"
	"testing"
)

// chatd raises its soft open-file limit to the hard one and says so, and
// --max-connections 0 takes what that limit leaves after the reserve.
func TestOpenFileLimitRaisedAndMaxConnectionsFollows(t *testing.T) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 4096 {
		t.Skipf("hard open-file limit %d: too low to lower the soft one below it and see it raised", lim.Max)
	}
	low := lim
	low.Cur = 2048
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim) })

	var logs bytes.Buffer
	got, err := raiseFileLimit(slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got != lim.Max {
		t.Errorf("soft limit after raising: %d, want the hard limit %d", got, lim.Max)
	}
	if !strings.Contains(logs.String(), "raised the open-file limit") || !strings.Contains(logs.String(), "from=2048") {
		t.Errorf("the raise was not logged with where it came from:\n%s", logs.String())
	}
	for _, tc := range []struct {
		flag   int
		nofile uint64
		want   int
	}{
		{0, 20000, 20000 - fileReserve},
		{0, 1024, 64},
		{0, 1 << 40, 1<<31 - fileReserve},
		{500, 20000, 500},
	} {
		if got := maxConnections(tc.flag, tc.nofile); got != tc.want {
			t.Errorf("maxConnections(%d, %d) = %d, want %d", tc.flag, tc.nofile, got, tc.want)
		}
	}
}
