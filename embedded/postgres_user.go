package embedded

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// serverUser is the system account PostgreSQL runs as when chatd is root.
// PostgreSQL refuses to run as root; Debian's postgresql package creates it.
const serverUser = "postgres"

// runAs is the identity initdb and postgres run under. A nil cred means
// "as this process", used when chatd is not root.
type runAs struct {
	cred   *syscall.Credential
	name   string
	groups []uint32 // primary and supplementary gids, for permission checks
}

// lookupRunAs picks the identity for the server processes.
func lookupRunAs() (runAs, error) {
	if os.Geteuid() != 0 {
		return runAs{}, nil
	}
	u, err := user.Lookup(serverUser)
	if err != nil {
		return runAs{}, fmt.Errorf("chatd runs as root, so PostgreSQL must run as the %q system user, which was not found (%v): %s, or run chatd as a non-root user", serverUser, err, installHint)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return runAs{}, fmt.Errorf("user %q: non-numeric uid %q or gid %q", serverUser, u.Uid, u.Gid)
	}
	groups := []uint32{uint32(gid)}
	if ids, err := u.GroupIds(); err == nil {
		for _, id := range ids {
			if g, err := strconv.ParseUint(id, 10, 32); err == nil && !slices.Contains(groups, uint32(g)) {
				groups = append(groups, uint32(g))
			}
		}
	}
	return runAs{
		cred:   &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups[1:]},
		name:   serverUser,
		groups: groups,
	}, nil
}

// checkTraversable fails unless the server user can reach dataDir:
// PostgreSQL needs search (x) permission on every directory above its
// cluster. Ancestors that do not exist yet are skipped (they are created
// 0755). We do not chmod the user's directories ourselves (that could
// expose a home directory); the error names the directory and the fix
// instead. ACLs are not consulted, so a directory opened up only by an ACL
// is reported too.
func (r runAs) checkTraversable(dataDir string) error {
	if r.cred == nil {
		return nil
	}
	for d := filepath.Dir(dataDir); ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("check %s: %w", d, err)
		case !r.canSearch(fi):
			return fmt.Errorf("PostgreSQL runs as user %q (chatd runs as root) and cannot reach %s because %s is not searchable by that user (mode %s); fix: chmod o+x %s, or put the data directory elsewhere (e.g. /var/lib/chatd)",
				r.name, dataDir, d, fi.Mode().Perm(), d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

func (r runAs) canSearch(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	perm := fi.Mode().Perm()
	switch {
	case st.Uid == r.cred.Uid:
		return perm&0o100 != 0
	case slices.Contains(r.groups, st.Gid):
		return perm&0o010 != 0
	default:
		return perm&0o001 != 0
	}
}

// own hands dir and everything under it to the server user, if dir is not
// already its own. It repairs a cluster that was created by a non-root run.
func (r runAs) own(dir string) error {
	if r.cred == nil {
		return nil
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("chown %s: %w", dir, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid == r.cred.Uid && st.Gid == r.cred.Gid {
		return nil
	}
	err = filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, int(r.cred.Uid), int(r.cred.Gid))
	})
	if err != nil {
		return fmt.Errorf("chown %s to %s: %w", dir, r.name, err)
	}
	return nil
}

// uid is the numeric owner the server's files must have.
func (r runAs) uid() int {
	if r.cred == nil {
		return os.Geteuid()
	}
	return int(r.cred.Uid)
}
