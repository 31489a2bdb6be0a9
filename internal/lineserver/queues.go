package lineserver

import (
	"sync"
	"time"
)

// Queues runs a front end's requests by key (H1): the requests of one key
// (the session they name) run one at a time in the order they came, so a
// steer still reaches the turn it follows; requests of different keys, and
// those of no key (process-level: hello, a list, a create), run at once, so
// none waits on another session's work: a slow MCP start, a big export, a
// stuck file. The zero value is ready to use.
type Queues struct {
	mu     sync.Mutex
	closed bool
	keys   map[string][]func() // a key's waiting work; present while its goroutine runs
	wg     sync.WaitGroup
}

// Go runs f after the work of key queued before it, or at once on a
// goroutine of its own when key is "". It reports false, running nothing,
// once Close was called.
func (q *Queues) Go(key string, f func()) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	if key == "" {
		q.wg.Go(f)
		return true
	}
	if waiting, ok := q.keys[key]; ok {
		q.keys[key] = append(waiting, f)
		return true
	}
	if q.keys == nil {
		q.keys = map[string][]func(){}
	}
	q.keys[key] = nil
	q.wg.Go(func() {
		for {
			f()
			q.mu.Lock()
			waiting := q.keys[key]
			if len(waiting) == 0 {
				delete(q.keys, key)
				q.mu.Unlock()
				return
			}
			f = waiting[0]
			q.keys[key] = waiting[1:]
			q.mu.Unlock()
		}
	})
	return true
}

// Close refuses new work and waits up to grace for the work queued and
// running to end; it reports whether it did. Work still running after
// grace (a handler stuck in a system call) is left behind: the process
// ends without it (H2).
func (q *Queues) Close(grace time.Duration) bool {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	done := make(chan struct{})
	go func() {
		q.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
