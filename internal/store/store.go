// Package store keeps e's state on disk: the append-only session logs
// (JSONL) with their locks, repair, listing, forks and HTML export, the
// private errors sidecar, settings.json and the trust list. The normative
// description is spec/persistence.md; the line formats are JSON Schemas in
// schemas/store.
package store

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Version is the session-log format version written in every header.
const Version = 1

// Entry types, and the header's type.
const (
	TypeSession     = "session"
	TypeMessage     = "message"
	TypeSettings    = "settings"
	TypeCompaction  = "compaction"
	TypeName        = "name"
	TypeTitle       = "title"
	TypeInterrupted = "interrupted"
	TypeError       = "error"
	TypeShell       = "shell"
	TypeAttempt     = "attempt"
)

// Home returns e's home directory: $E_HOME when set, else ~/.e. It creates
// the directory with mode 0700 when it is missing.
func Home() (string, error) {
	dir := os.Getenv("E_HOME")
	if dir == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("store: home: %w", err)
		}
		dir = filepath.Join(h, ".e")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("store: home %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("store: home: %w", err)
	}
	return dir, nil
}

// Header is the first line of a session log.
type Header struct {
	Type    string    `json:"type"`    // always "session"
	Version int       `json:"version"` // format version, 1
	ID      string    `json:"id"`      // session id (ULID)
	Cwd     string    `json:"cwd"`
	Created time.Time `json:"created"`
	Parent  string    `json:"parent_session,omitempty"` // set when forked: the parent log's path
	Model   string    `json:"model"`
	Effort  string    `json:"effort"`
	Name    string    `json:"name,omitempty"`
}

// Entry is one line after the header. Which fields are set depends on Type.
type Entry struct {
	Type    string          `json:"type"`                    // one of the Type* constants
	ID      string          `json:"id"`                      // assigned by Append when empty
	Parent  string          `json:"parent"`                  // assigned by Append when empty: the previous entry's id
	Time    time.Time       `json:"time"`                    // assigned by Append when zero
	Message json.RawMessage `json:"message,omitempty"`       // message; attempt: what it streamed (an assistant message), if anything
	Model   string          `json:"model,omitempty"`         // settings
	Effort  string          `json:"effort,omitempty"`        // settings
	Summary string          `json:"summary,omitempty"`       // compaction: the summary replacing earlier history
	Kept    string          `json:"kept,omitempty"`          // compaction: id of the first entry kept after the summary ("" = none)
	Tokens  int64           `json:"tokens_before,omitempty"` // compaction
	Name    string          `json:"name,omitempty"`          // name (user label, C8) and title (automatic)
	Call    *ModelCall      `json:"call,omitempty"`          // assistant message: the model call that produced it; attempt: the failed attempt; interrupted: the model call it cut short; error: the model call that failed
	Runs    []ToolRun       `json:"tools,omitempty"`         // tool message: how each result's call ran, in content order
	Error   string          `json:"error,omitempty"`         // error: the message of the error that ended the turn; attempt: why it failed
	Shell   *ShellRun       `json:"shell,omitempty"`         // shell: a user's shell command and how it ended
}

// ModelCall describes the model call behind an assistant message.
type ModelCall struct {
	Model       string   `json:"model"`                   // catalog id, provider/name
	Attempts    int      `json:"attempts"`                // 1 + retries; an attempt entry's: its number
	DurationMS  int64    `json:"duration_ms"`             // first attempt's start to the answer's end
	FirstByteMS int64    `json:"first_byte_ms,omitempty"` // successful attempt's start to its first delta
	Usage       Usage    `json:"usage"`
	CostUSD     *float64 `json:"cost_usd,omitempty"` // absent when the model has no price
	// The provider's id of the answer and its own finish reason
	// (model.Response), absent when it sent none.
	ResponseID   string `json:"response_id,omitempty"`
	FinishReason string `json:"finish_reason,omitempty"`
	// ResponseModel is the model the answer named when it was not the one
	// asked for (model.Response), absent otherwise.
	ResponseModel string `json:"response_model,omitempty"`
}

// Usage is the five disjoint token categories of a model call (U1).
type Usage struct {
	Input        int64 `json:"input_tokens"`
	Output       int64 `json:"output_tokens"`
	CacheRead    int64 `json:"cache_read_tokens"`
	CacheWrite5m int64 `json:"cache_write_5m_tokens"`
	CacheWrite1h int64 `json:"cache_write_1h_tokens"`
	Reasoning    int64 `json:"reasoning_tokens,omitempty"` // the part of Output spent reasoning, when reported
}

// ShellRun is a shell command the user ran into the session's context
// (session.shell), outside any turn.
type ShellRun struct {
	Command   string `json:"command"`
	Output    string `json:"output"`              // the last 64 KiB of stdout and stderr
	ExitCode  *int   `json:"exit_code"`           // null when it did not exit by itself
	Cancelled bool   `json:"cancelled,omitempty"` // interrupted: killed
	TimedOut  bool   `json:"timed_out,omitempty"` // killed at its timeout
	Truncated bool   `json:"truncated,omitempty"` // earlier output was dropped
	Exclude   bool   `json:"exclude,omitempty"`   // kept in the log, left out of the model's context
	// FullOutputPath names a file with the whole output when Output is
	// only its end (e --mode rpc: pi's bash keeps 2000 lines or 50 KB).
	FullOutputPath string `json:"full_output_path,omitempty"`
}

// ToolRun describes how one tool call ran.
type ToolRun struct {
	CallID     string `json:"call_id"`
	Outcome    string `json:"outcome"` // completed, failed, denied, interrupted
	DurationMS int64  `json:"duration_ms"`
	// Details are a front end's details of the result (e --mode rpc: pi's
	// bash details of a cut output), absent when none.
	Details json.RawMessage `json:"details,omitempty"`
}

// crockford is the ULID alphabet.
const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

// ulidState makes ids from one process strictly increasing: within one
// millisecond the random part is incremented instead of redrawn.
var ulidState struct {
	sync.Mutex
	ms   uint64
	rand [10]byte
}

// NewID returns a new ULID: 26 characters of Crockford base32, a 48-bit
// millisecond timestamp followed by 80 random bits, so ids sort by time.
func NewID() string {
	ms := uint64(time.Now().UnixMilli())
	ulidState.Lock()
	if ms <= ulidState.ms {
		ms = ulidState.ms
		increment(&ulidState.rand)
	} else {
		ulidState.ms = ms
		rand.Read(ulidState.rand[:])
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], ms<<16)
	copy(b[6:], ulidState.rand[:])
	ulidState.Unlock()

	// 128 bits as 26 base32 digits: the first digit carries the top 3 bits.
	hi := binary.BigEndian.Uint64(b[:8])
	lo := binary.BigEndian.Uint64(b[8:])
	var out [26]byte
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

func increment(r *[10]byte) {
	for i := len(r) - 1; i >= 0; i-- {
		r[i]++
		if r[i] != 0 {
			return
		}
	}
}

// NewEntryID returns a new entry id: 128 random bits as 32 hex digits, so
// ids never collide across logs, forks and processes (issue 12.8).
func NewEntryID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
