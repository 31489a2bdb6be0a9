package conformance

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"
)

// RecordOptions configure Record.
type RecordOptions struct {
	Server   []string  // the server command
	Out      string    // the case file to write; its base name is the id
	Model    string    // default_model when there is no upstream; default e/offline
	Upstream string    // OpenAI-compatible base URL to forward model calls to, e.g. https://host/v1
	APIKey   string    // sent upstream as a bearer token
	Stdin    io.Reader // the client's lines
	Stdout   io.Writer // the server's lines, passed through
	Stderr   io.Writer // the server's stderr, passed through

	// Here records in the current directory and $E_HOME as they are
	// instead of fresh ones: the runner has set them up, so a golden
	// case can be re-recorded through e-conformance record as its
	// server. The model calls go to the tape provider of
	// $E_HOME/settings.json, which now points at the recorder, and the
	// server gets this process's environment.
	Here bool
	// NoTrust skips "e trust CWD" before the server starts (cases about
	// trust).
	NoTrust bool
	// Like is a case file whose description, header and sections other
	// than client, expect and tape.json (fixtures, files, stderr.re) the
	// recording takes, so a re-recorded golden case runs as the original.
	Like string
	// Dialect is the protocol the server speaks (DialectERPC, DialectPi,
	// DialectACP); "" takes Like's, else the one the server command
	// names (DialectOf).
	Dialect string
}

// DialectOf is the dialect a server command speaks: acp for "e acp …",
// pi-rpc for "e --mode rpc …", else e-rpc.
func DialectOf(argv []string) string {
	for i, a := range argv {
		switch {
		case a == "acp":
			return DialectACP
		case a == "--mode=rpc" || a == "--mode" && i+1 < len(argv) && argv[i+1] == "rpc":
			return DialectPi
		case a == "rpc":
			return DialectERPC
		}
	}
	return DialectERPC
}

// rpcCommand is the e rpc command a server command of dialect d is
// derived from (section 1.5 backwards: "e acp" → "e rpc", "e --mode rpc"
// → "e rpc"), without the server arguments after it, from which "e trust"
// is derived.
func rpcCommand(argv []string, d string) []string {
	for i := len(argv) - 1; i >= 0; i-- {
		switch {
		case d == DialectACP && argv[i] == "acp",
			d == DialectPi && argv[i] == "--mode=rpc",
			d == DialectPi && argv[i] == "--mode" && i+1 < len(argv) && argv[i+1] == "rpc":
			return append(append([]string{}, argv[:i]...), "rpc")
		}
	}
	return uptoRPC(argv)
}

// Record proxies one client session to a fresh server (as a case would
// start it), then writes what happened as a draft case: the client lines
// with waits, the server's lines as expectations, and the model calls as
// a tape, volatile values replaced by placeholders (spec/conformance.md,
// section 5).
//
// It returns how the server ended, so that the recorder can end the same
// way (ExitLike).
func Record(ctx context.Context, o RecordOptions) (*os.ProcessState, error) {
	if len(o.Server) == 0 || o.Out == "" {
		return nil, fmt.Errorf("conformance: record needs a server command and an output file")
	}
	// The case's id is --out's base name: one the runner would refuse
	// must fail now, before the session, not when the case is replayed.
	if err := checkOutID(o.Out); err != nil {
		return nil, err
	}
	// The session is only written at its end: a directory that cannot
	// hold the file must fail now, not lose it.
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return nil, fmt.Errorf("conformance: record: %w", err)
	}
	rec := &recorder{upstream: strings.TrimSuffix(o.Upstream, "/"), key: o.APIKey}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 10 * time.Second}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv.Serve(ln)
	}()
	defer func() {
		srv.Close()
		wg.Wait()
	}()
	baseURL := "http://" + ln.Addr().String() + "/v1"
	model := o.Model
	if model == "" && o.Upstream == "" && !o.Here {
		model = "e/offline"
	}
	var like *archive
	var likeCase *Case
	if o.Like != "" {
		data, err := os.ReadFile(o.Like)
		if err != nil {
			return nil, fmt.Errorf("conformance: record: %w", err)
		}
		if likeCase, err = parseCase(data); err != nil {
			return nil, fmt.Errorf("conformance: record: %s: %w", o.Like, err)
		}
		like = parseArchive(data)
	}
	dialect := o.Dialect
	switch {
	case dialect != "":
	case likeCase != nil:
		dialect = cmp.Or(likeCase.Dialect, DialectERPC)
	default:
		dialect = DialectOf(o.Server)
	}
	if dialect == DialectERPC {
		dialect = ""
	}
	c := &Case{ID: strings.TrimSuffix(filepath.Base(o.Out), ".txtar"), Level: "MUST", Requirements: []string{"F2"}, Model: model, Dialect: dialect}
	d := dialectOf(c)
	var cwd, home string
	env := []string(nil)
	if o.Here {
		var restore func()
		if cwd, home, restore, err = recordHere(rec, baseURL, dialect == DialectPi); err != nil {
			return nil, err
		}
		defer restore()
		env = os.Environ()
	} else {
		tmp, err := os.MkdirTemp("", "e-conformance-record-")
		if err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		defer os.RemoveAll(tmp)
		if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
			return nil, fmt.Errorf("conformance: %w", err)
		}
		cwd, home = filepath.Join(tmp, "cwd"), filepath.Join(tmp, "home")
		if err := writeFixtures(c, cwd, home, baseURL); err != nil {
			return nil, err
		}
		// A client names the session's directory (ACP's session/new
		// requires it): the first line on stderr says where it is.
		if o.Stderr != nil {
			fmt.Fprintf(o.Stderr, "e-conformance record: cwd %s\n", cwd)
		}
		// pi's configuration is the case's too, as the runner sets it.
		env = serverEnv(home, map[string]string{"PI_CODING_AGENT_DIR": piAgentDir(home)})
	}
	if !o.NoTrust {
		trustDir(rpcCommand(o.Server, cmp.Or(dialect, DialectERPC)), cwd, home, nil)
	}
	cmd := exec.CommandContext(ctx, o.Server[0], o.Server[1:]...)
	cmd.Dir, cmd.Env = cwd, env
	ownGroup(cmd)
	cmd.Stderr = o.Stderr
	cmd.WaitDelay = time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	defer stdout.Close()
	cmd.Stdout = pw
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer signal.Stop(sigs)
	began := time.Now()
	err = cmd.Start()
	pw.Close()
	if err != nil {
		return nil, fmt.Errorf("conformance: starting %q: %w", strings.Join(o.Server, " "), err)
	}
	defer killGroup(cmd)

	var mu sync.Mutex
	var log []recorded
	eofAt := -1 // where in log the client closed stdin
	var copier sync.WaitGroup
	copier.Add(1)
	go func() {
		defer copier.Done()
		br := bufio.NewReaderSize(stdout, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				mu.Lock()
				log = append(log, recorded{line: strings.TrimSuffix(string(line), "\n")})
				o.Stdout.Write(line)
				mu.Unlock()
			}
			if err != nil {
				return
			}
		}
	}()
	// The client's lines go to the server until the client closes stdin
	// or the server exits (shutdown): the recorder exits with the server.
	clientDone := make(chan struct{})
	go func() {
		defer close(clientDone)
		br := bufio.NewReaderSize(o.Stdin, 1<<16)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				l := recorded{client: true, line: strings.TrimSuffix(string(line), "\n"), noLF: !bytes.HasSuffix(line, []byte("\n"))}
				stop, _ := stopOf(d, l)
				rec.sent(stop)
				mu.Lock()
				log = append(log, l)
				mu.Unlock()
				if _, werr := stdin.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				rec.sent(true) // EOF ends what still runs
				mu.Lock()
				eofAt = len(log)
				mu.Unlock()
				return
			}
		}
	}()
	serverDone := make(chan struct{})
	go func() { copier.Wait(); close(serverDone) }()
	// A signal the client sends the recorder is the server's, and a
	// #signal in the case.
	go func() {
		for {
			select {
			case sig := <-sigs:
				rec.sent(true)
				mu.Lock()
				log = append(log, recorded{client: true, directive: "#signal " + signalName(sig)})
				mu.Unlock()
				cmd.Process.Signal(sig)
			case <-serverDone:
				return
			}
		}
	}()
	exitedAlone := false
	select {
	case <-clientDone:
	case <-serverDone:
		exitedAlone = true // with stdin open (shutdown, a signal)
	}
	stdin.Close()
	<-serverDone // until the server closes stdout
	werr := cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	c.Exit = strconv.Itoa(cmd.ProcessState.ExitCode())
	if code, sig := exitStatus(werr); sig != 0 || code < 0 {
		c.Exit = "any" // killed: exec reports no exit status
	}
	if exitedAlone {
		log = append(log, recorded{client: true, directive: "#exit"})
	} else if eofAt >= 0 {
		log, c.Exit = closeAt(log, eofAt, c.Exit)
	}
	c.TimeoutMS = recordedTimeout(time.Since(began))
	bindings := map[string]any{"cwd": cwd, "home": home}
	if likeCase != nil {
		learnNames(likeCase, log, bindings)
	}
	out, err := draftCase(c, log, rec.tape(stopsWork(d, log)), bindings)
	if err != nil {
		return nil, err
	}
	if like != nil {
		out = takeFrom(like, parseArchive(out))
	}
	if err := os.WriteFile(o.Out, out, 0o644); err != nil {
		return nil, fmt.Errorf("conformance: %w", err)
	}
	return cmd.ProcessState, nil
}

// recordHere points the tape provider of $E_HOME/settings.json at the
// recorder, forwarding to where it pointed (and, for pi, the providers of
// $PI_CODING_AGENT_DIR/models.json that point there too); it returns the
// current directory, $E_HOME, and what puts the settings back.
func recordHere(rec *recorder, baseURL string, pi bool) (cwd, home string, restore func(), err error) {
	if cwd, err = os.Getwd(); err == nil {
		cwd, err = filepath.EvalSymlinks(cwd)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: record --here: %w", err)
	}
	if home = os.Getenv("E_HOME"); home == "" {
		return "", "", nil, fmt.Errorf("conformance: record --here: E_HOME is not set")
	}
	p := filepath.Join(home, "settings.json")
	data, err := os.ReadFile(p)
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: record --here: %w", err)
	}
	var settings map[string]any
	if err := json.Unmarshal(data, &settings); err != nil {
		return "", "", nil, fmt.Errorf("conformance: record --here: %s: %w", p, err)
	}
	tape, _ := settings["providers"].(map[string]any)["tape"].(map[string]any)
	if tape == nil {
		return "", "", nil, fmt.Errorf("conformance: record --here: %s declares no tape provider", p)
	}
	old, _ := tape["base_url"].(string)
	if rec.upstream == "" {
		rec.upstream = strings.TrimSuffix(old, "/")
	}
	if rec.key == "" {
		env, _ := tape["api_key_env"].(string)
		rec.key = os.Getenv(env)
	}
	tape["base_url"] = baseURL
	mine, err := json.Marshal(settings)
	if err == nil {
		err = os.WriteFile(p, mine, 0o644)
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("conformance: record --here: %w", err)
	}
	restore = func() { os.WriteFile(p, data, 0o644) }
	if pi {
		undo, err := pointPiModels(old, baseURL)
		if err != nil {
			restore()
			return "", "", nil, err
		}
		restore = func() { os.WriteFile(p, data, 0o644); undo() }
	}
	return cwd, home, restore, nil
}

// pointPiModels points the providers of $PI_CODING_AGENT_DIR/models.json
// whose baseUrl is old at baseURL; it returns what puts the file back.
func pointPiModels(old, baseURL string) (restore func(), err error) {
	dir := os.Getenv("PI_CODING_AGENT_DIR")
	if dir == "" {
		return nil, fmt.Errorf("conformance: record --here: PI_CODING_AGENT_DIR is not set")
	}
	p := filepath.Join(dir, "models.json")
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("conformance: record --here: %w", err)
	}
	var models map[string]any
	if err := json.Unmarshal(data, &models); err != nil {
		return nil, fmt.Errorf("conformance: record --here: %s: %w", p, err)
	}
	providers, _ := models["providers"].(map[string]any)
	for _, v := range providers {
		if pr, ok := v.(map[string]any); ok && pr["baseUrl"] == old {
			pr["baseUrl"] = baseURL
		}
	}
	mine, err := json.Marshal(models)
	if err == nil {
		err = os.WriteFile(p, mine, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("conformance: record --here: %w", err)
	}
	return func() { os.WriteFile(p, data, 0o644) }, nil
}

// learnNames adds to bindings the values that like's sent lines bind to
// their placeholders, reading them from the client lines recorded, so
// that the recording keeps like's names (its files section uses them).
// The n-th line sent is the n-th recorded; a line that does not match
// its template teaches nothing.
func learnNames(like *Case, log []recorded, bindings map[string]any) {
	var sent []string
	for _, l := range log {
		if l.client && l.directive == "" {
			sent = append(sent, l.line)
		}
	}
	i := 0
	for _, st := range like.client {
		if st.kind != "send" && st.kind != "pad" {
			continue
		}
		if i >= len(sent) {
			return
		}
		line := sent[i]
		i++
		if st.kind == "pad" {
			continue
		}
		tmpl := string(st.text)
		var names []string
		var re strings.Builder
		re.WriteString("^")
		last := 0
		for _, m := range placeholderRE.FindAllStringSubmatchIndex(tmpl, -1) {
			re.WriteString(regexp.QuoteMeta(tmpl[last:m[0]]))
			re.WriteString("(.*?)")
			names = append(names, tmpl[m[2]:m[3]])
			last = m[1]
		}
		re.WriteString(regexp.QuoteMeta(tmpl[last:]) + "$")
		if len(names) == 0 {
			continue
		}
		m := regexp.MustCompile(re.String()).FindStringSubmatch(line)
		for j := 1; j < len(m); j++ {
			var v string // the capture is inside a JSON string, escaped
			if json.Unmarshal([]byte(`"`+m[j]+`"`), &v) == nil && bindings[names[j-1]] == nil {
				bindings[names[j-1]] = v
			}
		}
	}
	learnFromExpect(like, log, bindings)
}

// learnFromExpect adds to bindings what like's expected lines bind that
// its client lines do not (a session id only the server names, which a
// files section uses): each expected line with a placeholder binds what
// it binds in the first server line recorded that it matches. A value
// the client sent before any server line named it is the client's own
// text (a session title taken from the prompt), not one the server made:
// it stays literal, or the prompt would name a placeholder not bound yet.
func learnFromExpect(like *Case, log []recorded, bindings map[string]any) {
	var got []map[string]any
	for _, l := range log {
		if v, err := decode([]byte(l.line)); err == nil && !l.client {
			if obj, ok := v.(map[string]any); ok {
				got = append(got, obj)
			}
		}
	}
	m := &matcher{bindings: bindings}
	for _, e := range like.expect {
		if !strings.Contains(e.raw, "{{") {
			continue
		}
		for _, obj := range got {
			nb := map[string]any{}
			if m.match("", e.value, obj, true, nb) == nil {
				for k, v := range nb {
					if s, ok := v.(string); ok && clientFirst(log, jsonText(s)) {
						delete(nb, k)
					}
				}
				m.commit(nb)
				break
			}
		}
	}
}

// clientFirst reports whether a client line of log held text before any
// server line did.
func clientFirst(log []recorded, text string) bool {
	for _, l := range log {
		if strings.Contains(l.line, text) {
			return l.client
		}
	}
	return false
}

// jsonText is s as it appears inside a JSON string.
func jsonText(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	t := strings.TrimSuffix(b.String(), "\n")
	return t[1 : len(t)-1]
}

// asks reports whether a server line asks the client something it must
// answer: e rpc's ask and tool_call, pi's extension_ui_request, a JSON-RPC request of
// the agent's (ACP's session/request_permission).
func asks(l map[string]any) bool {
	_, id := l["id"]
	_, method := l["method"]
	return l["type"] == "ask" || l["type"] == "tool_call" || l["type"] == "extension_ui_request" || id && method
}

// uptoRPC is the server command up to its last "rpc" argument, without
// the server arguments after it, from which "e trust" is derived.
func uptoRPC(argv []string) []string {
	for i := len(argv) - 1; i >= 0; i-- {
		if argv[i] == "rpc" {
			return argv[:i+1]
		}
	}
	return argv
}

// takeFrom is a recording with the description, header and other
// sections of like, and the client, expect and tape.json of rec.
func takeFrom(like, rec *archive) []byte {
	out := &archive{comment: like.comment}
	recorded := map[string]bool{"client": true, "expect": true, "tape.json": true}
	for _, f := range like.files {
		if f.name == "case.json" {
			out.files = append(out.files, f)
			for _, r := range rec.files {
				if recorded[r.name] {
					out.files = append(out.files, r)
				}
			}
		} else if !recorded[f.name] {
			out.files = append(out.files, f)
		}
	}
	return formatArchive(out)
}

type recorded struct {
	client    bool
	line      string
	noLF      bool   // a client line that ended without LF (at EOF)
	directive string // a client directive instead of a line: #signal
}

// defaultRecordedTimeoutMS is a recorded case's timeout, unless the
// session took longer.
const defaultRecordedTimeoutMS = 10000

// recordedTimeout is the timeout of a case whose session took took: three
// times that, in whole seconds, so that a replay on a loaded machine has
// time for what the recording needed (a slow model, a long run).
func recordedTimeout(took time.Duration) int {
	s := (3*took + time.Second - 1) / time.Second
	return int(s) * 1000
}

// draftCase writes the recorded session as a case file.
// bindings name the values that become placeholders from the start.
func draftCase(c *Case, log []recorded, tape []map[string]any, bindings map[string]any) ([]byte, error) {
	d := dialectOf(c)
	n := newNormalizer(d, bindings)
	sent := &Case{Dialect: c.Dialect} // the client lines so far, as the case writes them
	b := expectBuilder{d: d, c: sent}
	var client strings.Builder
	pending := map[string]bool{} // the streams that got lines since the last wait
	labels := 0
	label := func(i int) string {
		if b.labels[i] == "" {
			labels++
			b.labels[i] = fmt.Sprintf("l%d", labels)
		}
		return b.labels[i]
	}
	cut := map[int]string{} // delta runs open when the client stopped work: their text then
	r := newRaces(d)
	var windows []stopWindow
	open := map[string]int{} // stream → its window in windows, from a stop to the stopped work's end
	// cutOpen notes the delta runs of session still streaming: their text
	// so far, which the client waited for, unless a window was open on
	// their stream (waits leave those out): then any text.
	cutOpen := func(session string) {
		for key, i := range b.last {
			_, text, ok := d.delta(b.lines[i])
			_, seen := cut[i]
			if ok && !seen && sessionScoped(d, n, b.lines[i], session) {
				if _, inWindow := open[key]; inWindow {
					text = ""
				}
				cut[i] = text
			}
		}
	}
	for _, l := range log {
		if l.client {
			// A window lasts until the work it is on ends, past the
			// client's next lines: what they ask for runs after that
			// work, or joins it (a steer, a follow-up), the timing's too.
			stop, session := stopOf(d, l)
			working := r.client(&b, n, l, session)
			if stop {
				if len(working) > 0 {
					r.stopped(session)
				}
				cutOpen(session) // before the windows this stop opens
				shown := b.working(n, session)
				// What has shown, and work asked for that has not shown yet.
				for _, key := range working {
					early := !slices.Contains(shown, key)
					if early {
						// Whether the stop lands before the work begins,
						// during it or after it is the timing's, and so
						// is the history it leaves.
						r.taint(session)
					}
					if w, ok := open[key]; ok { // a steer's, or an earlier stop's
						windows[w].stopped, windows[w].early = true, windows[w].early || early
						continue
					}
					open[key] = len(windows)
					windows = append(windows, stopWindow{key: key, from: len(b.lines), to: -1, stopped: true, early: early})
				}
			} else if len(working) > 0 && l.directive == "" && r.race(l.line, session, working) {
				// What the work does from here on depends on when the
				// line landed: as after a stop, the text streaming then
				// is cut there and a window opens, its texts loosened too.
				cutOpen(session)
				queued, isQueued := queuedMessage(d, n.rawLine(l.line))
				for _, key := range working {
					if _, ok := open[key]; !ok {
						open[key] = len(windows)
						windows = append(windows, stopWindow{key: key, from: len(b.lines), to: -1, steered: true})
					}
					if isQueued {
						windows[open[key]].queued = append(windows[open[key]].queued, queued)
					}
				}
				// Work the line itself asks for may be refused (the
				// session is busy) or run, as the timing decides: its
				// events are the timing's until its answer.
				if id, ok := requestID(l.line); ok {
					if key, ok := r.started[id]; ok {
						if _, ok := open[key]; !ok {
							open[key] = len(windows)
							windows = append(windows, stopWindow{key: key, from: len(b.lines), to: -1, own: true})
						}
					}
				}
			}
			if len(pending) > 0 {
				// The line (or EOF, or a signal, which ends what still
				// runs) came after every line received so far. Lines of
				// different streams may come in another order on another
				// run, so the wait names the latest line of each stream
				// that got lines since the last wait, not just the latest
				// (in a batch of calls that may run at once, its batch).
				var at []int
				for key := range pending {
					if w, ok := open[key]; ok && b.last[key] >= windows[w].from && !asks(b.lines[b.last[key]]) {
						// What stopped or steered work printed after the
						// line that raced it is the timing's: another run
						// may not print it at all. An ask is waited for:
						// the client answers it.
						continue
					}
					at = append(at, b.waitable(key, b.last[key]))
				}
				sort.Ints(at)
				var names []string
				for _, i := range at {
					names = append(names, label(i))
				}
				if len(names) > 0 {
					client.WriteString("#wait " + strings.Join(names, " ") + "\n")
				}
				clear(pending)
			}
			switch {
			case l.directive != "":
				client.WriteString(l.directive + "\n")
			case l.noLF || strings.TrimSpace(l.line) == "" || strings.HasPrefix(l.line, "#") || strings.HasPrefix(l.line, "-- ") || strings.HasSuffix(l.line, "\r"):
				raw := l.line
				if !l.noLF {
					raw += "\n"
				}
				q, _ := json.Marshal(n.rawLine(raw))
				client.WriteString("#raw " + string(q) + "\n")
			default:
				line := n.rawLine(l.line)
				client.WriteString(padded(line) + "\n")
				sent.client = append(sent.client, step{kind: "send", text: []byte(line)})
			}
			continue
		}
		v, err := decode([]byte(l.line))
		obj, ok := v.(map[string]any)
		if err != nil || !ok {
			return nil, fmt.Errorf("conformance: record: the server printed a line that is not a JSON object: %q", shorten(l.line))
		}
		line, keep, float := r.server(n.value("", obj).(map[string]any), obj, sent)
		if !keep {
			continue
		}
		key := b.add(line)
		if float {
			b.opt[b.latest] = "~ "
		}
		pending[key] = true
		r.added(&b, key, obj, line)
		if w, ok := open[key]; ok && endsWork(d, line) && (!windows[w].own || line["type"] == nil) {
			windows[w].to = len(b.lines) - 1
			delete(open, key)
		}
	}
	for _, w := range open {
		windows[w].to = len(b.lines)
	}
	b.cutRuns(cut)
	b.loosenStops(windows)
	b.dialect().dropConcurrent(&b)
	b.dropPartialOutput()
	r.dropUnnamed(client.String())
	h := map[string]any{"id": c.ID, "level": c.Level, "requirements": c.Requirements, "timeout_ms": max(c.TimeoutMS, defaultRecordedTimeoutMS), "exit": c.Exit}
	if c.Model != "" {
		h["model"] = c.Model
	}
	if c.Dialect != "" && c.Dialect != DialectERPC {
		h["dialect"] = c.Dialect
	}
	head, _ := json.Marshal(h)
	a := &archive{comment: []byte("Recorded by e-conformance record. Describe what this case shows, cite its\nrequirements in case.json, and loosen what the requirements do not fix.\n")}
	a.files = append(a.files, archiveFile{name: "case.json", data: append(head, '\n')},
		archiveFile{name: "client", data: []byte(client.String())},
		archiveFile{name: "expect", data: []byte(b.String())})
	if len(tape) > 0 {
		var t bytes.Buffer
		t.WriteString("[\n")
		for i, e := range tape {
			if i > 0 {
				t.WriteString(",\n")
			}
			if k, ok := e["key"].(map[string]any); ok {
				e["key"] = recordedKey(n, k)
			}
			t.WriteString(canonNoEscape(e)) // the model's answers, sent as they are: no matchers there
		}
		t.WriteString("\n]\n")
		a.files = append(a.files, archiveFile{name: "tape.json", data: t.Bytes()})
	}
	return formatArchive(a), nil
}

// maxKeyText is the longest user text a recorded key keeps whole; a
// longer one is matched by its start.
const maxKeyText = 200

// recordedKey is the key of a recorded call (callKey) with volatile values
// made placeholders, as in the server's lines, and a long user text cut to
// a $prefix.
func recordedKey(n *normalizer, key map[string]any) any {
	out := n.value("", key).(map[string]any)
	u, _ := out["user"].(string)
	if len(u) <= maxKeyText || strings.HasPrefix(u, "$") && !strings.HasPrefix(u, "$$") {
		return out
	}
	lit := strings.TrimPrefix(u, "$") // "$$x" is the literal "$x"
	cut := maxKeyText
	for !utf8.RuneStart(lit[cut]) {
		cut--
	}
	lit = lit[:cut]
	if i := strings.LastIndex(lit, "{{"); i > strings.LastIndex(lit, "}}") {
		lit = lit[:i] // not inside a placeholder
	}
	out["user"] = "$prefix:" + lit
	return out
}

// recorder serves the model endpoint while recording: it forwards each
// call upstream and keeps what came back as a tape entry.
type recorder struct {
	upstream, key string
	mu            sync.Mutex
	entries       []map[string]any
	late          []bool // the call began after the client stopped work
	stopped       bool   // the client's latest line stopped work (stopOf)
}

// sent notes a client line: after one that stops work, the calls that
// begin are optional on the tape (on another run the stop can land before
// the server makes them), until the next line, whose doing later calls
// may be.
func (rc *recorder) sent(stop bool) {
	rc.mu.Lock()
	rc.stopped = stop
	rc.mu.Unlock()
}

// tape is the recorded calls in order. A call that began after the
// client stopped work is optional (the stop can land before it on another
// run). A call that was cancelled is an optional held entry: on another run the stop can come before it, and
// its key lets the calls after it pass it by. stopped says the client
// stopped work (an interrupt, shutdown, a signal): the tape then ends with
// an optional held entry without a key, since on another run the stop can
// come after the server made a call that it came before here (a
// compaction's, the next step's), and that call must wait to be
// cancelled as it would upstream.
func (rc *recorder) tape(stopped bool) []map[string]any {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []map[string]any
	for i, e := range rc.entries {
		if e != nil { // nil: a call still in flight when the session ended
			if i < len(rc.late) && rc.late[i] {
				e["optional"] = true
			}
			out = append(out, e)
		}
	}
	// A cancelled call at the end may go unsent on another run: the
	// interrupt can come before it.
	if stopped && (len(out) == 0 || out[len(out)-1]["hold"] != true || out[len(out)-1]["key"] != nil) {
		out = append(out, map[string]any{"hold": true})
	}
	for _, e := range out {
		if e["hold"] == true {
			e["optional"] = true
		}
	}
	return out
}

// stopOf reports whether a client line of dialect d stops work in
// progress (a stop request, a signal, EOF), and the session it names, ""
// for all.
func stopOf(d dialect, l recorded) (stop bool, session string) {
	if strings.HasPrefix(l.directive, "#signal") || l.directive == "#close" {
		return true, ""
	}
	var req struct {
		Method string
		Type   string // pi's command
		Params struct {
			Session   string
			SessionID string `json:"sessionId"`
		}
	}
	if json.Unmarshal([]byte(l.line), &req) != nil {
		return false, ""
	}
	switch d.(type) {
	case piDialect:
		return piStops[req.Type], "" // one session per process
	case acpDialect:
		return req.Method == "session/cancel" || req.Method == "session/close", req.Params.SessionID
	}
	return stopMethods[req.Method], req.Params.Session
}

// stopMethods are the e rpc requests that stop work in progress.
var stopMethods = map[string]bool{"session.interrupt": true, "session.close": true, "shutdown": true}

// piStops are the pi commands that stop work in progress: the run, a
// bash command, a retry's wait; and those that first stop the run to
// replace the session (new_session, switch_session, fork, clone) or to
// compact it, as pi 1.6.0's do.
var piStops = map[string]bool{"abort": true, "abort_bash": true, "abort_retry": true,
	"new_session": true, "switch_session": true, "fork": true, "clone": true, "compact": true}

// sessionOf is the session id a line of dialect d names ("" for none or
// pi, whose process has one session).
func sessionOf(d dialect, obj map[string]any) any {
	if _, ok := d.(acpDialect); ok {
		p, _ := obj["params"].(map[string]any)
		return p["sessionId"]
	}
	return obj["session"]
}

// stopsWork reports whether the client stopped work during the recorded
// session: a stop request (stopOf), or a signal.
func stopsWork(d dialect, log []recorded) bool {
	for _, l := range log {
		if stop, _ := stopOf(d, l); l.client && stop && l.directive != "#close" {
			return true
		}
	}
	return false
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.upstream == "" {
		http.Error(w, "e-conformance record: no --upstream model endpoint", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, rc.upstream+strings.TrimPrefix(r.URL.Path, "/v1"), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	// The call's own headers go on (a traceparent, a beta flag: a case may
	// expect them), but for its credentials, replaced by the upstream's.
	for k, vs := range r.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Authorization", "X-Api-Key", "Content-Length", "Connection", "Accept-Encoding":
			continue
		}
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+rc.key)
	// The entry's place is the call's: a stream may still be copied here
	// when the server, which has what it needs, makes its next call.
	// The key tells this call from those of other sessions running at
	// once, whose order varies from run to run.
	var key map[string]any
	asked := "" // the model the call names
	if v, err := decode(body); err == nil {
		key = callKey(textContent(v))
		if m, ok := v.(map[string]any); ok {
			asked, _ = m["model"].(string)
		}
	}
	rc.mu.Lock()
	slot := len(rc.entries)
	rc.entries = append(rc.entries, nil)
	rc.late = append(rc.late, rc.stopped)
	rc.mu.Unlock()
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	waited := time.Since(start)
	if err != nil && r.Context().Err() != nil {
		// The server cancelled the call before the answer began (an
		// interrupt): in the replay it is held until cancelled.
		rc.set(slot, map[string]any{"hold": true}, key)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	var copy bytes.Buffer
	_, cerr := io.Copy(io.MultiWriter(flushWriter{w}, &copy), resp.Body)
	entry := map[string]any{}
	if waited >= minDelay {
		entry["delay_ms"] = waited.Milliseconds() // the answer came late: keep the timing a case may rely on
	}
	if cerr != nil && r.Context().Err() != nil && !bytes.Contains(copy.Bytes(), []byte("[DONE]")) {
		entry["hold"] = true // the server cancelled the call before it ended (an interrupt)
	}
	if resp.StatusCode >= 400 {
		hs := map[string]any{}
		for _, h := range []string{"Retry-After", "Retry-After-Ms", "X-Request-Id"} {
			if v := resp.Header.Get(h); v != "" {
				hs[strings.ToLower(h)] = v
			}
		}
		entry["error"] = map[string]any{"status": resp.StatusCode, "headers": hs, "body": copy.String()}
	} else {
		parseStream(copy.Bytes(), asked, entry)
	}
	rc.set(slot, entry, key)
}

// set fills the tape entry reserved for a call.
func (rc *recorder) set(slot int, entry, key map[string]any) {
	if key != nil {
		entry["key"] = key
	}
	rc.mu.Lock()
	rc.entries[slot] = entry
	rc.mu.Unlock()
}

// minDelay is how late an answer must come for the recording to keep its
// delay: below it, the time is the machine's, not the model's.
const minDelay = 50 * time.Millisecond

type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// parseStream turns a Chat Completions event stream, the answer to a call
// that named model asked, into a tape entry.
func parseStream(data []byte, asked string, entry map[string]any) {
	var text, reasoning strings.Builder
	type call struct{ id, name, args string }
	var calls []*call
	for _, line := range strings.Split(string(data), "\n") {
		payload, ok := strings.CutPrefix(strings.TrimSpace(line), "data:")
		payload = strings.TrimSpace(payload)
		if !ok || payload == "[DONE]" {
			continue
		}
		var chunk struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content          string `json:"content"`
					ReasoningContent string `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens        int64 `json:"prompt_tokens"`
				CompletionTokens    int64 `json:"completion_tokens"`
				PromptTokensDetails struct {
					CachedTokens int64 `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
				CompletionTokensDetails struct {
					ReasoningTokens int64 `json:"reasoning_tokens"`
				} `json:"completion_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(payload), &chunk) != nil {
			continue
		}
		if chunk.ID != "" {
			entry["id"] = chunk.ID // the answer's id, which the server may report (usage response_id)
		}
		if _, named := entry["model"]; !named && chunk.Model != "" && chunk.Model != asked {
			entry["model"] = chunk.Model // another model answered, which the server may report (pi's responseModel)
		}
		if u := chunk.Usage; u != nil {
			usage := map[string]any{"prompt_tokens": u.PromptTokens, "completion_tokens": u.CompletionTokens, "cached_tokens": u.PromptTokensDetails.CachedTokens}
			if r := u.CompletionTokensDetails.ReasoningTokens; r > 0 {
				usage["reasoning_tokens"] = r
			}
			entry["usage"] = usage
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			reasoning.WriteString(ch.Delta.ReasoningContent)
			for _, tc := range ch.Delta.ToolCalls {
				for len(calls) <= tc.Index {
					calls = append(calls, &call{})
				}
				c := calls[tc.Index]
				if tc.ID != "" {
					c.id = tc.ID
				}
				if tc.Function.Name != "" {
					c.name = tc.Function.Name
				}
				c.args += tc.Function.Arguments
			}
			if ch.FinishReason == "length" {
				entry["finish_reason"] = "length"
			}
		}
	}
	if reasoning.Len() > 0 {
		entry["reasoning"] = reasoning.String()
	}
	if text.Len() > 0 {
		entry["text"] = text.String()
	}
	var tcs []any
	for _, c := range calls {
		var args any = c.args
		if v, err := decode([]byte(c.args)); err == nil {
			if _, isObj := v.(map[string]any); isObj {
				args = v
			}
		}
		tcs = append(tcs, map[string]any{"id": c.id, "name": c.name, "arguments": args})
	}
	if tcs != nil {
		entry["tool_calls"] = tcs
	}
}

// closeAt places the client's EOF, which came at eofAt in log while the
// server still ran, as a #close there (lines after it came after EOF), and
// returns the log and the exit status the case expects. After a TERM or
// HUP that ended the server it places none: the EOF that followed (often
// the client ending on the same Ctrl-C or TERM) changed nothing, and sent
// in a replay it would race the signal. When EOF won that race in the
// recording, which a server sees first is timing: any exit status goes.
func closeAt(log []recorded, eofAt int, exit string) ([]recorded, string) {
	if sig := endingSignal(log[:eofAt]); sig != 0 {
		if exit == strconv.Itoa(128+int(sig)) {
			return log, exit
		}
		exit = "any"
	}
	return append(log[:eofAt:eofAt], append([]recorded{{client: true, directive: "#close"}}, log[eofAt:]...)...), exit
}

// endingSignal is the last TERM or HUP the client sent in log (signals
// that end a server, D2), or 0.
func endingSignal(log []recorded) syscall.Signal {
	for i := len(log) - 1; i >= 0; i-- {
		switch log[i].directive {
		case "#signal TERM":
			return syscall.SIGTERM
		case "#signal HUP":
			return syscall.SIGHUP
		}
	}
	return 0
}

// signalName is the #signal name of sig.
func signalName(sig os.Signal) string {
	for name, s := range signals {
		if s == sig {
			return name
		}
	}
	return sig.String()
}

// minPad is the shortest run of x that a recorded client line keeps as a
// #pad directive rather than verbatim (the size tests of F6 send MiBs).
const minPad = 4096

// padded writes a client line holding a long run of x as "#pad SIZE LINE"
// with the run replaced by $pad, so a recording stays readable.
func padded(line string) string {
	best, at := 0, 0
	for i := 0; i < len(line); {
		j := i
		for j < len(line) && line[j] == 'x' {
			j++
		}
		if j-i > best {
			best, at = j-i, i
		}
		i = j + 1
	}
	if best < minPad || strings.Contains(line, "$pad") {
		return line
	}
	return fmt.Sprintf("#pad %d %s$pad%s", len(line), line[:at], line[at+best:])
}

// caseID is the pattern of a case's id (case.schema.json's id).
var caseID = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*$`)

// checkOutID refuses an --out whose base name, the recorded case's id, the
// runner would reject, naming a valid one.
func checkOutID(out string) error {
	id := strings.TrimSuffix(filepath.Base(out), ".txtar")
	if caseID.MatchString(id) {
		return nil
	}
	valid := strings.Trim(regexp.MustCompile(`[^a-z0-9.-]+`).ReplaceAllString(strings.ToLower(id), "-"), "-.")
	hint := ""
	if valid != "" {
		hint = fmt.Sprintf("; try --out %s", filepath.Join(filepath.Dir(out), valid+".txtar"))
	}
	return fmt.Errorf("conformance: record: --out %s: the case id %q (the file's name) is one the runner refuses: "+
		"an id is lowercase letters, digits, dots and hyphens, starting with a letter or digit (%s)%s", out, id, caseID, hint)
}
