package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Key roles (docs/design.md §3).
const (
	RoleUser     = "user"
	RoleAdmin    = "admin"
	RoleOperator = "operator"
)

// APIKey is a stored key; the secret itself is never stored, only its SHA-256.
type APIKey struct {
	ID        string
	AccountID string
	UserID    string
	Role      string
	Name      string
	CreatedAt time.Time
	RevokedAt *time.Time
}

// HashKey is how a presented key is looked up.
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// CreateKey stores a new key and returns its secret, which is shown once and never again.
func (s *Store) CreateKey(ctx context.Context, accountID, userID, role, name string) (string, APIKey, error) {
	switch role {
	case RoleUser:
		if userID == "" {
			return "", APIKey{}, fmt.Errorf("a user key needs --user")
		}
	case RoleAdmin, RoleOperator:
	default:
		return "", APIKey{}, fmt.Errorf("role must be user, admin or operator, got %q", role)
	}
	if accountID == "" {
		return "", APIKey{}, fmt.Errorf("a key needs --account")
	}
	idb := make([]byte, 8)
	secret := make([]byte, 24)
	if _, err := rand.Read(idb); err != nil {
		return "", APIKey{}, err
	}
	if _, err := rand.Read(secret); err != nil {
		return "", APIKey{}, err
	}
	id := hex.EncodeToString(idb)
	key := "mbk_" + id + "_" + hex.EncodeToString(secret)
	k := APIKey{ID: id, AccountID: accountID, UserID: userID, Role: role, Name: name, CreatedAt: s.now()}
	_, err := s.db.ExecContext(ctx, "INSERT INTO api_keys (id, key_hash, account_id, user_id, role, name, created_us) VALUES (?, ?, ?, ?, ?, ?, ?)",
		id, HashKey(key), accountID, userID, role, name, k.CreatedAt.UnixMicro())
	if err != nil {
		return "", APIKey{}, fmt.Errorf("create key: %w", err)
	}
	return key, k, nil
}

// LookupKey returns the active key for a presented secret, or ErrNotFound (also when revoked).
func (s *Store) LookupKey(ctx context.Context, key string) (APIKey, error) {
	row := s.db.QueryRowContext(ctx, "SELECT id, account_id, user_id, role, name, created_us, revoked_us FROM api_keys WHERE key_hash = ?", HashKey(key))
	k, err := scanKey(row)
	if errors.Is(err, sql.ErrNoRows) {
		return APIKey{}, ErrNotFound
	}
	if err != nil {
		return APIKey{}, err
	}
	if k.RevokedAt != nil {
		return APIKey{}, ErrNotFound
	}
	return k, nil
}

// ListKeys lists keys, of one account or of all when accountID is empty.
func (s *Store) ListKeys(ctx context.Context, accountID string) ([]APIKey, error) {
	q := "SELECT id, account_id, user_id, role, name, created_us, revoked_us FROM api_keys"
	var args []any
	if accountID != "" {
		q += " WHERE account_id = ?"
		args = append(args, accountID)
	}
	rows, err := s.db.QueryContext(ctx, q+" ORDER BY created_us", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []APIKey
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// RevokeKey revokes a key by id.
func (s *Store) RevokeKey(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, "UPDATE api_keys SET revoked_us = ? WHERE id = ? AND revoked_us IS NULL", s.nowUS(), id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// CountKeys counts active keys (embedded mode creates a dev key when there are none).
func (s *Store) CountKeys(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM api_keys WHERE revoked_us IS NULL").Scan(&n)
	return n, err
}

type scanner interface{ Scan(dest ...any) error }

func scanKey(r scanner) (APIKey, error) {
	var k APIKey
	var created int64
	var revoked sql.NullInt64
	if err := r.Scan(&k.ID, &k.AccountID, &k.UserID, &k.Role, &k.Name, &created, &revoked); err != nil {
		return APIKey{}, err
	}
	k.CreatedAt = time.UnixMicro(created)
	if revoked.Valid {
		t := time.UnixMicro(revoked.Int64)
		k.RevokedAt = &t
	}
	return k, nil
}
