package store

import (
	"context"
	"fmt"
)

// MessagePlace is where a message was said: its position in its session (seq) and who said it.
type MessagePlace struct {
	Seq        int64
	Role, Name string
}

// MessagePlaces returns the session position (seq) and speaker of each of the account's
// messages named by sources; messages it does not hold are left out. Recall places a memory
// among the archived turns around it with it (the neighbouring-turn lift) and reads its
// speaker's session context. One query: the (account_id,
// session_id, message_id) unique index answers the two IN lists, and pairs that are only in
// their product are dropped here.
func (s *Store) MessagePlaces(ctx context.Context, account string, sources []Source) (map[Source]MessagePlace, error) {
	out := make(map[Source]MessagePlace, len(sources))
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
	rows, err := s.query(ctx, "SELECT session_id, message_id, seq, role, name FROM messages WHERE account_id = ? AND "+inS+" AND "+inM, args...)
	if err != nil {
		return nil, fmt.Errorf("message places: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var src Source
		var p MessagePlace
		if err := rows.Scan(&src.SessionID, &src.MessageID, &p.Seq, &p.Role, &p.Name); err != nil {
			return nil, fmt.Errorf("message places: %w", err)
		}
		if want[src] {
			out[src] = p
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("message places: %w", err)
	}
	return out, nil
}
