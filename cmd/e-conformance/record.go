package main

import (
	"context"
	"fmt"
	"io"
)

func record(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "e-conformance record: not implemented yet")
	return 2
}
