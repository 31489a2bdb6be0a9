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

// StuckAfter is how long the running work of a key may block in a system
// call (Blocking) before the key's queries pass it.
const StuckAfter = 25 * time.Millisecond

// queue is one key's work: what waits, and the running work's blocking
// section.
type queue struct {
	waiting []work
	blocked *time.Timer // nil outside a blocking section
	stuck   bool        // the section has lasted StuckAfter
}

type work struct {
	f     func()
	query bool
}

// Go runs f after the work of key queued before it, or at once on a
// goroutine of its own when key is "". It reports false, running nothing,
// once Close was called.
func (q *Queues) Go(key string, f func()) bool { return q.add(key, work{f: f}) }

// GoQuery is Go for work that only reads: it keeps its place, unless the
// key's running work is stuck in a blocking section (Blocking) with no
// other work before the query, when it runs at once beside it, and sees
// the key as it was before that work.
func (q *Queues) GoQuery(key string, f func()) bool { return q.add(key, work{f: f, query: true}) }

func (q *Queues) add(key string, w work) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	k, running := q.keys[key]
	if key == "" || w.query && running && k.stuck && len(k.waiting) == 0 {
		q.wg.Go(w.f)
		return true
	}
	if running {
		k.waiting = append(k.waiting, w)
		return true
	}
	k = q.open(key)
	q.wg.Go(func() {
		w.f()
		q.next(key, k)
	})
	return true
}

// Now is Go for quick work that must take effect before the caller reads
// its next line (an interrupt, before the client's answer to the question
// it interrupts): when nothing of key runs or waits, f runs here, on the
// caller's goroutine; else it keeps its place in key's queue.
func (q *Queues) Now(key string, f func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if k, running := q.keys[key]; running {
		k.waiting = append(k.waiting, work{f: f})
		q.mu.Unlock()
		return true
	}
	var k *queue
	if key != "" {
		k = q.open(key)
	}
	q.wg.Add(1)
	q.mu.Unlock()
	defer q.wg.Done()
	f()
	if k != nil {
		q.mu.Lock()
		defer q.mu.Unlock()
		if len(k.waiting) == 0 {
			delete(q.keys, key)
		} else { // queued meanwhile by another goroutine: not run here
			q.wg.Go(func() { q.next(key, k) })
		}
	}
	return true
}

// open marks key as running; q.mu is held.
func (q *Queues) open(key string) *queue {
	if q.keys == nil {
		q.keys = map[string]*queue{}
	}
	k := &queue{}
	q.keys[key] = k
	return k
}

// next runs key's waiting work in order, then marks key idle.
func (q *Queues) next(key string, k *queue) {
	for {
		q.mu.Lock()
		if len(k.waiting) == 0 {
			delete(q.keys, key)
			q.mu.Unlock()
			return
		}
		w := k.waiting[0]
		k.waiting = k.waiting[1:]
		q.mu.Unlock()
		w.f()
	}
}

// Blocking marks the start of a blocking section of key's running work,
// called from that work: a system call that may never return (the open of
// a file that may be a FIFO), before which the work changed nothing a
// query reads. Once the section has lasted StuckAfter, the queries at the
// front of the key's queue, and those that come while nothing else waits,
// run beside it (GoQuery). end marks the section's end.
func (q *Queues) Blocking(key string) (end func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	k, ok := q.keys[key]
	if !ok || k.blocked != nil {
		return func() {}
	}
	var t *time.Timer
	t = time.AfterFunc(StuckAfter, func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		if k.blocked != t {
			return // the section ended
		}
		k.stuck = true
		for len(k.waiting) > 0 && k.waiting[0].query {
			q.wg.Go(k.waiting[0].f)
			k.waiting = k.waiting[1:]
		}
	})
	k.blocked = t
	return func() {
		q.mu.Lock()
		defer q.mu.Unlock()
		t.Stop()
		k.blocked, k.stuck = nil, false
	}
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
