package store

import (
	"bytes"
	"html/template"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/util"
)

// The export renders model answers as markdown with goldmark (raw HTML is
// dropped, dangerous link URLs emptied: its safe defaults) and highlights
// code with chroma into classes styled by one embedded stylesheet, so the
// page needs no script and no asset.

var (
	codeFormatter = chromahtml.New(chromahtml.WithClasses(true))
	markdown      = goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(exportNodes{}, 100))),
	)
	// codeCSS is the stylesheet of the highlighted code, light and dark.
	codeCSS = sync.OnceValue(func() template.CSS {
		var b bytes.Buffer
		codeFormatter.WriteCSS(&b, codeStyle)
		b.WriteString("@media (prefers-color-scheme: dark) {\n")
		codeFormatter.WriteCSS(&b, codeStyleDark())
		b.WriteString("}\n")
		return template.CSS(b.String())
	})
)

// renderMarkdown turns markdown into HTML that is safe to embed.
func renderMarkdown(src string) template.HTML {
	var b bytes.Buffer
	if err := markdown.Convert([]byte(src), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(src))
	}
	return template.HTML(b.String())
}

// highlight renders code in lang (a lexer name or alias of highlight.go;
// "" or an unknown one means plain text) as a highlighted <pre>.
func highlight(code, lang string) template.HTML {
	lx := lexer(lang)
	if lang == "" || lx == nil {
		return template.HTML(`<pre class="chroma"><code>` + template.HTMLEscapeString(code) + "</code></pre>")
	}
	it, err := chroma.Coalesce(lx).Tokenise(nil, code)
	var b bytes.Buffer
	if err == nil {
		err = codeFormatter.Format(&b, codeStyle, it)
	}
	if err != nil {
		return template.HTML("<pre>" + template.HTMLEscapeString(code) + "</pre>")
	}
	return template.HTML(b.String())
}

// exportNodes renders fenced code with highlighting, and images as their
// address in text: a page that fetches nothing shows no remote image.
type exportNodes struct{}

func (exportNodes) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, renderFenced)
	reg.Register(ast.KindImage, renderImage)
}

func renderFenced(w util.BufWriter, src []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.FencedCodeBlock)
	var code strings.Builder
	for i := range n.Lines().Len() {
		seg := n.Lines().At(i)
		code.Write(seg.Value(src))
	}
	_, err := w.WriteString(string(highlight(code.String(), string(n.Language(src)))))
	return ast.WalkSkipChildren, err
}

func renderImage(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.Image)
	_, err := w.WriteString(`<span class="img">[image ` + template.HTMLEscapeString(string(n.Destination)) + `]</span>`)
	return ast.WalkSkipChildren, err
}
