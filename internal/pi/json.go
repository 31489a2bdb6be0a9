package pi

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// oneShot is e --mode json (json.md): the session header, then the events
// of each prompt in turn, then exit. As pi 1.6.0's print mode in json, a
// run that ends in an error or aborted is in its events (stopReason) and
// the next prompt still runs: the status is 0, and 1 only when a prompt
// could not start or a signal stopped the runs.
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
		if fr.ctx.Err() != nil { // a signal stopped the run: the prompts left do not run
			break
		}
		fr.mu.Lock()
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
	}
	if fr.ctx.Err() != nil {
		code = 1
	}
	fr.shutdown()
	return code
}
