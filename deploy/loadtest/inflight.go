package main

import (
	"context"
)

// inflight counts the archives of every account caught between their first and last state
// (archived or extracted, not yet indexed): after a kill -9 of the process that ran them, the
// commits killed mid-extraction. A restart must take each to indexed (`commit` then checks
// none is left behind).
func inflight(args []string) error {
	var c common
	fs := c.flagSet("inflight")
	_ = fs.Parse(args)
	db, err := openDB(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx := context.Background()
	out := map[string]int{"archived": 0, "extracted": 0}
	rows, err := db.QueryContext(ctx, `SELECT state, COUNT(*) FROM archives WHERE state IN ('archived', 'extracted') GROUP BY state`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			return err
		}
		out[state] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	printJSON(out)
	return nil
}
