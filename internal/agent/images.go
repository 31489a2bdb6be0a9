package agent

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/e-agent/e/internal/model"
)

// Image limits (I1).
const (
	MaxImages     = 10
	MaxImageBytes = 20 << 20
	MaxImageTotal = 40 << 20
)

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// LoadImages reads prompt images, relative paths against cwd. The type is
// sniffed from the content, never taken from the extension. Any rule broken
// refuses the whole prompt before a model is called, naming the file.
func LoadImages(cwd string, paths []string) ([]model.Part, error) {
	if len(paths) > MaxImages {
		return nil, fmt.Errorf("images: %d files given, at most %d allowed", len(paths), MaxImages)
	}
	var parts []model.Part
	total := int64(0)
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("images[%d]: %w", i, err)
		}
		st, err := f.Stat()
		if err == nil && st.IsDir() {
			err = fmt.Errorf("%s is a directory", p)
		}
		if err == nil && st.Size() > MaxImageBytes {
			err = fmt.Errorf("%s is %d bytes, over the 20 MiB limit per image", p, st.Size())
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("images[%d]: %w", i, err)
		}
		total += st.Size()
		if total > MaxImageTotal {
			f.Close()
			return nil, fmt.Errorf("images[%d]: %s brings the total to %d bytes, over the 40 MiB limit", i, p, total)
		}
		data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("images[%d]: %w", i, err)
		}
		mt := http.DetectContentType(data)
		if !imageTypes[mt] {
			return nil, fmt.Errorf("images[%d]: %s is not a PNG, JPEG, GIF or WebP image (content looks like %s)", i, p, mt)
		}
		parts = append(parts, model.Part{Type: model.PartImage, MediaType: mt, Data: data})
	}
	return parts, nil
}
