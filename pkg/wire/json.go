package wire

import (
	"time"

	"github.com/chatd/chatd/internal/jsonfast"
)

// appendTime appends t as a JSON string in RFC 3339 with nanoseconds.
func appendTime(dst []byte, t time.Time) []byte { return jsonfast.AppendTime(dst, t) }

// appendString appends s as a JSON string, without encoding/json's HTML
// escaping (frames are not embedded in HTML; jsonfast.AppendString).
func appendString(dst []byte, s string) []byte { return jsonfast.AppendString(dst, s, false) }
