package session

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/e-agent/e/internal/agent"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

// The operator log (spec/operations.md): JSON lines through log/slog, one
// record per process start, session lifecycle, turn, model call, tool
// call, extension notice and error. Prompt text and tool arguments appear
// only with Options.LogContent; keys never (every string is redacted).

// NewLogHandler returns the operator log's handler writing to w: JSON, one
// record a line, every string attribute redacted.
func NewLogHandler(w interface{ Write([]byte) (int, error) }, level slog.Leveler) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(store.Redact(a.Value.String()))
		}
		return a
	}})
}

// logStart records the process's start: what e will use.
func (h *Host) logStart() {
	l := h.opts.Log
	if l == nil {
		return
	}
	settings := filepath.Join(h.env.Home, "settings.json")
	if _, err := os.Stat(settings); err != nil {
		settings = ""
	}
	var providers []any
	for _, p := range h.engine.Catalog.Providers() {
		providers = append(providers, slog.Group(p.Name, "api", p.API, "base_url", p.BaseURL, "key_env", p.KeyEnv, "key_set", p.KeySet))
	}
	var exts []string
	if x := h.extensions(); x != nil {
		for _, t := range x.Tools() {
			exts = append(exts, t.Extension+"/"+t.Name)
		}
	}
	l.LogAttrs(context.Background(), slog.LevelInfo, "start",
		slog.String("version", h.opts.Version), slog.String("commit", h.opts.Commit), slog.Int("pid", os.Getpid()),
		slog.String("home", h.env.Home), slog.String("settings", settings), slog.String("default_model", h.def),
		slog.Group("providers", providers...), slog.Any("extension_tools", exts),
		slog.Bool("no_tools", h.opts.NoTools), slog.Bool("no_extensions", h.opts.NoExtensions), slog.Bool("no_save", h.opts.NoSave))
}

// Logger returns the operator log, nil when there is none: front ends log
// their own errors there.
func (h *Host) Logger() *slog.Logger { return h.opts.Log }

// loggingUI is a UI whose notices (extension lifecycle and failures) are
// also logged.
type loggingUI struct {
	UI
	h *Host
}

func (u loggingUI) Notice(n Notice) {
	level := slog.LevelInfo
	switch n.Level {
	case "warning":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	u.h.logf(level, "extension notice", slog.String("extension", n.Extension), slog.String("message", n.Message))
	u.UI.Notice(n)
}

// logf records one event when the log is on.
func (h *Host) logf(level slog.Level, msg string, attrs ...slog.Attr) {
	if l := h.opts.Log; l != nil {
		l.LogAttrs(context.Background(), level, msg, attrs...)
	}
}

// logTurn records a finished turn.
func (h *Host) logTurn(id string, began time.Time, res agent.Result) {
	if h.opts.Log == nil {
		return
	}
	level, outcome := slog.LevelInfo, "completed"
	attrs := []slog.Attr{slog.String("session", id), slog.String("model", res.Model),
		slog.Int64("duration_ms", time.Since(began).Milliseconds()),
		slog.Int("tool_calls", res.Tools.Calls), slog.Int("tool_failures", res.Tools.Failures), usageAttr(res.Usage.Usage)}
	if res.CostUSD != nil {
		attrs = append(attrs, slog.Float64("cost_usd", *res.CostUSD))
	}
	switch {
	case res.Error != nil:
		level, outcome = slog.LevelError, "failed"
		attrs = append(attrs, slog.String("error", *res.Error))
	case res.Aborted:
		outcome = "interrupted"
	}
	h.logf(level, "turn", append(attrs, slog.String("outcome", outcome))...)
}

func usageAttr(u model.Usage) slog.Attr {
	return slog.Group("tokens", slog.Int64("input", u.Input), slog.Int64("output", u.Output),
		slog.Int64("cache_read", u.CacheRead), slog.Int64("cache_write_5m", u.CacheWrite5m), slog.Int64("cache_write_1h", u.CacheWrite1h))
}

// observer writes the agent's model and tool calls to the log.
type observer struct {
	log     *slog.Logger
	content bool
}

func (o observer) ModelCall(r agent.ModelCallRecord) {
	level := slog.LevelInfo
	attrs := []slog.Attr{slog.String("session", r.Session), slog.String("purpose", r.Purpose),
		slog.String("provider", r.Provider), slog.String("model", r.Model), slog.String("status", r.Status),
		slog.Int("attempts", r.Attempts), slog.Int64("first_byte_ms", r.FirstByte.Milliseconds()),
		slog.Int64("duration_ms", r.Duration.Milliseconds()), usageAttr(r.Usage)}
	if r.HTTPStatus != 0 {
		attrs = append(attrs, slog.Int("http_status", r.HTTPStatus))
	}
	if r.RequestID != "" {
		attrs = append(attrs, slog.String("request_id", r.RequestID))
	}
	if r.StopReason != "" {
		attrs = append(attrs, slog.String("stop_reason", r.StopReason))
	}
	if r.CostUSD != nil {
		attrs = append(attrs, slog.Float64("cost_usd", *r.CostUSD))
	}
	if r.Error != "" {
		level = slog.LevelError
		attrs = append(attrs, slog.String("error", r.Error))
	}
	o.log.LogAttrs(context.Background(), level, "model call", attrs...)
}

func (o observer) ModelRetry(r agent.ModelRetryRecord) {
	attrs := []slog.Attr{slog.String("session", r.Session), slog.String("model", r.Model), slog.Int("attempt", r.Attempt),
		slog.Int64("delay_ms", r.Delay.Milliseconds()), slog.String("reason", r.Reason)}
	if r.HTTPStatus != 0 {
		attrs = append(attrs, slog.Int("http_status", r.HTTPStatus))
	}
	if r.RequestID != "" {
		attrs = append(attrs, slog.String("request_id", r.RequestID))
	}
	o.log.LogAttrs(context.Background(), slog.LevelWarn, "model retry", attrs...)
}

func (o observer) ToolCall(r agent.ToolCallRecord) {
	level := slog.LevelInfo
	if r.Outcome != "completed" {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{slog.String("session", r.Session), slog.Int("id", r.ID), slog.String("name", r.Name),
		slog.String("category", r.Category), slog.String("outcome", r.Outcome), slog.String("summary", r.Summary),
		slog.Int64("duration_ms", r.Duration.Milliseconds())}
	if o.content {
		attrs = append(attrs, slog.String("arguments", string(r.Arguments)))
	}
	o.log.LogAttrs(context.Background(), level, "tool call", attrs...)
}
