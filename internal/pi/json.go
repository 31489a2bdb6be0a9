package pi

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// oneShot is e --mode json (json.md): the session header, then the events
// of each prompt in turn, then exit. The status is 1 when a prompt's run
// ended in an error or was aborted.
func (fr *front) oneShot() int {
	fr.mu.Lock()
	sess := fr.cur
	h := sess.Header()
	fr.mu.Unlock()
	fr.write(SessionHeader{Type: "session", Version: 3, ID: sess.ID(), Timestamp: h.Created.UTC().Format(isoMillis),
		Cwd: sess.Cwd(), ParentSession: h.Parent})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-sigs:
			fr.stop() // the running turn ends aborted; its last events still go out
		case <-fr.ctx.Done():
		}
	}()
	code := 0
	for _, text := range fr.flags.Messages {
		fr.mu.Lock()
		fr.failed = false
		due := fr.claimCompactBefore()
		fr.mu.Unlock()
		if due { // as rpc's prompt: a resumed session over the threshold compacts first
			fr.compactBefore(sess)
		}
		if err := fr.startRun(Expand(text, fr.templates), nil, nil, func() {}); err != nil {
			fmt.Fprintf(fr.env.Stderr, "e --mode json: %v\n", err)
			code = 1
			break
		}
		fr.mu.Lock()
		done := fr.runDone
		fr.mu.Unlock()
		<-done
		fr.mu.Lock()
		failed := fr.failed
		fr.mu.Unlock()
		if failed {
			code = 1
			break
		}
	}
	fr.shutdown()
	return code
}
