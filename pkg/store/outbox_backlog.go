package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// OutboxBacklog counts the outbox rows not yet published (neither sent nor dead) and returns
// the creation time of the oldest one (zero when there is none): the relay's backlog, which the
// ops dashboard and the outbox alert watch.
func (s *Store) OutboxBacklog(ctx context.Context) (int64, time.Time, error) {
	var n int64
	var oldest sql.NullInt64
	err := s.db.QueryRowContext(ctx, "SELECT COUNT(*), MIN(created_us) FROM outbox WHERE sent_us IS NULL AND dead_us IS NULL").Scan(&n, &oldest)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("outbox backlog: %w", err)
	}
	if !oldest.Valid {
		return n, time.Time{}, nil
	}
	return n, time.UnixMicro(oldest.Int64).UTC(), nil
}
