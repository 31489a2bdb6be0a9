// Package pi is e's pi dialect: e --mode rpc speaks pi 1.6.0's RPC
// protocol and e --mode json its one-shot JSON event stream, with pi's
// command line and configuration directory, over e's engine and sessions
// (spec/pi.md), which it saves as pi's session files (sessionfile.go, the
// session layer's Behaviour.Codec). Translator turns e's events into pi's;
// the command dispatcher in rpc.go serves pi's commands, and prime.go
// prime-agent's flavour of them; backend.go is the one place that makes
// sessions. The wire shapes are schemas/pi; the structs of its messages and
// events are generated from them (wire_gen.go).
package pi
