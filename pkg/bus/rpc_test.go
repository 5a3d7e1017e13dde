package bus

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"
)

type echoReq struct {
	Q string `json:"q"`
}
type echoResp struct {
	Account string `json:"account"`
	Q       string `json:"q"`
}

func TestRPC(t *testing.T) {
	b := newTestBus(t)
	srv, err := NewRPCServer(b.nc, b.n, "recall", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if err := srv.Handle("memories.list", func(ctx context.Context, account string, req micro.Request) {
		var r echoReq
		_ = json.Unmarshal(req.Data(), &r)
		if r.Q == "missing" {
			_ = RespondError(req, CodeNotFound, errors.New("memory m1 not found"))
			return
		}
		go func() { // async answer from another goroutine
			time.Sleep(10 * time.Millisecond)
			_ = RespondJSON(req, echoResp{Account: account, Q: r.Q})
		}()
	}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle("Bad Op", nil); !errors.Is(err, ErrInvalidOp) {
		t.Errorf("Handle(bad op) err = %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tests := []struct {
		name     string
		subject  string
		q        string
		wantCode string
		wantAcct string
	}{
		{"account comes from the subject", b.n.RPC("acme", "memories.list"), "hi", "", "acme"},
		{"another tenant", b.n.RPC("other", "memories.list"), "hi", "", "other"},
		{"handler error reaches the caller", b.n.RPC("acme", "memories.list"), "missing", CodeNotFound, ""},
		{"invalid account is refused before the handler", b.n.RPC("ACME", "memories.list"), "hi", CodeBadRequest, ""},
		{"nobody serves the op", b.n.RPC("acme", "nothing"), "hi", CodeUnavailable, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var resp echoResp
			err := Call(ctx, b.nc, tc.subject, echoReq{Q: tc.q}, &resp)
			if tc.wantCode != "" {
				var ce *RPCCallError
				if !errors.As(err, &ce) || ce.Code != tc.wantCode || ce.Message == "" {
					t.Fatalf("Call err = %v, want RPCCallError code %s", err, tc.wantCode)
				}
				return
			}
			if err != nil || resp.Account != tc.wantAcct || resp.Q != tc.q {
				t.Fatalf("Call = %+v, %v", resp, err)
			}
		})
	}
}
