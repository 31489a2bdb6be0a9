package cli

import (
	"flag"
	"io"
	"testing"
)

func TestFlagMessage(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.String("model", "", "")
	fs.Bool("p", false, "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{args: []string{"--modle", "m"}, want: "unknown flag --modle (did you mean --model?)"},
		{args: []string{"-q"}, want: "unknown flag -q"},
		{args: []string{"--model"}, want: "flag needs an argument: -model"},
	} {
		err := fs.Parse(tt.args)
		if err == nil {
			t.Fatalf("%v parsed", tt.args)
		}
		if got := FlagMessage(fs, err); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
	if !WantsHelp([]string{"a", "-h"}) || WantsHelp([]string{"--", "--help"}) || WantsHelp(nil) {
		t.Error("WantsHelp")
	}
}
