package chatd

import "fmt"

// Identifier limits. User and device ids follow the wire contract
// (1–64 chars of [A-Za-z0-9_-]); cids and chat ids use the same charset with
// room for a ULID or a client's own scheme.
const (
	MaxUserIDLen   = 64
	MaxDeviceIDLen = 64
	MaxCIDLen      = 64
	MaxChatIDLen   = 64
	MaxTitleLen    = 200
	// DefaultDevice names the device of a token without a `dev` claim.
	DefaultDevice = "default"
)

// ValidUserID reports whether s is a legal user id.
func ValidUserID(s string) bool { return validToken(s, MaxUserIDLen) }

// CheckUserID returns nil for a legal user id, and otherwise ErrInvalid
// naming what (e.g. "member") and the id, and saying what an id may be.
func CheckUserID(what, s string) error {
	if ValidUserID(s) {
		return nil
	}
	return fmt.Errorf("%s %.80q is not a user id (1-%d chars of [A-Za-z0-9_-]): %w", what, s, MaxUserIDLen, ErrInvalid)
}

// ValidDeviceID reports whether s is a legal device id.
func ValidDeviceID(s string) bool { return validToken(s, MaxDeviceIDLen) }

// ValidCID reports whether s is a legal client correlation id.
func ValidCID(s string) bool { return validToken(s, MaxCIDLen) }

// ValidChatID reports whether s is a legal chat id.
func ValidChatID(s string) bool { return validToken(s, MaxChatIDLen) }

func validToken(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckBody returns nil when body is 1..maxBytes bytes of text CheckText
// takes, ErrTooLarge when it is longer, and ErrInvalid otherwise.
func CheckBody(body string, maxBytes int) error {
	switch {
	case len(body) == 0:
		return fmt.Errorf("body is empty: %w", ErrInvalid)
	case len(body) > maxBytes:
		return fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), maxBytes, ErrTooLarge)
	}
	return CheckText("body", body)
}

// CheckTitle returns nil for a group title of at most MaxTitleLen bytes of
// text CheckText takes (empty is allowed), and ErrInvalid otherwise.
func CheckTitle(title string) error {
	if len(title) > MaxTitleLen {
		return fmt.Errorf("title is %d bytes, the limit is %d: %w", len(title), MaxTitleLen, ErrInvalid)
	}
	return CheckText("title", title)
}
