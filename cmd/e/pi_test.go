package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestArgsOf(t *testing.T) {
	tests := []struct {
		name string
		argv []string
		want []string
	}{
		{name: "e", argv: []string{"/usr/bin/e", "--mode", "rpc"}, want: []string{"--mode", "rpc"}},
		{name: "prime-agent link", argv: []string{"/opt/bin/prime-agent", "--mode", "rpc", "--no-session"},
			want: []string{"--flavor", "prime", "--mode", "rpc", "--no-session"}},
		{name: "prime-agent.exe", argv: []string{`prime-agent.exe`, "--mode=json", "hi"}, want: []string{"--flavor", "prime", "--mode=json", "hi"}},
		// Not pi's dialect: e's own commands keep their arguments.
		{name: "prime-agent without --mode", argv: []string{"prime-agent", "--version"}, want: []string{"--version"}},
		{name: "other name", argv: []string{"pi", "--mode", "rpc"}, want: []string{"--mode", "rpc"}},
		{name: "empty", argv: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, argsOf(tt.argv)); diff != "" {
				t.Errorf("argsOf(%q) (-want +got):\n%s", tt.argv, diff)
			}
		})
	}
}
