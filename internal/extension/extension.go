// Package extension hosts e's extensions: child processes that speak JSON
// Lines on stdin/stdout (the framing of e rpc), register tools, gate tool
// calls, receive lifecycle events, and ask the person questions through the
// client (ui.confirm, ui.select, ui.input, ui.editor).
//
// One Host serves every session of the process (X1). The protocol is
// specified in spec/extensions.md; schemas/extension/ holds one JSON Schema
// per line kind.
package extension

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Config describes one extension process.
type Config struct {
	Name    string            `json:"name"`
	Command string            `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"` // added to e's environment
}

// UI is what a Host needs from its front end: e rpc's server, or e -p.
type UI interface {
	// Ask relays ui.confirm, ui.select, ui.input or ui.editor and returns
	// the client's result, or {"cancelled":true} when ctx ends first. It
	// returns ErrNoUI at once when there is no one to ask (X5).
	Ask(ctx context.Context, ext, method string, params json.RawMessage) (json.RawMessage, error)
	// Notice delivers ui.notify and ui.show, and notices about extensions
	// themselves (X6). It is called from one goroutine, in order.
	Notice(n Notice)
}

// ErrNoUI is UI.Ask's answer when nobody can be asked: no hello, hello with
// ask:false, or e -p (X5).
var ErrNoUI = errors.New("extension: no client to ask")

// Notice is a message for the person: relayed from ui.notify/ui.show, or
// about an extension itself (crash, missing command, cut off). Each front
// end writes it its own way (e rpc: the generated protocol.NoticeLine).
type Notice struct {
	Extension string
	Level     string // "info", "warning", "error"
	Message   string
	Method    string          // "ui.notify" or "ui.show" when relayed; "" about the extension itself
	Params    json.RawMessage // the extension's params for ui.notify/ui.show
	// Session is the session the notice is about: one whose tool calls or
	// gates e had pending with the extension when it sent the notice, or
	// whose question timed out (SessionOf); "" for the process. Not shown.
	Session string
}

// Tool is a tool registered by an extension.
type Tool struct {
	Extension   string
	Name        string
	Description string
	Parameters  json.RawMessage // a JSON Schema of the arguments object
}

// Configs returns the extensions of $E_HOME: those listed in settings.json
// (raw is its "extensions" value: [{name, command, args?, env?}]; null or
// absent means none), then every executable file in home/extensions/, named
// after the file without its extension. Names must be unique.
func Configs(home string, raw json.RawMessage) ([]Config, error) {
	cfgs, err := settingsConfigs(raw)
	if err != nil {
		return nil, err
	}
	from := make(map[string]string) // name → where it was declared, for the duplicate error
	for i, c := range cfgs {
		where := fmt.Sprintf("settings.json extensions[%d]", i)
		if prev, ok := from[c.Name]; ok {
			return nil, fmt.Errorf("extension: duplicate name %q: %s and %s", c.Name, prev, where)
		}
		from[c.Name] = where
	}
	dir := filepath.Join(home, "extensions")
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return cfgs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("extension: %w", err)
	}
	for _, de := range entries {
		if strings.HasPrefix(de.Name(), ".") {
			continue
		}
		path := filepath.Join(dir, de.Name())
		fi, err := os.Stat(path) // follows symlinks
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		name := strings.TrimSuffix(de.Name(), filepath.Ext(de.Name()))
		if prev, ok := from[name]; ok {
			return nil, fmt.Errorf("extension: duplicate name %q: %s and %s", name, prev, path)
		}
		from[name] = path
		cfgs = append(cfgs, Config{Name: name, Command: path})
	}
	return cfgs, nil
}

// settingsConfigs decodes field by field so that an error names the field.
func settingsConfigs(raw json.RawMessage) ([]Config, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("extension: settings.json extensions: expected an array of {name, command, args?, env?}")
	}
	cfgs := make([]Config, 0, len(items))
	for i, item := range items {
		at := fmt.Sprintf("extension: settings.json extensions[%d]", i)
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(item, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("%s: expected an object {name, command, args?, env?}", at)
		}
		var c Config
		for _, f := range []struct {
			key      string
			dst      any
			required bool
			want     string
		}{
			{"name", &c.Name, true, "a non-empty string"},
			{"command", &c.Command, true, "a non-empty string"},
			{"args", &c.Args, false, "an array of strings"},
			{"env", &c.Env, false, "an object of strings"},
		} {
			v, ok := fields[f.key]
			if !ok || string(v) == "null" {
				if f.required {
					return nil, fmt.Errorf("%s.%s: missing; expected %s", at, f.key, f.want)
				}
				continue
			}
			if err := json.Unmarshal(v, f.dst); err != nil {
				return nil, fmt.Errorf("%s.%s: expected %s", at, f.key, f.want)
			}
		}
		if c.Name == "" || strings.ContainsAny(c.Name, "/\\") {
			return nil, fmt.Errorf("%s.name: expected a non-empty string without slashes", at)
		}
		if c.Command == "" {
			return nil, fmt.Errorf("%s.command: expected a non-empty string", at)
		}
		cfgs = append(cfgs, c)
	}
	return cfgs, nil
}
