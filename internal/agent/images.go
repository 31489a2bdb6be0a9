package agent

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/e-agent/e/internal/model"
	"github.com/e-agent/e/internal/regfile"
)

// Image limits (I1).
const (
	MaxImages     = 10
	MaxImageBytes = 20 << 20
	MaxImageTotal = 40 << 20
)

var imageTypes = map[string]bool{"image/png": true, "image/jpeg": true, "image/gif": true, "image/webp": true}

// ImageError is a LoadImages failure: Index is the image at fault, -1
// for the list as a whole.
type ImageError struct {
	Index int
	Err   error
}

// Param names the input at fault: "images" or "images[i]".
func (e *ImageError) Param() string {
	if e.Index < 0 {
		return "images"
	}
	return fmt.Sprintf("images[%d]", e.Index)
}

func (e *ImageError) Error() string { return e.Param() + ": " + e.Err.Error() }
func (e *ImageError) Unwrap() error { return e.Err }

// LoadImages reads prompt images, relative paths against cwd. The type is
// sniffed from the content, never taken from the extension. Any rule broken
// refuses the whole prompt before a model is called, naming the file.
func LoadImages(cwd string, paths []string) ([]model.Part, error) {
	if len(paths) > MaxImages {
		return nil, &ImageError{-1, fmt.Errorf("%d files given, at most %d allowed", len(paths), MaxImages)}
	}
	var parts []model.Part
	total := int64(0)
	for i, p := range paths {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		f, st, err := regfile.Open(p) // a FIFO or device is refused, never read (Y1)
		if err != nil {
			return nil, &ImageError{i, err}
		}
		if st.Size() > MaxImageBytes {
			err = fmt.Errorf("%s is %d bytes, over the 20 MiB limit per image", p, st.Size())
		}
		if err != nil {
			f.Close()
			return nil, &ImageError{i, err}
		}
		total += st.Size()
		if total > MaxImageTotal {
			f.Close()
			return nil, &ImageError{i, fmt.Errorf("%s brings the total to %d bytes, over the 40 MiB limit", p, total)}
		}
		data, err := regfile.ReadAll(f, p, st.Size(), MaxImageBytes)
		f.Close()
		if err != nil {
			return nil, &ImageError{i, err}
		}
		part, err := imagePart(p, data)
		if err != nil {
			return nil, &ImageError{i, err}
		}
		parts = append(parts, part)
	}
	return parts, nil
}

// ImageData returns an image given as bytes (ACP's base64 image blocks),
// checked by the rules LoadImages applies to one file; name says where it
// came from in errors.
func ImageData(name string, data []byte) (model.Part, error) {
	if len(data) > MaxImageBytes {
		return model.Part{}, fmt.Errorf("%s is %d bytes, over the 20 MiB limit per image", name, len(data))
	}
	return imagePart(name, data)
}

// imagePart sniffs data's type; the declared type is never trusted.
func imagePart(name string, data []byte) (model.Part, error) {
	mt := http.DetectContentType(data)
	if !imageTypes[mt] {
		return model.Part{}, fmt.Errorf("%s is not a PNG, JPEG, GIF or WebP image (content looks like %s)", name, mt)
	}
	return model.Part{Type: model.PartImage, MediaType: mt, Data: data}, nil
}
