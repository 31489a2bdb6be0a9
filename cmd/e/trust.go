package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/e-agent/e/internal/store"
)

// runTrust is e trust (C9).
func runTrust(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("trust", stderr)
	list := fs.Bool("list", false, "list trusted directories")
	revoke := fs.Bool("revoke", false, "forget a directory")
	pos, err := parse(fs, args)
	if err != nil {
		return usageError(stderr, err)
	}
	home, err := store.Home()
	if err != nil {
		fmt.Fprintf(stderr, "e trust: %v\n", err)
		return 1
	}
	if *list {
		if len(pos) > 0 {
			return usageError(stderr, fmt.Errorf("trust --list takes no directory"))
		}
		dirs, err := store.Trusted(home)
		if err != nil {
			fmt.Fprintf(stderr, "e trust: %v\n", err)
			return 1
		}
		for _, d := range dirs {
			fmt.Fprintln(stdout, d)
		}
		return 0
	}
	if len(pos) != 1 {
		return usageError(stderr, fmt.Errorf("trust needs exactly one directory"))
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		fmt.Fprintf(stderr, "e trust: %v\n", err)
		return 1
	}
	if *revoke {
		err = store.Revoke(home, dir)
	} else {
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "e trust: %s is not a directory\n", dir)
			return 1
		}
		err = store.Trust(home, dir)
	}
	if err != nil {
		fmt.Fprintf(stderr, "e trust: %v\n", err)
		return 1
	}
	return 0
}
