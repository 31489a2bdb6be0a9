package store

import (
	"strings"
	"testing"
)

// Every lexer compiles (its rules are only checked when first used) and
// marks what its language's readers expect.
func TestHighlightLexers(t *testing.T) {
	tests := []struct {
		lang, code, want string
	}{
		{lang: "go", code: "func main() { return nil }", want: `<span class="k">func</span> <span class="nf">main</span>`},
		{lang: "python", code: "def add(a, b):\n    return None", want: `<span class="nf">add</span>`},
		{lang: "ts", code: "const x: number = 1 // one", want: `<span class="c">// one</span>`},
		{lang: "sh", code: "sha256sum a && echo $HOME 2", want: `<span class="nv">$HOME</span>`},
		{lang: "json", code: `{"a": [1, true]}`, want: `<span class="nt">&#34;a&#34;</span>`},
		{lang: "diff", code: "--- a\n+++ b\n@@ -1 +1 @@\n-x\n+y\n", want: `<span class="gi">+y`},
		{lang: "cobol", code: "DISPLAY 'HI'.", want: `<pre class="chroma"><code>DISPLAY &#39;HI&#39;.</code></pre>`},
	}
	for _, tt := range tests {
		t.Run(tt.lang, func(t *testing.T) {
			got := string(highlight(tt.code, tt.lang))
			if !strings.Contains(got, tt.want) {
				t.Errorf("highlight(%q, %q) = %s\nwant it to contain %s", tt.code, tt.lang, got, tt.want)
			}
		})
	}
}
