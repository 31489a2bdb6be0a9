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
	keys   map[string]*queue // present while the key's goroutine runs
	wg     sync.WaitGroup
}

// queue is one key's work: what waits, and whether what runs is slow.
type queue struct {
	waiting []work
	slow    bool
}

type work struct {
	f    func()
	slow bool
}

// Go runs f after the work of key queued before it, or at once on a
// goroutine of its own when key is "". It reports false, running nothing,
// once Close was called.
func (q *Queues) Go(key string, f func()) bool { return q.add(key, work{f: f}, false) }

// GoSlow is Go for work that may block long on something of its own (a
// file to open, an export to write) without changing what a query of the
// key reads until it ends: a query may run beside it (GoQuery).
func (q *Queues) GoSlow(key string, f func()) bool { return q.add(key, work{f: f, slow: true}, false) }

// GoQuery is Go for work that only reads: when the key's running work is
// slow (GoSlow) and nothing waits behind it, f runs at once beside it,
// and sees the key as it was before that work, as if it came first.
func (q *Queues) GoQuery(key string, f func()) bool { return q.add(key, work{f: f}, true) }

func (q *Queues) add(key string, w work, query bool) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	k, running := q.keys[key]
	if key == "" || query && running && k.slow && len(k.waiting) == 0 {
		q.wg.Go(w.f)
		return true
	}
	if running {
		k.waiting = append(k.waiting, w)
		return true
	}
	if q.keys == nil {
		q.keys = map[string]*queue{}
	}
	k = &queue{slow: w.slow}
	q.keys[key] = k
	q.wg.Go(func() {
		for {
			w.f()
			q.mu.Lock()
			if len(k.waiting) == 0 {
				delete(q.keys, key)
				q.mu.Unlock()
				return
			}
			w = k.waiting[0]
			k.waiting = k.waiting[1:]
			k.slow = w.slow
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
