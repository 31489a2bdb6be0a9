package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/e-agent/e/internal/extension"
	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/sandbox"
	"github.com/e-agent/e/internal/store"
)

// runDoctor is e doctor: what e would use here, and whether it works. It
// reads; it starts no extension and calls no model, unless --probe, which
// calls each configured provider once. Key values are never printed, only
// whether their variables are set.
func runDoctor(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("doctor", stderr)
	var probe bool
	fs.BoolVar(&probe, "probe", false, "call each configured provider once")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("doctor takes no arguments, got %q", pos[0]))
	}
	d := &doctor{w: stdout, probe: probe}
	d.run()
	if d.problems > 0 {
		fmt.Fprintf(stdout, "\n%d problem(s) found.\n", d.problems)
		return 1
	}
	fmt.Fprintln(stdout, "\nno problems found.")
	return 0
}

type doctor struct {
	w        io.Writer
	probe    bool
	problems int
}

// problems reports each of err's joined errors as a problem of its own:
// settings.json's are all found at once, so all are said at once.
func (d *doctor) problemsOf(err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			d.problemsOf(e)
		}
		return
	}
	d.problem("%v", err)
}

func (d *doctor) say(format string, a ...any) { fmt.Fprintf(d.w, format+"\n", a...) }

func (d *doctor) problem(format string, a ...any) {
	d.problems++
	fmt.Fprintf(d.w, "  PROBLEM: "+format+"\n", a...)
}

func (d *doctor) run() {
	d.say("e %s (%s, commit %s)", version, channel(), commit())
	home, err := store.Home()
	if err != nil {
		d.say("home:")
		d.problem("%v", err)
		return
	}
	from := "default ~/.e"
	if os.Getenv("E_HOME") != "" {
		from = "from E_HOME"
	}
	d.say("home:      %s (%s)", home, from)
	if f, err := os.CreateTemp(home, ".doctor-*"); err != nil {
		d.problem("home is not writable: %v", err)
	} else {
		f.Close()
		os.Remove(f.Name())
	}

	path := filepath.Join(home, "settings.json")
	settings, err := store.LoadSettings(home)
	switch {
	case err != nil:
		d.say("settings:  %s", path)
		d.problemsOf(err)
	case fileExists(path):
		d.say("settings:  %s", path)
	default:
		d.say("settings:  %s (absent: the defaults)", path)
	}

	providers, err := model.ParseProviders(settings.Providers)
	if err != nil {
		d.problemsOf(err) // the providers without problems are still shown, and probed
	}
	cat, err := model.NewCatalog(model.Config{DefaultModel: settings.DefaultModel, Providers: providers})
	if err != nil {
		d.problem("%v", err)
		return
	}
	d.say("providers:")
	for _, p := range cat.Providers() {
		key := "no key needed"
		switch {
		case p.KeyEnv != "" && p.KeySet:
			key = p.KeyEnv + " is set"
		case p.KeyEnv != "":
			key = p.KeyEnv + " is not set"
		}
		d.say("  %-12s %-17s %-32s %s (%d models)", p.Name, p.API, p.BaseURL, key, p.Models)
		if d.probe {
			d.probeProvider(cat, p)
		}
	}
	def, warning := cat.Default()
	d.say("default model: %s", def)
	if warning != "" {
		d.say("  note: %s", warning)
	}
	if settings.DefaultModel != "" {
		if _, err := cat.Lookup(settings.DefaultModel); err != nil {
			d.problem("default_model %q: %v", settings.DefaultModel, err)
		} else if _, err := cat.Provider(settings.DefaultModel); err != nil {
			d.problem("%v", err)
		}
	}

	d.trust(home)
	d.extensions(home, settings)
	d.sandbox(settings)
}

// sandbox says what this machine can enforce (W5), and whether a confined
// command starts; a settings policy it cannot enforce is a problem (W4).
func (d *doctor) sandbox(settings store.Settings) {
	sup := sandbox.Probe()
	d.say("sandbox:")
	ns := "no"
	if sup.UserNS {
		ns = "yes"
	}
	sec := "no"
	if sup.Seccomp {
		sec = "yes"
	}
	d.say("  Landlock ABI %d, user namespaces %s, seccomp %s", sup.Landlock, ns, sec)
	switch {
	case len(sup.Modes) == 0:
		d.say("  can enforce: nothing (sessions asking for a sandbox are refused)")
	case sup.Network:
		d.say("  can enforce: workspace-write, read-only, with or without network")
	default:
		d.say("  can enforce: workspace-write, read-only, with network only")
	}
	if sup.Missing != "" {
		d.say("  missing: %s", sup.Missing)
	}
	mode := cmp.Or(settings.Sandbox, "off")
	d.say("  settings: sandbox %s, network %v, writable_roots %v", mode, settings.SandboxNetwork, settings.WritableRoots)
	if m, err := sandbox.ParseMode(mode); err != nil {
		d.problem("settings %v", err)
	} else if err := sup.Enforceable(sandbox.Policy{Mode: m, Network: settings.SandboxNetwork}); err != nil {
		d.problem("settings %v", err)
	}
	if sup.Enforceable(sandbox.Policy{Mode: sandbox.ReadOnly}) == nil {
		if err := sandbox.SelfTest(); err != nil {
			d.problem("%v", err)
		} else {
			d.say("  a confined command starts: yes")
		}
	}
}

// probeProvider calls provider p once (its models list): a built-in one
// without its key is skipped, as e would not use it.
func (d *doctor) probeProvider(cat *model.Catalog, p model.ProviderStatus) {
	if p.KeyEnv != "" && !p.KeySet {
		d.say("    probe: skipped (%s is not set)", p.KeyEnv)
		return
	}
	began := time.Now()
	if err := cat.Probe(context.Background(), p.Name); err != nil {
		var me *model.Error
		if errors.As(err, &me) && me.RequestID != "" {
			d.problem("probe %s: %v; request id %s", p.Name, err, me.RequestID)
			return
		}
		d.problem("probe %s: %v", p.Name, err)
		return
	}
	d.say("    probe: answered in %s", time.Since(began).Round(time.Millisecond))
}

func (d *doctor) trust(home string) {
	dirs, err := store.Trusted(home)
	d.say("trusted directories:")
	if err != nil {
		d.problem("%v", err)
	}
	for _, dir := range dirs {
		d.say("  %s", dir)
	}
	if len(dirs) == 0 && err == nil {
		d.say("  (none)")
	}
	cwd, err := os.Getwd()
	if err != nil {
		return
	}
	_, needTrust, err := store.Instructions(home, cwd)
	switch {
	case err != nil:
		d.problem("instructions of %s: %v", cwd, err)
	case needTrust:
		d.say("this directory: %s has an AGENTS.md but is not trusted: sessions here are refused (run e trust %s)", cwd, cwd)
	case store.IsTrusted(home, cwd):
		d.say("this directory: %s is trusted", cwd)
	default:
		d.say("this directory: %s (no AGENTS.md)", cwd)
	}
}

func (d *doctor) extensions(home string, settings store.Settings) {
	cfgs, err := extension.Configs(home, settings.Extensions)
	d.say("extensions:")
	if err != nil {
		d.problem("%v", err)
		return
	}
	if len(cfgs) == 0 {
		d.say("  (none)")
	}
	for _, c := range cfgs {
		line := strings.TrimSpace(c.Command + " " + strings.Join(c.Args, " "))
		if _, err := exec.LookPath(c.Command); err != nil {
			d.say("  %-12s %s", c.Name, line)
			d.problem("extension %s: %v", c.Name, err)
			continue
		}
		d.say("  %-12s %s", c.Name, line)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
