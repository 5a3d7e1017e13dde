package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// tenant is one account of the cross-tenant check: its id, its user, its session, the marker
// word only its data holds, and its user API key (HTTP).
type tenant struct{ account, user, session, marker, key string }

func tenantsOf(run string, n int, keys map[string]string) []tenant {
	var out []tenant
	for i := range n {
		acct := fmt.Sprintf("%s-t%d", run, i+1)
		// A made-up word per account, kept whole by normalisation and keyword search.
		marker := fmt.Sprintf("zq%sx%dmark", strings.ReplaceAll(strings.ToLower(run), "-", ""), i+1)
		out = append(out, tenant{account: acct, user: "u1", session: "s1", marker: marker, key: keys[acct]})
	}
	return out
}

// tenants seeds (--phase seed) one fact with a marker word per account, all in the same user
// and session ids, and commits it; --phase check then asks, as each account, every RPC and
// HTTP route that answers with data for every marker, and counts the answers that hold another
// account's marker or memory (leaks) and those that hold its own (so the check can fail).
func tenants(args []string) error {
	var c common
	fs := c.flagSet("tenants")
	phase := fs.String("phase", "check", "seed or check")
	n := fs.Int("accounts", 3, "accounts")
	base := fs.String("http", "", "the gateway's base URL (empty: bus only)")
	keysFile := fs.String("keys", "", "file of \"<account> <user API key>\" lines (for HTTP)")
	_ = fs.Parse(args)
	keys := map[string]string{}
	if *keysFile != "" {
		b, err := os.ReadFile(*keysFile)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 {
				keys[f[0]] = f[1]
			}
		}
	}
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx := context.Background()
	ts := tenantsOf(c.run, *n, keys)
	call := func(account, op string, req any) ([]byte, error) {
		b, _ := json.Marshal(req)
		cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		msg, err := nc.RequestWithContext(cctx, names.RPC(account, op), b)
		if err != nil {
			return nil, err
		}
		return msg.Data, nil
	}

	if *phase == "seed" {
		for _, t := range ts {
			now := time.Now().UTC()
			ev := contract.TurnEvent{V: 1, EventID: "ev-" + t.account + "-1", AccountID: t.account, UserID: t.user, SessionID: t.session, Source: "loadtest",
				Messages: []contract.Message{
					{MessageID: t.account + "-m1", Role: "user", CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: "I really love " + t.marker + " gardens."}}},
					{MessageID: t.account + "-m2", Role: "assistant", Position: 1, CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: "Noted: " + t.marker + "."}}},
				}, SentAt: now}
			pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_, err := bus.PublishJSON(pctx, js, names.Turns(t.account, t.session), ev.EventID, ev)
			cancel()
			if err != nil {
				return fmt.Errorf("seed %s: %w", t.account, err)
			}
			var res contract.CommitResult
			b, err := call(t.account, "commit", contract.CommitRPCRequest{V: 1, RequestID: "seed-" + t.account, UserID: t.user, SessionID: t.session, Kind: contract.CommitSync, Wait: true})
			if err == nil {
				err = json.Unmarshal(b, &res)
			}
			if err != nil {
				return fmt.Errorf("seed %s: commit: %w", t.account, err)
			}
			if res.Status != contract.StatusCompleted {
				return fmt.Errorf("seed %s: commit answered %s", t.account, b)
			}
		}
		printJSON(map[string]any{"accounts": len(ts)})
		return nil
	}

	// Each account's own memory ids, asked for by the others.
	memIDs := map[string][]string{}
	for _, t := range ts {
		b, err := call(t.account, "memories.list", contract.MemoriesListRequest{V: 1, UserID: t.user, Limit: 100})
		if err != nil {
			return err
		}
		var resp contract.MemoriesListResponse
		_ = json.Unmarshal(b, &resp)
		for _, it := range resp.Items {
			memIDs[t.account] = append(memIDs[t.account], it.ID)
		}
	}
	var answers, leaks, ownFound, errs int
	check := func(asker tenant, what string, body []byte) {
		answers++
		// An answer may echo the query (archive.search does): that is the asker's own text.
		var obj map[string]any
		if json.Unmarshal(body, &obj) == nil {
			delete(obj, "query")
			body, _ = json.Marshal(obj)
		}
		for _, o := range ts {
			if o.account == asker.account {
				if bytes.Contains(body, []byte(o.marker)) {
					ownFound++
				}
				continue
			}
			leaked := bytes.Contains(body, []byte(o.marker))
			for _, id := range memIDs[o.account] {
				leaked = leaked || bytes.Contains(body, []byte(`"`+id+`"`))
			}
			if leaked {
				leaks++
				fmt.Fprintf(os.Stderr, "LEAK: %s asked %s and got %s's data: %.300s\n", asker.account, what, o.account, body)
			}
		}
	}
	for _, t := range ts {
		for _, o := range ts {
			q := o.marker + " gardens"
			reqs := map[string]any{
				"recall":         contract.RecallRequest{V: 1, UserID: t.user, Query: q, Scopes: []string{"user", "agent", "archive"}, Limit: 20},
				"context":        contract.ContextRequest{V: 1, UserID: t.user, SessionID: t.session, TokenBudget: 8000},
				"memories.list":  contract.MemoriesListRequest{V: 1, UserID: t.user, Limit: 100},
				"session.get":    contract.SessionMetaRequest{V: 1, UserID: t.user, SessionID: o.session},
				"archive.search": contract.ArchiveSearchRequest{V: 1, UserID: t.user, SessionID: o.session, Query: o.marker},
			}
			for op, req := range reqs {
				b, err := call(t.account, op, req)
				if err != nil {
					errs++
					continue
				}
				check(t, "rpc "+op, b)
			}
			for _, id := range memIDs[o.account] {
				b, err := call(t.account, "memories.get", contract.MemoryGetRequest{V: 1, UserID: t.user, MemoryID: id})
				if err != nil {
					errs++
					continue
				}
				check(t, "rpc memories.get", b)
			}
			if *base == "" || t.key == "" {
				continue
			}
			gets := []string{"/v1/memories?limit=100", "/v1/sessions/" + o.session, "/v1/sessions/" + o.session + "/context?token_budget=8000",
				"/v1/sessions/" + o.session + "/archives/search?q=" + url.QueryEscape(o.marker)}
			for _, id := range memIDs[o.account] {
				gets = append(gets, "/v1/memories/"+id)
			}
			for _, p := range gets {
				b, status, err := httpDo(ctx, http.MethodGet, *base+p, t.key, nil)
				if err != nil || status >= 500 || status == http.StatusTooManyRequests {
					errs++
					continue
				}
				check(t, "GET "+p, b)
			}
			rb, _ := json.Marshal(map[string]any{"query": q, "limit": 20})
			b, status, err := httpDo(ctx, http.MethodPost, *base+"/v1/recall", t.key, rb)
			if err != nil || status >= 500 {
				errs++
				continue
			}
			check(t, "POST /v1/recall", b)
		}
	}
	printJSON(map[string]any{"accounts": len(ts), "answers": answers, "cross_tenant": leaks, "own_marker_answers": ownFound, "errors": errs})
	if ownFound == 0 {
		return errors.New("no account found its own marker: the check could not have failed")
	}
	return nil
}
