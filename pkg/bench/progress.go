package bench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress is a one-line progress bar for stderr, redrawn in place with
// \r at most every Interval. A nil *Progress, or one made with a nil
// writer, does nothing, so callers need no checks.
type Progress struct {
	w        io.Writer
	label    string
	total    int
	interval time.Duration
	now      func() time.Time

	mu    sync.Mutex
	done  int
	start time.Time
	last  time.Time
	drawn bool
}

// DefaultProgressInterval is the redraw rate limit.
const DefaultProgressInterval = 200 * time.Millisecond

// NewProgress returns a progress bar writing to w (nil = a no-op bar) for
// total units of work (0 = unknown: count and rate only).
func NewProgress(w io.Writer, label string, total int) *Progress {
	if w == nil {
		return nil
	}
	return &Progress{w: w, label: label, total: total, interval: DefaultProgressInterval, now: time.Now, start: time.Now()}
}

// Add records n more units done and redraws if the rate limit allows.
func (p *Progress) Add(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := p.now()
	if p.drawn && now.Sub(p.last) < p.interval {
		return
	}
	p.draw(now, false)
}

// Done draws the final state and ends the line.
func (p *Progress) Done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(p.now(), true)
}

func (p *Progress) draw(now time.Time, final bool) {
	p.last, p.drawn = now, true
	rate := 0.0
	if el := now.Sub(p.start).Seconds(); el > 0 {
		rate = float64(p.done) / el
	}
	var line string
	if p.total > 0 {
		frac := min(float64(p.done)/float64(p.total), 1)
		const width = 24
		filled := int(frac * width)
		line = fmt.Sprintf("\r%s [%s%s] %3.0f%% %d/%d %.0f/s", p.label,
			strings.Repeat("#", filled), strings.Repeat(".", width-filled), 100*frac, p.done, p.total, rate)
	} else {
		line = fmt.Sprintf("\r%s %d done %.0f/s %s", p.label, p.done, rate, now.Sub(p.start).Truncate(100*time.Millisecond))
	}
	if final {
		line += "\n"
	}
	// Progress is best effort: a failed write to stderr is not the bench's
	// failure.
	_, _ = io.WriteString(p.w, line)
}
