package stream_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chatd/chatd/pkg/stream"
)

// A stream of the same name that listens on other subjects belongs to
// another deployment: Ensure refuses it instead of taking its subjects, and
// a stream of another name and prefix lives beside it.
func TestEnsureRefusesAnotherDeploymentsStream(t *testing.T) {
	_, js := mustInProcessJS(t)
	ctx := context.Background()
	if _, err := stream.Ensure(ctx, js, stream.Config{Name: "A_OUT", SubjectPrefix: "a.out."}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Ensure(ctx, js, stream.Config{Name: "A_OUT", SubjectPrefix: "a.out."}); err != nil {
		t.Fatalf("ensure again, same config: %v", err)
	}
	_, err := stream.Ensure(ctx, js, stream.Config{Name: "A_OUT", SubjectPrefix: "b.out."})
	if err == nil || !strings.Contains(err.Error(), "another deployment") {
		t.Fatalf("same name, other subjects: got %v, want a refusal naming another deployment", err)
	}
	if _, err := stream.Ensure(ctx, js, stream.Config{Name: "B_OUT", SubjectPrefix: "b.out."}); err != nil {
		t.Fatalf("second deployment's stream: %v", err)
	}
	s, err := js.Stream(ctx, "A_OUT")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.CachedInfo().Config.Subjects; len(got) != 1 || got[0] != "a.out.>" {
		t.Fatalf("A_OUT subjects %v, want [a.out.>]", got)
	}
}
