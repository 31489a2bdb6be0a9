package schemas

import (
	"strings"
	"testing"
)

func TestValidatePiCommand(t *testing.T) {
	tests := []struct {
		name, line, typ, err string
	}{
		{name: "prompt", line: `{"type":"prompt","message":"hi","id":"req_1"}`, typ: "prompt"},
		{name: "missing message", line: `{"type":"prompt"}`, typ: "prompt", err: "prompt: message: required"},
		{name: "bad level", line: `{"type":"set_thinking_level","level":"huge"}`, typ: "set_thinking_level", err: "level"},
		{name: "unknown", line: `{"type":"dance"}`, typ: "dance", err: `unknown command type "dance"`},
		{name: "no type", line: `{"message":"x"}`, err: "type: required"},
		{name: "id of any type", line: `{"type":"abort","id":7}`, typ: "abort"},
		{name: "null optional", line: `{"type":"get_entries","since":null}`, typ: "get_entries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, err := ValidatePiCommand([]byte(tt.line))
			if typ != tt.typ {
				t.Errorf("type %q, want %q", typ, tt.typ)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestValidatePiLine(t *testing.T) {
	usage := `{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`
	tests := []struct {
		name, line, err string
	}{
		{name: "prompt response", line: `{"id":"a","type":"response","command":"prompt","success":true,"data":{"disposition":"started"}}`},
		{name: "bad disposition", line: `{"type":"response","command":"prompt","success":true,"data":{"disposition":"maybe"}}`, err: "disposition"},
		{name: "failure", line: `{"type":"response","command":"parse","success":false,"error":"Failed to parse command: x"}`},
		{name: "failure without error", line: `{"type":"response","command":"parse","success":false}`, err: "error"},
		{name: "abort has no data", line: `{"type":"response","command":"abort","success":true}`},
		{name: "agent_end", line: `{"type":"agent_end","messages":[],"willRetry":false}`},
		{name: "text delta", line: `{"type":"message_update","usage":` + usage + `,"assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"hi"}}`},
		{name: "delta without index", line: `{"type":"message_update","usage":` + usage + `,"assistantMessageEvent":{"type":"text_delta","delta":"hi"}}`, err: "assistantMessageEvent"},
		{name: "unknown event", line: `{"type":"ame_start"}`, err: "unknown type"},
		{name: "ui request", line: `{"type":"extension_ui_request","id":"u1","method":"confirm","title":"ok?"}`},
		{name: "header", line: `{"type":"session","version":3,"id":"x","timestamp":"2026-12-01T00:00:00Z","cwd":"/"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidatePiLine([]byte(tt.line))
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
}
