package store

import (
	"encoding/binary"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The commit sends a batch's rows as one array per column through unnest
// (commit.go). pgx encodes a plain []string, []int64 or []time.Time through
// its generic array codec, which hands each element over as an interface
// value: one allocation per string, per time and per int64 above 255, for
// every column of every row: the largest single source of chatd's
// allocations per message (docs/benchmarks-log.md,
// "The relay's own publisher, fewer allocations per message, and the foreign
// keys checked per statement (2026-12-02)"). These slice types are written
// in PostgreSQL's binary array format directly, with no allocation but the
// buffer's.
type (
	textArray        []string
	int8Array        []int64
	timestamptzArray []time.Time
	boolArray        []bool
)

// registerArrays makes conn's type map encode the array types above. It
// wraps the codec pgx registered for each array OID, so every other value of
// those types is encoded (and every result decoded) as before.
func registerArrays(conn *pgx.Conn) {
	m := conn.TypeMap()
	for _, a := range []struct {
		oid   uint32
		value any
	}{
		{pgtype.TextArrayOID, textArray(nil)}, {pgtype.Int8ArrayOID, int8Array(nil)},
		{pgtype.TimestamptzArrayOID, timestamptzArray(nil)}, {pgtype.BoolArrayOID, boolArray(nil)},
	} {
		t, ok := m.TypeForOID(a.oid)
		if !ok {
			continue
		}
		m.RegisterType(&pgtype.Type{Name: t.Name, OID: t.OID, Codec: arrayCodec{t.Codec}})
		// Where no parameter types are known (the simple protocol, which a
		// DSN may ask for in front of a pooler), the value's type names the
		// array type, and pgx's own codec encodes it as text.
		m.RegisterDefaultPgType(a.value, t.Name)
	}
}

// arrayCodec is a registered array codec with a binary encoder for the
// slice types above.
type arrayCodec struct{ pgtype.Codec }

func (c arrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if format == pgtype.BinaryFormatCode {
		switch value.(type) {
		case textArray, int8Array, timestamptzArray, boolArray:
			return arrayPlan{}
		}
	}
	return c.Codec.PlanEncode(m, oid, format, value)
}

// arrayPlan writes a one-dimensional array without NULLs: the header
// (dimensions, null flag, element type, then length and lower bound 1),
// then each element as its length and its binary value. An empty array has
// no dimensions, as PostgreSQL writes it.
type arrayPlan struct{}

func (arrayPlan) Encode(value any, buf []byte) ([]byte, error) {
	switch a := value.(type) {
	case textArray:
		buf = arrayHeader(buf, pgtype.TextOID, len(a))
		for _, s := range a {
			buf = binary.BigEndian.AppendUint32(buf, uint32(len(s)))
			buf = append(buf, s...)
		}
	case int8Array:
		buf = arrayHeader(buf, pgtype.Int8OID, len(a))
		for _, v := range a {
			buf = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(buf, 8), uint64(v))
		}
	case timestamptzArray:
		buf = arrayHeader(buf, pgtype.TimestamptzOID, len(a))
		for _, t := range a {
			buf = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(buf, 8), uint64(microsSinceY2K(t)))
		}
	case boolArray:
		buf = arrayHeader(buf, pgtype.BoolOID, len(a))
		for _, v := range a {
			b := byte(0)
			if v {
				b = 1
			}
			buf = append(binary.BigEndian.AppendUint32(buf, 1), b)
		}
	}
	return buf, nil
}

func arrayHeader(buf []byte, elem uint32, n int) []byte {
	dims := uint32(1)
	if n == 0 {
		dims = 0
	}
	buf = binary.BigEndian.AppendUint32(buf, dims)
	buf = binary.BigEndian.AppendUint32(buf, 0) // no NULLs
	buf = binary.BigEndian.AppendUint32(buf, elem)
	if n > 0 {
		buf = binary.BigEndian.AppendUint32(buf, uint32(n))
		buf = binary.BigEndian.AppendUint32(buf, 1)
	}
	return buf
}

// y2kMicros is 2000-01-01 UTC, PostgreSQL's timestamp epoch, in
// microseconds since the Unix epoch.
const y2kMicros = 946684800 * 1000000

// microsSinceY2K is t as PostgreSQL's binary timestamptz, truncated to the
// microsecond as pgx's own encoder does.
func microsSinceY2K(t time.Time) int64 {
	return t.Unix()*1000000 + int64(t.Nanosecond())/1000 - y2kMicros
}
