package gateway_test

import (
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/micro"

	"github.com/membus/membus/pkg/contract"
)

// TestArchiveRoutes: the archive tools' routes send the caller's account (the subject) and
// user, whatever the request says, and map a foreign id (not_found from recall) to 404.
func TestArchiveRoutes(t *testing.T) {
	e := newEnv(t)
	searchCalls := e.serve("archive.search", respond(contract.ArchiveSearchResponse{V: 1, SessionID: "s1", Query: "Denver",
		Archives: []contract.ArchiveMatch{{ArchiveID: "a1", FromSeq: 1, ToSeq: 4,
			Matches: []contract.ArchiveLine{{Seq: 2, MessageID: "m2", Role: "user", Lines: []string{"moving to Denver"}}}}}}))
	expandCalls := e.serve("archive.expand", func(req micro.Request) {
		var body contract.ArchiveExpandRequest
		_ = json.Unmarshal(req.Data(), &body)
		if body.ArchiveID != "a1" {
			respondError("not_found", "no such archive")(req)
			return
		}
		respond(contract.ArchiveExpandResponse{V: 1, ArchiveID: "a1", SessionID: "s1", FromSeq: 1, ToSeq: 1,
			Messages: []contract.ArchiveMessage{{Seq: 1, MessageID: "m1", Role: "user", Content: "hello"}}})(req)
	})
	hdr := bearer(e.userKey)
	hdr["X-Membus-Account"] = "globex"

	rec := e.do("GET", "/v1/sessions/s1/archives/search?q=Denver&limit=5&account_id=globex&user_id=carol", nil, hdr)
	c := nextCall(t, searchCalls)
	if rec.Code != 200 || c.Account != "acme" || c.Body["user_id"] != "alice" || c.Body["session_id"] != "s1" ||
		c.Body["query"] != "Denver" || c.Body["limit"] != float64(5) {
		t.Fatalf("search: %d %s, call %+v", rec.Code, rec.Body.String(), c)
	}
	var sr contract.ArchiveSearchResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &sr); err != nil || len(sr.Archives) != 1 || sr.Archives[0].Matches[0].Lines[0] != "moving to Denver" {
		t.Fatalf("search answer %s", rec.Body.String())
	}

	rec = e.do("GET", "/v1/archives/a1", nil, hdr)
	c = nextCall(t, expandCalls)
	if rec.Code != 200 || c.Account != "acme" || c.Body["user_id"] != "alice" || c.Body["archive_id"] != "a1" {
		t.Fatalf("expand: %d %s, call %+v", rec.Code, rec.Body.String(), c)
	}
	rec = e.do("GET", "/v1/archives/someone-elses", nil, hdr)
	nextCall(t, expandCalls)
	if code, _ := errorBody(t, rec); rec.Code != 404 || code != "not_found" {
		t.Fatalf("foreign archive: %d %s, want 404 not_found", rec.Code, rec.Body.String())
	}

	bad := []struct{ name, path string }{
		{"no q", "/v1/sessions/s1/archives/search"},
		{"bad limit", "/v1/sessions/s1/archives/search?q=x&limit=-1"},
		{"limit over 200", "/v1/sessions/s1/archives/search?q=x&limit=201"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			if rec := e.do("GET", tc.path, nil, bearer(e.userKey)); rec.Code != 400 {
				t.Fatalf("status %d, want 400: %s", rec.Code, rec.Body.String())
			}
		})
	}
	if rec := e.do("GET", "/v1/archives/a1", nil, nil); rec.Code != 401 {
		t.Fatalf("without a key: %d, want 401", rec.Code)
	}
}
