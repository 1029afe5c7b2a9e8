package chatd_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/chatd/chatd"
)

// Every domain error has a name that leads back to it, also when wrapped,
// and an error that wraps none has no name.
func TestErrorNames(t *testing.T) {
	all := []error{chatd.ErrNotFound, chatd.ErrForbidden, chatd.ErrInvalid, chatd.ErrTooLarge, chatd.ErrTooManyMembers,
		chatd.ErrConflict, chatd.ErrCIDConflict, chatd.ErrOverloaded, chatd.ErrRateLimited, chatd.ErrUnavailable,
		chatd.ErrOutcomeUnknown, chatd.ErrClosed}
	seen := map[string]bool{}
	for _, err := range all {
		name := chatd.ErrorName(fmt.Errorf("context: %w", err))
		if name == "" || seen[name] {
			t.Fatalf("%v: name %q, want one of its own", err, name)
		}
		seen[name] = true
		if back := chatd.NamedError(name); back != err {
			t.Fatalf("NamedError(%q) = %v, want %v", name, back, err)
		}
	}
	if name := chatd.ErrorName(errors.New("disk on fire")); name != "" {
		t.Fatalf("an error of no domain named %q", name)
	}
	if chatd.NamedError("no_such_name") != nil {
		t.Fatal("an unknown name gave an error")
	}
}
