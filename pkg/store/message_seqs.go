package store

import (
	"context"
	"fmt"
)

// MessageSeqs returns the session position (seq) of each of the account's messages named by
// sources; messages it does not hold are left out. Recall places a memory among the archived
// turns around it with it (the neighbouring-turn lift). One query: the (account_id,
// session_id, message_id) unique index answers the two IN lists, and pairs that are only in
// their product are dropped here.
func (s *Store) MessageSeqs(ctx context.Context, account string, sources []Source) (map[Source]int64, error) {
	out := make(map[Source]int64, len(sources))
	if len(sources) == 0 {
		return out, nil
	}
	want := make(map[Source]bool, len(sources))
	sessions, messages := make([]string, 0, len(sources)), make([]string, 0, len(sources))
	seenS, seenM := map[string]bool{}, make(map[string]bool, len(sources))
	for _, src := range sources {
		want[src] = true
		if !seenS[src.SessionID] {
			seenS[src.SessionID] = true
			sessions = append(sessions, src.SessionID)
		}
		if !seenM[src.MessageID] {
			seenM[src.MessageID] = true
			messages = append(messages, src.MessageID)
		}
	}
	inS, argsS := s.inList("session_id", sessions)
	inM, argsM := s.inList("message_id", messages)
	args := append(append([]any{account}, argsS...), argsM...)
	rows, err := s.query(ctx, "SELECT session_id, message_id, seq FROM messages WHERE account_id = ? AND "+inS+" AND "+inM, args...)
	if err != nil {
		return nil, fmt.Errorf("message seqs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var src Source
		var seq int64
		if err := rows.Scan(&src.SessionID, &src.MessageID, &seq); err != nil {
			return nil, fmt.Errorf("message seqs: %w", err)
		}
		if want[src] {
			out[src] = seq
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("message seqs: %w", err)
	}
	return out, nil
}
