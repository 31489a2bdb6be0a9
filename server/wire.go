package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/jsonenc"
	"github.com/e-agent/e/internal/session"
	"github.com/e-agent/e/protocol"
)

// Wire shapes of e rpc are the generated types of package protocol:
// params are decoded into them only after their schema
// (schemas/methods/<method>.params.json) accepted the line, so pointer
// fields mean "omitted or null" (V1); results are built from them. The
// functions below convert the session layer's values at the boundary
// (int to int64, time.Time to its RFC 3339 text) into the bytes
// encoding/json wrote for the values themselves.

// SessionEntriesResult is the session.entries result
// (methods/session.entries.result.json), which parts writes. Its entries
// are the log's lines (schemas/store/entry.json), which the result schema
// leaves open, so the generated item type cannot hold them; and a big log
// is encoded in pieces, not by json.Marshal (H1).
type SessionEntriesResult struct {
	Entries []session.Entry
	Leaf    *string // nil when the session has no entry
}

// entriesChunk is the size of the pieces a session.entries answer is
// encoded in.
const entriesChunk = 1 << 20

// parts encodes the response of request id answered with r as
// encoding/json writes it, in pieces of about entriesChunk bytes, for
// AppendShared: a big log's entries are encoded once, outside the
// writer's lock, not built whole by json.Marshal and copied twice (H1).
func (r SessionEntriesResult) parts(id []byte) [][]byte {
	return r.encode(append(append([]byte(`{"id":`), bytes.ToValidUTF8(id, []byte("\uFFFD"))...), `,"result":`...), "}")
}

// MarshalJSON writes r whole as parts does, so that the result has one
// encoder, the one the schema tests check.
func (r SessionEntriesResult) MarshalJSON() ([]byte, error) {
	return bytes.Join(r.encode(nil, ""), nil), nil
}

// encode writes r after head and before tail, in pieces.
func (r SessionEntriesResult) encode(head []byte, tail string) [][]byte {
	out := [][]byte{append(head, `{"entries":[`...)}
	// left estimates the bytes still to encode, so that a small answer
	// gets a small piece.
	left := 32
	for _, e := range r.Entries {
		left += len(e.Message) + 160
	}
	chunk := make([]byte, 0, min(left, entriesChunk+entriesChunk/8))
	valid := func(b []byte) []byte {
		if utf8.Valid(b) {
			return b
		}
		return bytes.ToValidUTF8(b, []byte("\uFFFD"))
	}
	for i, e := range r.Entries {
		if i > 0 {
			chunk = append(chunk, ',')
		}
		b, err := json.Marshal(e)
		if err != nil {
			// An entry is plain data: a failure is a programming error.
			panic("server: marshal entry: " + err.Error())
		}
		chunk = append(chunk, b...)
		if len(chunk) >= entriesChunk {
			out = append(out, valid(chunk))
			left = max(0, left-len(chunk))
			chunk = make([]byte, 0, min(left, entriesChunk+entriesChunk/8))
		}
	}
	leaf, _ := json.Marshal(r.Leaf)
	chunk = append(append(append(append(chunk, `],"leaf":`...), leaf...), '}'), tail...)
	return append(out, valid(chunk))
}

// askLine is a relayed question on the wire (lines/ask.json).
func askLine(a extension.Ask) protocol.AskLine {
	return protocol.AskLine{Type: "ask", Ask: a.Ask, Extension: a.Extension, Session: a.Session,
		Method: protocol.AskLineMethod(a.Method), Params: a.Params}
}

// rfc3339 is t as encoding/json writes a time.Time.
func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }

func modelInfos(ms []session.ModelInfo) []protocol.ModelInfo {
	out := make([]protocol.ModelInfo, len(ms))
	for i, m := range ms {
		out[i] = protocol.ModelInfo{Model: m.ID, Provider: m.Provider, ID: m.Name, Effort: m.Efforts,
			ImageInput: m.ImageInput, Tools: m.Tools, ContextWindow: int64(m.ContextWindow), Available: m.Available != nil && *m.Available}
	}
	return out
}

func summaries(list []session.Summary) []protocol.SessionSummary {
	out := make([]protocol.SessionSummary, len(list))
	for i, s := range list {
		out[i] = protocol.SessionSummary{Path: s.Path, Title: s.Title, Name: s.Name, Modified: rfc3339(s.Modified),
			Messages: int64(s.Messages), Turns: int64(s.Turns), Cwd: s.Cwd}
	}
	return out
}

func logMessages(ms []session.Message) []protocol.LogMessage {
	out := make([]protocol.LogMessage, len(ms))
	for i, m := range ms {
		out[i] = protocol.LogMessage{ID: m.ID, Parent: m.Parent, Time: rfc3339(m.Time), Role: protocol.LogMessageRole(m.Role),
			Content: parts(m.Content)}
	}
	return out
}

func parts(ps []session.Part) []protocol.Part {
	out := make([]protocol.Part, len(ps))
	for i, p := range ps {
		out[i] = protocol.Part{Type: protocol.PartType(p.Type), Text: p.Text, Signature: p.Signature, MediaType: p.MediaType,
			ID: p.ID, Name: p.Name, Arguments: p.Arguments, CallID: p.CallID, IsError: p.IsError}
		if p.Data != nil {
			out[i].Data = base64.StdEncoding.EncodeToString(p.Data)
		}
	}
	return out
}

func usage(u agent.Usage) protocol.Usage {
	return protocol.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead,
		CacheWrite5MTokens: u.CacheWrite5m, CacheWrite1HTokens: u.CacheWrite1h, ReasoningTokens: u.Reasoning,
		PromptTokens: u.PromptTokens}
}

// turnReply is a turn's result and its final output already encoded
// (agent.Result.FinalOutputJSON), for reply.
type turnReply struct {
	protocol.Result
	finalJSON []byte
}

// turnResult is a turn's result (§6) on the wire.
func turnResult(r agent.Result) protocol.Result {
	out := protocol.Result{Output: r.Output, FinalOutput: r.FinalOutput, Model: r.Model, Effort: r.Effort, Aborted: r.Aborted,
		Error: r.Error, Warnings: r.Warnings, Usage: usage(r.Usage), CostUSD: r.CostUSD,
		Tools: protocol.ToolCounts{Calls: int64(r.Tools.Calls), Failures: int64(r.Tools.Failures)}, Session: r.Session, Path: r.Path,
		StopReason: protocol.StopReason(r.StopReason), StructuredOutput: r.StructuredOutput}
	if out.StructuredOutput == nil {
		// Optional in the schema (an older server has none), but e always
		// says it: null unless the turn completed with a valid value (J2).
		out.StructuredOutput = json.RawMessage("null")
	}
	if sb := r.Sandbox; sb != nil {
		out.Sandbox = protocol.SandboxPolicy{Mode: protocol.SandboxMode(sb.Mode), WritableRoots: sb.WritableRoots, Network: sb.Network}
	}
	if d := r.ErrorDetails; d != nil {
		out.ErrorDetails = &protocol.ErrorDetails{Stage: protocol.ErrorDetailsStage(d.Stage), Provider: d.Provider, Model: d.Model,
			RequestID: d.RequestID, ErrorType: d.ErrorType, Retryable: d.Retryable,
			RetryDecision: protocol.ErrorDetailsRetryDecision(d.Decision), Attempts: int64(d.Attempts), Message: d.Message,
			Diagnostic: d.Diagnostic, Time: d.Time}
		if d.Status != nil {
			status := int64(*d.Status)
			out.ErrorDetails.Status = &status
		}
	}
	return out
}

// appendResult appends r encoded as encoding/json encodes it, valid UTF-8.
// The turn's text, in output and final_output, is most of a long turn's
// result: those two are encoded by hand, the rest by encoding/json.
// finalJSON, when not nil, is r.FinalOutput already encoded (see
// agent.Result.FinalOutputJSON): copied, not encoded again.
func appendResult(dst []byte, r protocol.Result, finalJSON []byte) []byte {
	tail := resultTail(r)
	// One growth for the whole result, not a dozen of a growing copy.
	dst = slices.Grow(dst, len(r.Output)+len(r.FinalOutput)+len(tail)+32)
	dst = append(dst, `{"output":`...)
	switch {
	case finalJSON != nil && r.Output == r.FinalOutput:
		dst = append(append(append(dst, finalJSON...), `,"final_output":`...), finalJSON...)
	case r.Output == r.FinalOutput:
		// The turn's one answer: copying its encoding is cheaper than
		// encoding it again.
		from := len(dst)
		dst = jsonenc.AppendString(dst, r.Output)
		dst = append(append(dst, `,"final_output":`...), dst[from:]...)
	case finalJSON != nil:
		dst = append(append(jsonenc.AppendString(dst, r.Output), `,"final_output":`...), finalJSON...)
	default:
		dst = jsonenc.AppendString(append(jsonenc.AppendString(dst, r.Output), `,"final_output":`...), r.FinalOutput)
	}
	return append(dst, tail...)
}

// resultTail is r encoded after its output and final_output: `,"model":…}`.
func resultTail(r protocol.Result) []byte {
	r.Output, r.FinalOutput = "", ""
	b, err := json.Marshal(r)
	if err != nil {
		// Result is plain data: a failure is a programming error.
		panic("server: marshal result: " + err.Error())
	}
	const head = `{"output":"","final_output":""`
	if !bytes.HasPrefix(b, []byte(head)) {
		panic("server: result fields out of order: " + string(b[:min(len(b), len(head))]))
	}
	return b[len(head):]
}

// sharedMin is the size of an answer's encoding from which its response
// is written from the session's history (resultParts), not copied.
const sharedMin = 64 << 10

// resultParts returns the response line of request id (a JSON value) with
// result r, made of parts that hold finalJSON (r.FinalOutput encoded, see
// agent.Result.FinalOutputJSON) instead of copies, for jsonl.Writer's
// AppendShared: a long answer's response then costs no fresh copy of its
// text, twice over. It returns nil for a short answer or one whose
// output is not its final output.
func resultParts(id []byte, r protocol.Result, finalJSON []byte) [][]byte {
	if len(finalJSON) < sharedMin || r.Output != r.FinalOutput {
		return nil
	}
	head := append(append([]byte(`{"id":`), bytes.ToValidUTF8(id, []byte("\uFFFD"))...), `,"result":{"output":`...)
	return [][]byte{head, finalJSON, []byte(`,"final_output":`), finalJSON, append(resultTail(r), '}')}
}
