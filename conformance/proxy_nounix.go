//go:build !unix

package conformance

import (
	"context"
	"errors"
	"io"
)

// Proxy needs Unix signals and wait statuses.
func Proxy(context.Context, string, []string, io.Reader, io.Writer) (int, error) {
	return 2, errors.New("conformance: proxy: only on Unix")
}
