package store

import (
	"sync"

	"github.com/alecthomas/chroma/v2"
)

// The export highlights with chroma's engine and HTML formatter, but with
// the lexers and style below rather than chroma's lexers and styles
// packages: those parse every bundled XML definition in their package
// init, which cost every start of e (every e rpc, every e -p) about 25 ms
// idle and over 400 ms on a loaded machine, for a page exported now and
// then. These cover what transcripts mostly hold; anything else is shown
// as plain text. They are built on first use.

// lexer returns the lexer for a fence's language name, or nil.
func lexer(lang string) chroma.Lexer {
	return lexerRegistry().Get(lang)
}

var lexerRegistry = sync.OnceValue(func() *chroma.LexerRegistry {
	reg := chroma.NewLexerRegistry()
	for _, l := range []*chroma.RegexLexer{goLexer(), pythonLexer(), scriptLexer(), shellLexer(), jsonLexer(), diffLexer()} {
		reg.Register(l)
	}
	return reg
})

var (
	number      = chroma.Rule{Pattern: `\b(0[xX][0-9a-fA-F_]+|\d[\d_]*(\.\d+)?([eE][+-]?\d+)?)\b`, Type: chroma.LiteralNumber}
	dqString    = chroma.Rule{Pattern: `"(\\\\|\\"|[^"\n])*"`, Type: chroma.LiteralString}
	sqString    = chroma.Rule{Pattern: `'(\\\\|\\'|[^'\n])*'`, Type: chroma.LiteralString}
	btString    = chroma.Rule{Pattern: "`[^`]*`", Type: chroma.LiteralString}
	hashComment = chroma.Rule{Pattern: `#[^\n]*`, Type: chroma.Comment}
	lineComment = chroma.Rule{Pattern: `//[^\n]*`, Type: chroma.Comment}
	blockComent = chroma.Rule{Pattern: `(?s)/\*.*?\*/`, Type: chroma.Comment}
	operator    = chroma.Rule{Pattern: `[-+*/%&|^!=<>:?~]+`, Type: chroma.Operator}
	punctuation = chroma.Rule{Pattern: `[()\[\]{},;.]`, Type: chroma.Punctuation}
	word        = chroma.Rule{Pattern: `[\p{L}_][\p{L}\p{N}_]*`, Type: chroma.Name}
	space       = chroma.Rule{Pattern: `\s+`, Type: chroma.Text}
	other       = chroma.Rule{Pattern: `.`, Type: chroma.Text}
)

// definition is a keyword-led declaration: the keyword, then the name it
// declares as a function name.
func definition(keywords ...string) chroma.Rule {
	return chroma.Rule{Pattern: chroma.Words(`\b`, `(\s+)([\p{L}_][\p{L}\p{N}_]*)`, keywords...),
		Type: chroma.ByGroups(chroma.Keyword, chroma.Text, chroma.NameFunction)}
}

func keywords(t chroma.TokenType, words ...string) chroma.Rule {
	return chroma.Rule{Pattern: chroma.Words(`\b`, `\b`, words...), Type: t}
}

func newLexer(cfg *chroma.Config, rules ...chroma.Rule) *chroma.RegexLexer {
	return chroma.MustNewLexer(cfg, func() chroma.Rules { return chroma.Rules{"root": rules} })
}

func goLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "Go", Aliases: []string{"go", "golang"}, Filenames: []string{"*.go"}},
		lineComment, blockComent, dqString, btString, sqString,
		definition("func", "type"),
		keywords(chroma.Keyword, "break", "case", "chan", "const", "continue", "default", "defer", "else",
			"fallthrough", "for", "func", "go", "goto", "if", "import", "interface", "map", "package", "range",
			"return", "select", "struct", "switch", "type", "var"),
		keywords(chroma.KeywordConstant, "true", "false", "nil", "iota"),
		keywords(chroma.NameBuiltin, "append", "cap", "clear", "close", "copy", "delete", "len", "make", "max",
			"min", "new", "panic", "print", "println", "recover", "any", "bool", "byte", "error", "int", "int64",
			"rune", "string", "uint", "float64"),
		number, operator, punctuation, word, space, other)
}

func pythonLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "Python", Aliases: []string{"python", "py", "python3"}, Filenames: []string{"*.py"}},
		hashComment,
		chroma.Rule{Pattern: `(?s)("""|''').*?("""|''')`, Type: chroma.LiteralString},
		dqString, sqString,
		definition("def", "class"),
		keywords(chroma.Keyword, "and", "as", "assert", "async", "await", "break", "class", "continue", "def",
			"del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import", "in", "is",
			"lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while", "with", "yield"),
		keywords(chroma.KeywordConstant, "True", "False", "None"),
		keywords(chroma.NameBuiltin, "print", "len", "range", "open", "str", "int", "float", "list", "dict",
			"set", "tuple", "isinstance", "enumerate", "zip", "sorted", "self"),
		number, operator, punctuation, word, space, other)
}

func scriptLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "JavaScript", Aliases: []string{"javascript", "js", "jsx", "mjs",
		"typescript", "ts", "tsx"}, Filenames: []string{"*.js", "*.ts", "*.mjs", "*.jsx", "*.tsx"}},
		lineComment, blockComent, dqString, sqString, btString,
		definition("function", "class", "interface", "type"),
		keywords(chroma.Keyword, "async", "await", "break", "case", "catch", "class", "const", "continue",
			"default", "delete", "do", "else", "export", "extends", "finally", "for", "from", "function", "if",
			"import", "in", "instanceof", "interface", "let", "new", "of", "return", "switch", "throw", "try",
			"type", "typeof", "var", "while", "yield"),
		keywords(chroma.KeywordConstant, "true", "false", "null", "undefined", "this"),
		number, operator, punctuation, word, space, other)
}

func shellLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "Bash", Aliases: []string{"bash", "sh", "shell", "zsh", "console"},
		Filenames: []string{"*.sh"}},
		hashComment, dqString, sqString,
		chroma.Rule{Pattern: `\$(\{[^}]*\}|\w+|[?$!#@*0-9])`, Type: chroma.NameVariable},
		keywords(chroma.Keyword, "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done",
			"case", "esac", "in", "function", "return", "export", "local"),
		// A word may hold digits (python3, sha256sum): only a whole number is one.
		chroma.Rule{Pattern: `[\p{L}\p{N}_./-]*[\p{L}_./-][\p{L}\p{N}_./-]*`, Type: chroma.Text},
		number,
		chroma.Rule{Pattern: `&&|\|\||[|;&<>]+`, Type: chroma.Operator},
		space, other)
}

func jsonLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "JSON", Aliases: []string{"json", "jsonl"}, Filenames: []string{"*.json"}},
		chroma.Rule{Pattern: `("(\\\\|\\"|[^"\n])*")(\s*)(:)`, Type: chroma.ByGroups(chroma.NameTag, chroma.Text, chroma.Text, chroma.Punctuation)},
		dqString,
		keywords(chroma.KeywordConstant, "true", "false", "null"),
		chroma.Rule{Pattern: `-?\d+(\.\d+)?([eE][+-]?\d+)?`, Type: chroma.LiteralNumber},
		punctuation, space, other)
}

func diffLexer() *chroma.RegexLexer {
	return newLexer(&chroma.Config{Name: "Diff", Aliases: []string{"diff", "patch", "udiff"}, Filenames: []string{"*.diff", "*.patch"}},
		chroma.Rule{Pattern: `(?m)^(\+\+\+|---)[^\n]*\n?`, Type: chroma.GenericHeading},
		chroma.Rule{Pattern: `(?m)^@@[^\n]*\n?`, Type: chroma.GenericSubheading},
		chroma.Rule{Pattern: `(?m)^\+[^\n]*\n?`, Type: chroma.GenericInserted},
		chroma.Rule{Pattern: `(?m)^-[^\n]*\n?`, Type: chroma.GenericDeleted},
		chroma.Rule{Pattern: `[^\n]*\n?`, Type: chroma.Text})
}

// codeStyle is GitHub-like light colours for the token classes above.
var codeStyle = chroma.MustNewStyle("e", chroma.StyleEntries{
	chroma.Background:        "bg:#f6f8fa #1f2328",
	chroma.Keyword:           "bold #cf222e",
	chroma.KeywordConstant:   "#0550ae",
	chroma.NameFunction:      "#8250df",
	chroma.NameBuiltin:       "#953800",
	chroma.NameVariable:      "#953800",
	chroma.NameTag:           "#116329",
	chroma.LiteralString:     "#0a3069",
	chroma.LiteralNumber:     "#0550ae",
	chroma.Comment:           "italic #6e7781",
	chroma.Operator:          "#cf222e",
	chroma.GenericInserted:   "bg:#dafbe1 #116329",
	chroma.GenericDeleted:    "bg:#ffebe9 #82071e",
	chroma.GenericHeading:    "bold #1f2328",
	chroma.GenericSubheading: "#8250df",
})

// codeStyleDark is the same classes in GitHub-like dark colours, for a
// reader whose system prefers a dark scheme. Built on first use (codeCSS),
// not at start-up: only an export needs it.
func codeStyleDark() *chroma.Style {
	return chroma.MustNewStyle("e-dark", chroma.StyleEntries{
		chroma.Background:        "bg:#161b22 #e6edf3",
		chroma.Keyword:           "bold #ff7b72",
		chroma.KeywordConstant:   "#79c0ff",
		chroma.NameFunction:      "#d2a8ff",
		chroma.NameBuiltin:       "#ffa657",
		chroma.NameVariable:      "#ffa657",
		chroma.NameTag:           "#7ee787",
		chroma.LiteralString:     "#a5d6ff",
		chroma.LiteralNumber:     "#79c0ff",
		chroma.Comment:           "italic #8b949e",
		chroma.Operator:          "#ff7b72",
		chroma.GenericInserted:   "bg:#033a16 #aff5b4",
		chroma.GenericDeleted:    "bg:#67060c #ffdcd7",
		chroma.GenericHeading:    "bold #e6edf3",
		chroma.GenericSubheading: "#d2a8ff",
	})
}
