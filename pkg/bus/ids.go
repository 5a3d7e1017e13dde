package bus

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// ErrInvalidAccount is returned (wrapped) by ValidAccount.
var ErrInvalidAccount = errors.New("invalid account id")

// ValidAccount checks an account (tenant) id: 1 to 64 characters of [a-z0-9_-]. Account ids
// are placed in subjects verbatim, so nothing else is accepted.
func ValidAccount(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("%w %q: must be 1 to 64 characters of [a-z0-9_-]", ErrInvalidAccount, id)
	}
	for i := 0; i < len(id); i++ {
		if !isLowerTokenByte(id[i]) {
			return fmt.Errorf("%w %q: must be 1 to 64 characters of [a-z0-9_-] (bad character %q at %d)", ErrInvalidAccount, id, id[i], i)
		}
	}
	return nil
}

// SessionToken turns a session id into a subject token: the id itself when it matches
// [A-Za-z0-9_-]{1,64}, else the lower-case sha256 hex of the id.
func SessionToken(id string) string { return safeToken(id) }

// InstanceToken turns an instance id (host name, pod name, …) into a subject token, like
// SessionToken.
func InstanceToken(s string) string { return safeToken(s) }

// MsgID is the deterministic Nats-Msg-Id of a business key: the sha256 hex of the parts
// joined by the unit separator 0x1f (so ("a","bc") and ("ab","c") differ).
func MsgID(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x1f")))
	return hex.EncodeToString(sum[:])
}

func safeToken(s string) string {
	if isSafeToken(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// isSafeToken reports whether s matches [A-Za-z0-9_-]{1,64}.
func isSafeToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isLowerTokenByte(c) && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return true
}

// isLowerTokenByte reports whether c is in [a-z0-9_-].
func isLowerTokenByte(c byte) bool {
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'
}
