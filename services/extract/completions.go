package extract

import (
	"sync"

	"github.com/membus/membus/pkg/contract"
)

// completions hands a commit's completion to the synchronous commits of this process that
// wait for it, as soon as the commit's last transaction is done. The commit_completed event
// still goes through the outbox for everyone else (and for waiters on other replicas, which
// hear it on the bus): this only spares a waiter of the same process the relay's read, the
// publish and the delivery. A waiter takes whichever comes first.
type completions struct {
	mu      sync.Mutex
	waiters map[completionKey][]chan<- contract.Event
}

// completionKey names a waited-for commit: request ids are the callers' own, so one account's
// id says nothing of another's.
type completionKey struct{ account, session, requestID string }

// wait registers ch for the completion of the session's request until the returned function
// is called. ch must be buffered: notify never blocks.
func (c *completions) wait(account, session, requestID string, ch chan<- contract.Event) (stop func()) {
	key := completionKey{account, session, requestID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiters == nil {
		c.waiters = map[completionKey][]chan<- contract.Event{}
	}
	c.waiters[key] = append(c.waiters[key], ch)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		ws := c.waiters[key]
		for i, w := range ws {
			if w == ch {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(c.waiters, key)
		} else {
			c.waiters[key] = ws
		}
	}
}

// notify passes ev, a commit_completed whose outbox row is committed, to the waiters of its
// request.
func (c *completions) notify(ev contract.Event) {
	if ev.RequestID == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ch := range c.waiters[completionKey{ev.AccountID, ev.SessionID, ev.RequestID}] {
		select {
		case ch <- ev:
		default:
		}
	}
}
