package main

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/pkg/api"
	"github.com/chatd/chatd/pkg/node"
)

// tokenArgs are `chatd token`'s own flags.
type tokenArgs struct {
	device  string
	ttl     time.Duration
	service bool
}

// registerTokenFlags declares `chatd token`'s flags: its own, and the
// settings that decide the secret it signs with, read as the server reads
// them so the token is signed with the secret the server uses.
func registerTokenFlags(fs *flag.FlagSet, s *settings, t *tokenArgs) *envFlags {
	f := &envFlags{fs: fs, only: map[string]bool{
		"config": true, "data-dir": true, "database-url": true, "jwt-secret": true, "device": true, "ttl": true, "service": true,
	}}
	declareFlags(f, s)
	f.String(&t.device, "device", "", chatd.DefaultDevice, doc{group: groupToken, short: "device id (the token's dev claim)"})
	f.Duration(&t.ttl, "ttl", "", 24*time.Hour, doc{group: groupToken, short: "how long the token is valid"})
	f.Bool(&t.service, "service", "", false, doc{group: groupToken, short: "a service's token (svc claim: a bot or backend)"})
	return f
}

// runToken prints a token for USER signed with the secret chatd would use.
func runToken(args []string) error {
	var s settings
	var t tokenArgs
	fs := flag.NewFlagSet("chatd token", flag.ContinueOnError)
	f := registerTokenFlags(fs, &s, &t)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage:
  chatd token USER [flags]            print a token for USER, signed with the secret chatd uses
  chatd token --service NAME [flags]  the same for a service (a bot, an app backend)

USER and NAME are 1-64 of A-Z a-z 0-9 _ -. The settings below decide the secret, as they do
for the server; each has its environment variable beside it.
`)
		printFlags(fs.Output(), fs, f.specs)
	}
	user, rest := "", args
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		user, rest = args[0], args[1:]
	}
	if err := parseArgs(fs, rest); err != nil {
		return err
	}
	extra := fs.Args()
	if user == "" && len(extra) > 0 {
		// The flag package stops at the first word that is not a flag:
		// after `--service NAME` the flags that follow are parsed now.
		user = extra[0]
		if err := parseArgs(fs, extra[1:]); err != nil {
			return err
		}
		extra = fs.Args()
	}
	if len(extra) > 0 {
		return strayArg(fs, extra[0])
	}
	if err := finishSettings(fs, f, &s); err != nil {
		return err
	}
	if !chatd.ValidUserID(user) {
		return fmt.Errorf("usage: chatd token USER [--device D] [--ttl 24h] [--service]: USER must be 1-64 chars of [A-Za-z0-9_-], got %q", user)
	}
	if err := dataDirExists(s.node); err != nil {
		return err
	}
	secret, err := node.JWTSecret(s.node)
	if err != nil {
		return err
	}
	issue := api.IssueToken
	if t.service {
		issue = api.IssueServiceToken
	}
	tok, err := issue(secret, user, t.device, t.ttl)
	if err != nil {
		return err
	}
	fmt.Println(tok)
	return nil
}

// dataDirExists refuses a data dir that is not there when the secret would
// come from it: node.JWTSecret would create it with a new secret the
// server has never seen, and the token would be refused with 401. A data
// dir chatd has not started in yet still gets its secret, which the server
// then uses.
func dataDirExists(cfg node.Config) error {
	if cfg.JWTSecret != "" || cfg.DatabaseURL != "" || cfg.DataDir == "" {
		return nil
	}
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("data dir %s does not exist, so it holds no token secret: give the --data-dir (CHATD_DATA_DIR) chatd serves with, or --jwt-secret", cfg.DataDir)
	}
	return nil
}
