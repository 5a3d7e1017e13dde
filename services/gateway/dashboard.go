package gateway

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/membus/membus/services/gateway/request"
)

// The dashboard's routes.
const (
	routeDashboard       = "GET /dashboard"
	routeDashboardStream = "GET /v1/dashboard/stream"
)

// Frame interval of the dashboard stream (?interval_ms=).
const (
	dashDefaultInterval = 2 * time.Second
	dashMinInterval     = 200 * time.Millisecond
	dashMaxInterval     = time.Minute
)

//go:embed dashboard/index.html
var dashboardFS embed.FS

// dashboardCSP lets the page run its own inline script and style and talk to this origin only.
const dashboardCSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// dashboardPage serves the dashboard (GET /dashboard): one static page, no figures in it and
// no key needed to load it. The page asks for an admin or operator key, keeps it in the tab's
// sessionStorage, and reads GET /v1/dashboard/stream with it, which refuses user keys.
func (s *Service) dashboardPage(w http.ResponseWriter, _ *http.Request) {
	page, err := dashboardFS.ReadFile("dashboard/index.html")
	if err != nil {
		writeError(w, &request.Error{Status: http.StatusInternalServerError, Code: codeInternal, Message: "dashboard missing from the build"})
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", dashboardCSP)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	_, _ = w.Write(page)
}

// dashboardStream answers GET /v1/dashboard/stream?interval_ms= with server-sent events: one
// `frame` event (a dashFrame in JSON) every interval (default 2 s), until the client goes
// away or the gateway shuts down. Admin keys see their account; operator keys every account.
func (s *Service) dashboardStream(w http.ResponseWriter, r *http.Request, id identity) {
	interval := dashDefaultInterval
	if v := r.URL.Query().Get("interval_ms"); v != "" {
		ms, err := strconv.Atoi(v)
		d := time.Duration(ms) * time.Millisecond
		if err != nil || d < dashMinInterval || d > dashMaxInterval {
			writeError(w, request.BadRequest(fmt.Sprintf("interval_ms must be %d–%d", dashMinInterval.Milliseconds(), dashMaxInterval.Milliseconds())))
			return
		}
		interval = d
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	feed := s.newDashFeed(id)
	defer feed.stop()
	if err := feed.start(ctx); err != nil {
		s.log.Warn("dashboard stream: subscribe", "error", err.Error())
		writeError(w, unavailable("the bus is unavailable; retry"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies must not buffer the stream
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) error {
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, data); err != nil {
			return err
		}
		return rc.Flush()
	}
	if _, err := fmt.Fprintf(w, "retry: 3000\n\n"); err != nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := send("frame", feed.frame(ctx)); err != nil {
			return // the client went away
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stopStreams:
			return
		case <-t.C:
		}
	}
}
