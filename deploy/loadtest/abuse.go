package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/membus/membus/pkg/bus"
	"github.com/membus/membus/pkg/contract"
)

// rpcOps are the request-reply operations membus serves on <p>.rpc.<account>.<op>.
var rpcOps = []string{"recall", "context", "memories.list", "memories.get", "memories.forget", "session.get",
	"archive.search", "archive.expand", "stats", "erase", "commit"}

// badPayloads are bodies no decoder may accept, by name: each goes to every subject and route.
func badPayloads() map[string][]byte {
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	return map[string][]byte{
		"empty":            {},
		"not json":         []byte("this is not json {"),
		"json null":        []byte("null"),
		"json array":       []byte(`[1,2,3]`),
		"empty object":     []byte(`{}`),
		"future version":   []byte(`{"v":2,"event_id":"x"}`),
		"wrong types":      []byte(`{"v":"1","messages":"none","user_id":7,"query":{"a":1}}`),
		"invalid utf-8":    append([]byte(`{"v":1,"query":"`), 0xff, 0xfe, '"', '}'),
		"deep nesting":     []byte(deep),
		"huge number":      []byte(`{"v":1e999999,"limit":99999999999999999999}`),
		"oversized 900kib": []byte(`{"v":1,"query":"` + strings.Repeat("a", 900<<10) + `"}`),
	}
}

// abuse sends malformed and oversized payloads to every subject membus reads (turns, commits,
// every event kind, every RPC, metrics) and every HTTP route of the served OpenAPI document,
// all under account --account (its own, so its dead letters are told from good data's). A
// JetStream publish must be acked or refused, an RPC must answer (an error is an answer; silence
// is a hang), and an HTTP route must answer below 500. It prints what each got.
func abuse(args []string) error {
	var c common
	fs := c.flagSet("abuse")
	base := fs.String("http", "", "the gateway's base URL (empty: no HTTP)")
	key := fs.String("key", "", "a user API key of --account for the HTTP routes")
	adminKey := fs.String("admin-key", "", "an admin API key of --account (DELETE /v1/users)")
	_ = fs.Parse(args)
	nc, js, names, err := connect(c)
	if err != nil {
		return err
	}
	defer nc.Close()
	res := map[string]int{}
	payloads := badPayloads()
	sess := c.run + "-abuse"

	// A turn that decodes but breaks the contract: another account in the payload, one message
	// over 256 KiB.
	now := time.Now().UTC()
	foreign := contract.TurnEvent{V: 1, EventID: c.run + "-abuse-foreign", AccountID: "someone-else", UserID: "u", SessionID: sess, Source: "loadtest",
		Messages: []contract.Message{{MessageID: c.run + "-abuse-foreign-m", Role: "user", CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: "not mine"}}}}, SentAt: now}
	big := foreign
	big.EventID, big.AccountID = c.run+"-abuse-big", c.account
	big.Messages = []contract.Message{{MessageID: c.run + "-abuse-big-m", Role: "user", CreatedAt: now, Parts: []contract.Part{{Type: contract.PartText, Text: strings.Repeat("word ", 300<<10/5)}}}}
	fb, _ := json.Marshal(foreign)
	bb, _ := json.Marshal(big)
	turnPayloads := map[string][]byte{"foreign account": fb, "message over 256 KiB": bb}
	for k, v := range payloads {
		turnPayloads[k] = v
	}

	ctx := context.Background()
	jsPublish := func(stream, subject, name string, data []byte) {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := js.PublishMsg(pctx, &nats.Msg{Subject: subject, Data: data,
			Header: nats.Header{jetstream.MsgIDHeader: []string{bus.MsgID(c.run, subject, name)}}})
		switch {
		case err == nil:
			res[stream+"_acked"]++
		case errors.Is(err, nats.ErrMaxPayload):
			res[stream+"_refused_max_payload"]++
		default:
			res[stream+"_refused"]++
		}
	}
	for name, data := range turnPayloads {
		jsPublish("turns", names.Turns(c.account, sess), name, data)
	}
	for name, data := range payloads {
		jsPublish("commits", names.Commits(c.account, sess), name, data)
		jsPublish("events", names.Event(contract.EventArchiveCreated, c.account, sess), name, data)
		for _, kind := range contract.EventKinds[1:] {
			jsPublish("events_other", names.Event(kind, c.account, sess), name, data)
		}
		if err := nc.Publish(names.Metrics("abuse", "x"), data); err == nil {
			res["metrics_published"]++
		}
	}
	// One payload over the server's max payload (1 MiB by default) on each stream.
	huge := bytes.Repeat([]byte("x"), 2<<20)
	jsPublish("turns", names.Turns(c.account, sess), "2 MiB", huge)
	jsPublish("commits", names.Commits(c.account, sess), "2 MiB", huge)

	for _, op := range rpcOps {
		for name, data := range payloads {
			rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
			msg, err := nc.RequestWithContext(rctx, names.RPC(c.account, op), data)
			cancel()
			switch {
			case err != nil && errors.Is(err, nats.ErrMaxPayload):
				res["rpc_refused_max_payload"]++
			case err != nil:
				res["rpc_no_answer"]++
				fmt.Fprintf(os.Stderr, "abuse: rpc %s with %s: no answer: %v\n", op, name, err)
			case msg.Header.Get("Nats-Service-Error-Code") != "":
				res["rpc_error_answers"]++
			default:
				res["rpc_ok_answers"]++
			}
		}
	}

	if *base != "" {
		if err := abuseHTTP(ctx, *base, *key, *adminKey, payloads, res); err != nil {
			return err
		}
	}
	printJSON(res)
	return nil
}

// route is one method and path template of the OpenAPI document.
type route struct{ method, path string }

// openAPIRoutes reads the paths and methods of the gateway's /openapi.yaml (two-space
// indented paths, four-space indented methods: the file's own layout).
func openAPIRoutes(ctx context.Context, base string) ([]route, error) {
	body, status, err := httpDo(ctx, http.MethodGet, base+"/openapi.yaml", "", nil)
	if err != nil {
		return nil, fmt.Errorf("GET /openapi.yaml: %w", err)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET /openapi.yaml: status %d", status)
	}
	var out []route
	path := ""
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "  /") && strings.HasSuffix(line, ":"):
			path = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case path != "" && strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     ") && strings.HasSuffix(line, ":"):
			m := strings.ToUpper(strings.TrimSuffix(strings.TrimSpace(line), ":"))
			switch m {
			case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
				out = append(out, route{m, path})
			}
		case !strings.HasPrefix(line, " ") && line != "":
			path = ""
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no routes in /openapi.yaml")
	}
	return out, nil
}

var httpClient = &http.Client{Timeout: 20 * time.Second}

func httpDo(ctx context.Context, method, u, key string, body []byte) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return b, resp.StatusCode, err
}

// abuseHTTP sends every bad body to every route with a body, and odd path values and query
// strings to every route; the long-lived dashboard stream is asked once, briefly.
func abuseHTTP(ctx context.Context, base, key, adminKey string, payloads map[string][]byte, res map[string]int) error {
	routes, err := openAPIRoutes(ctx, base)
	if err != nil {
		return err
	}
	pathValues := []string{"abuse-x", strings.Repeat("a", 600), "%00%ff", "..%2F..%2Fetc", "%E2%80%AE"}
	queries := []string{"", "?token_budget=-1&limit=abc&q=", "?q=" + strings.Repeat("q", 10000) + "&limit=999999999999", "?scope=%00&category=" + url.QueryEscape("';--")}
	for _, rt := range routes {
		if rt.path == "/v1/dashboard/stream" {
			continue // server-sent events: answers and stays open by design
		}
		k := key
		if rt.path == "/v1/users/{user_id}" {
			k = adminKey
		}
		takesBody := rt.method == http.MethodPost || rt.method == http.MethodDelete
		// Odd path values and query strings, with an empty object as the body.
		for _, pv := range pathValues {
			p := rt.path
			for _, param := range []string{"{session_id}", "{archive_id}", "{id}", "{user_id}"} {
				p = strings.ReplaceAll(p, param, pv)
			}
			if p == rt.path && pv != pathValues[0] {
				continue // no path parameter: one path is enough
			}
			for _, q := range queries {
				var b []byte
				if takesBody {
					b = []byte(`{}`)
				}
				countHTTP(ctx, res, rt, base+p+q, k, "{}", b)
			}
		}
		// Every bad body on a plain path.
		if takesBody {
			p := rt.path
			for _, param := range []string{"{session_id}", "{archive_id}", "{id}", "{user_id}"} {
				p = strings.ReplaceAll(p, param, pathValues[0])
			}
			for name, b := range payloads {
				countHTTP(ctx, res, rt, base+p, k, name, b)
			}
		}
	}
	// A body over the 1 MiB limit on every route that takes one.
	huge := []byte(`{"v":1,"query":"` + strings.Repeat("a", 2<<20) + `"}`)
	for _, rt := range routes {
		if rt.method == http.MethodPost {
			countHTTP(ctx, res, rt, base+strings.ReplaceAll(rt.path, "{session_id}", pathValues[0]), key, "2 MiB", huge)
		}
	}
	res["http_routes"] = len(routes)
	return nil
}

// countHTTP sends one request and counts its answer by class: below 500 is an answer; 5xx and
// no answer at all are what must not happen.
func countHTTP(ctx context.Context, res map[string]int, rt route, u, key, name string, body []byte) {
	_, status, err := httpDo(ctx, rt.method, u, key, body)
	switch {
	case err != nil && len(body) > 1<<20 && (errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)):
		// The server answered 413 and closed the connection while the client was still
		// sending the rest: refused, loudly (a crash shows in the health check after).
		res["http_413"]++
	case err != nil:
		res["http_no_answer"]++
		fmt.Fprintf(os.Stderr, "abuse: %s %s (%s): %v\n", rt.method, rt.path, name, err)
	case status == http.StatusServiceUnavailable && rt.path == "/readyz":
		res["http_readyz_503"]++ // not ready is readyz's answer while a dependency recovers
	case status >= 500:
		res["http_5xx"]++
		fmt.Fprintf(os.Stderr, "abuse: %s %s (%s): %d\n", rt.method, rt.path, name, status)
	case status == http.StatusRequestEntityTooLarge:
		res["http_413"]++
	case status >= 400:
		res["http_4xx"]++
	default:
		res["http_2xx"]++
	}
}
