package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/store"
)

// runModels is e models: the catalog models.list answers, for a person
// at a shell (the names -m and session.create's model take).
func runModels(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("models", stderr)
	var jsonOut bool
	fs.BoolVar(&jsonOut, "json", false, "print models.list's result as JSON")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	if len(pos) > 0 {
		return usageError(stderr, fmt.Errorf("models takes no arguments, got %q", pos[0]))
	}
	cat, err := catalog()
	if err != nil {
		fmt.Fprintf(stderr, "e models: %v\n", err)
		return 1
	}
	def, _ := cat.Default()
	models := cat.Models()
	if jsonOut {
		b, _ := json.Marshal(struct {
			Default string       `json:"default"`
			Models  []model.Info `json:"models"`
		}{def, models})
		fmt.Fprintf(stdout, "%s\n", b)
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODEL\tAVAILABLE\tCONTEXT\tEFFORT\tIMAGES")
	for _, m := range models {
		name := m.ID
		if m.ID == def {
			name += " (default)"
		}
		avail := "yes"
		if m.Available != nil && !*m.Available {
			avail = "no key"
		}
		effort := strings.Join(m.Efforts, ",")
		if effort == "" {
			effort = "-"
		}
		images := "no"
		if m.ImageInput {
			images = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", name, avail, m.ContextWindow, effort, images)
	}
	tw.Flush()
	return 0
}

// catalog is the model catalog of e's home's settings, as a session host
// builds it.
func catalog() (*model.Catalog, error) {
	home, err := store.Home()
	if err != nil {
		return nil, err
	}
	settings, err := store.LoadSettings(home)
	if err != nil {
		return nil, err
	}
	providers, err := model.ParseProviders(settings.Providers)
	if err != nil {
		return nil, err
	}
	return model.NewCatalog(model.Config{DefaultModel: settings.DefaultModel, Providers: providers})
}
