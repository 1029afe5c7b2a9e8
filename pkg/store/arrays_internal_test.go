package store

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chatd/chatd/internal/testpg"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

func mustArraysConn(t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), testpg.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	registerArrays(conn)
	return conn
}

// PostgreSQL reads every array the hand-written encoder writes as the very
// array pgx's own codec sends for the plain slice, element for element.
func TestArraysEncodeAsPgxDoes(t *testing.T) {
	conn := mustArraysConn(t)
	loc := time.FixedZone("x", -7*3600)
	texts := []string{"", "a", "héllo, wörld", "{\"quoted\"}", "NULL", strings.Repeat("é", 150)}
	ints := []int64{0, 1, -1, 255, 256, math.MaxInt64, math.MinInt64}
	times := []time.Time{
		time.Date(2026, 12, 2, 6, 30, 0, 123456789, time.UTC),
		time.Date(1999, 12, 31, 23, 59, 59, 999999999, loc),
		time.Date(1960, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Unix(0, 0),
	}
	bools := []bool{true, false, true}
	tests := []struct {
		name       string
		sql        string
		ours, pgxs any
	}{
		{"text", `select $1::text[] = $2::text[], cardinality($1::text[])`, textArray(texts), texts},
		{"text empty", `select $1::text[] = $2::text[], cardinality($1::text[])`, textArray{}, []string{}},
		{"int8", `select $1::int8[] = $2::int8[], cardinality($1::int8[])`, int8Array(ints), ints},
		{"int8 empty", `select $1::int8[] = $2::int8[], cardinality($1::int8[])`, int8Array{}, []int64{}},
		{"timestamptz", `select $1::timestamptz[] = $2::timestamptz[], cardinality($1::timestamptz[])`, timestamptzArray(times), times},
		{"bool", `select $1::bool[] = $2::bool[], cardinality($1::bool[])`, boolArray(bools), bools},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var same bool
			var n int
			if err := conn.QueryRow(context.Background(), tt.sql, tt.ours, tt.pgxs).Scan(&same, &n); err != nil {
				t.Fatal(err)
			}
			if want := reflect.ValueOf(tt.pgxs).Len(); !same || n != want {
				t.Fatalf("PostgreSQL read a different array from the hand-written encoding (equal %v, %d elements, want %d)", same, n, want)
			}
		})
	}
	// A connection on the simple protocol (a pooler in front, say) sends
	// text: the types fall back to pgx's own encoding of their slices.
	for _, tt := range tests {
		var same bool
		var n int
		if err := conn.QueryRow(context.Background(), tt.sql, pgx.QueryExecModeSimpleProtocol, tt.ours, tt.pgxs).Scan(&same, &n); err != nil || !same {
			t.Fatalf("%s over the simple protocol: equal %v, %v", tt.name, same, err)
		}
	}
	// And through unnest, as the commit uses them: order and values kept.
	rows, err := conn.Query(context.Background(), `select u.s, u.i from unnest($1::text[], $2::int8[]) as u(s, i)`,
		textArray{"x", "y", "z"}, int8Array{3, 2, 1})
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (string, error) {
		var s string
		var i int64
		err := r.Scan(&s, &i)
		return s + string(rune('0'+i)), err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != "x3" || got[1] != "y2" || got[2] != "z1" {
		t.Fatalf("unnest: got %v, want [x3 y2 z1]", got)
	}
}

// The registered plan is the hand-written one, and it allocates nothing but
// the buffer it is given room in: the reason it exists.
func TestArrayEncodingAllocatesNothing(t *testing.T) {
	conn := mustArraysConn(t)
	values := []any{
		textArray{"01KBF3XQ6Z3V3M0N0Z7XK1Q2RS", "01KBF3XQ6Z3V3M0N0Z7XK1Q2RT", "chat-1"},
		int8Array{1 << 40, 1 << 41}, timestamptzArray{time.Now(), time.Now()}, boolArray{true},
	}
	oids := []uint32{pgtype.TextArrayOID, pgtype.Int8ArrayOID, pgtype.TimestamptzArrayOID, pgtype.BoolArrayOID}
	buf := make([]byte, 0, 4096)
	for i, v := range values {
		plan := conn.TypeMap().PlanEncode(oids[i], pgtype.BinaryFormatCode, v)
		if _, ok := plan.(arrayPlan); !ok {
			t.Fatalf("%T: plan %T, want arrayPlan", v, plan)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = plan.Encode(v, buf[:0]) }); n != 0 {
			t.Fatalf("%T: %v allocations per encode, want 0", v, n)
		}
	}
}
