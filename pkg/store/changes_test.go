package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chatd/chatd"
	"github.com/chatd/chatd/internal/testpg"
	"github.com/chatd/chatd/pkg/store"
)

// change is what TestChangesAreRecordedWithTheirChange compares of a
// recorded change.
type change struct {
	kind   chatd.EventKind
	chat   string
	change string
	users  []string
	by     string
	seq    int64
}

func TestChangesAreRecordedWithTheirChange(t *testing.T) {
	ctx := context.Background()
	dsn := testpg.NewDatabase(t)
	s, err := store.Open(ctx, dsn, store.Config{Logger: quiet, RecordMembers: true, RecordReads: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)

	g := mustGroup(t, s, "alice", "bob")
	d, _, err := s.DirectChat(ctx, "zed", "carol")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.DirectChat(ctx, "carol", "zed"); err != nil { // exists: no change
		t.Fatal(err)
	}
	if _, err := s.AddMember(ctx, g.ID, "alice", "dave"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddMember(ctx, g.ID, "alice", "dave"); err != nil { // present: no change
		t.Fatal(err)
	}
	if _, err := s.AdminAddMember(ctx, g.ID, "erin"); err != nil {
		t.Fatal(err)
	}
	if err := s.RemoveMember(ctx, g.ID, "bob", "bob"); err != nil {
		t.Fatal(err)
	}
	if err := s.AdminRemoveMember(ctx, g.ID, "bob"); err != nil { // gone: no change
		t.Fatal(err)
	}
	msgs := mustFill(t, s, g.ID, "alice", 3)
	for _, m := range []int{1, 0, 2, 2} { // only the moves forward are changes
		if _, err := s.MarkRead(ctx, "dave", g.ID, msgs[m].ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.MarkRead(ctx, "mallory", g.ID, msgs[0].ID); err == nil { // refused: no change
		t.Fatal("a non-member's read was stored")
	}

	want := []change{
		{chatd.EventMember, g.ID, chatd.ChangeCreated, []string{"alice", "bob"}, "alice", 0},
		{chatd.EventMember, d.ID, chatd.ChangeCreated, []string{"carol", "zed"}, "zed", 0},
		{chatd.EventMember, g.ID, chatd.ChangeAdded, []string{"dave"}, "alice", 0},
		{chatd.EventMember, g.ID, chatd.ChangeAdded, []string{"erin"}, "", 0},
		{chatd.EventMember, g.ID, chatd.ChangeRemoved, []string{"bob"}, "bob", 0},
		{chatd.EventRead, g.ID, "", []string{"dave"}, "", msgs[1].Seq},
		{chatd.EventRead, g.ID, "", []string{"dave"}, "", msgs[2].Seq},
	}
	got, err := s.ReadChanges(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d changes recorded, want %d: %+v", len(got), len(want), got)
	}
	for i, c := range got {
		g := change{c.Kind, c.Chat, c.Change, c.Users, c.By, c.Seq}
		if !slices.Equal(g.users, want[i].users) || g.kind != want[i].kind || g.chat != want[i].chat ||
			g.change != want[i].change || g.by != want[i].by || g.seq != want[i].seq {
			t.Errorf("change %d: %+v, want %+v", i, g, want[i])
		}
		if i > 0 && c.ID <= got[i-1].ID {
			t.Errorf("change %d: id %d after %d", i, c.ID, got[i-1].ID)
		}
		if c.Kind == chatd.EventRead && c.Upto != msgs[c.Seq-1].ID {
			t.Errorf("change %d: upto %s, want the id of seq %d", i, c.Upto, c.Seq)
		}
	}

	if err := s.DeleteChanges(ctx, []int64{got[0].ID, got[1].ID}); err != nil {
		t.Fatal(err)
	}
	left, err := s.ReadChanges(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 2 || left[0].ID != got[2].ID || left[1].ID != got[3].ID {
		t.Fatalf("after deleting the first two, the oldest two: %+v, want ids %d, %d", left, got[2].ID, got[3].ID)
	}
}

func TestChangesAreNotRecordedByDefault(t *testing.T) {
	s, _ := mustOpen(t)
	ctx := context.Background()
	g := mustGroup(t, s, "alice", "bob")
	if _, err := s.AddMember(ctx, g.ID, "alice", "carol"); err != nil {
		t.Fatal(err)
	}
	msgs := mustFill(t, s, g.ID, "alice", 1)
	if _, err := s.MarkRead(ctx, "bob", g.ID, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	if got, err := s.ReadChanges(ctx, 10); err != nil || len(got) != 0 {
		t.Fatalf("changes recorded while off: %+v, %v", got, err)
	}
}

func TestPruneChangesDropsOnlyTheOlder(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, testpg.NewDatabase(t), store.Config{Logger: quiet, RecordMembers: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	mustGroup(t, s, "alice", "bob")
	between := time.Now()
	time.Sleep(10 * time.Millisecond) // the database's clock and ours may differ by a little
	mustGroup(t, s, "carol")
	if n, err := s.PruneChanges(ctx, between.Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("prune before both: %d, %v; want 0", n, err)
	}
	first, err := s.ReadChanges(ctx, 10)
	if err != nil || len(first) != 2 {
		t.Fatalf("recorded: %+v, %v", first, err)
	}
	if n, err := s.PruneChanges(ctx, first[1].TS); err != nil || n != 1 {
		t.Fatalf("prune before the second: %d, %v; want 1", n, err)
	}
	left, err := s.ReadChanges(ctx, 10)
	if err != nil || len(left) != 1 || left[0].ID != first[1].ID {
		t.Fatalf("left: %+v, %v; want only change %d", left, err, first[1].ID)
	}
}
