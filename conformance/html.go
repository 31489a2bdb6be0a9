package conformance

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
)

// WriteHTML writes results as one self-contained HTML page (no external
// file, script or font): the counts, the verdicts by requirement, then
// each case that did not pass with its first divergence and its whole
// transcript, timed. scripts/check-html-report opens it in headless
// Chromium.
func WriteHTML(w io.Writer, results []*Result) error {
	type reqRow struct {
		ID                string
		Pass, Fail, Other int
		Cases             []string
	}
	byReq := map[string]*reqRow{}
	counts := map[Verdict]int{}
	var bad []*Result
	for _, r := range results {
		counts[r.Verdict]++
		for _, id := range r.Requirements {
			row := byReq[id]
			if row == nil {
				row = &reqRow{ID: id}
				byReq[id] = row
			}
			switch r.Verdict {
			case Pass:
				row.Pass++
			case Fail:
				row.Fail++
				row.Cases = append(row.Cases, r.ID)
			default:
				row.Other++
			}
		}
		if r.Verdict == Fail || r.Verdict == Error {
			bad = append(bad, r)
		}
	}
	var rows []*reqRow
	for _, k := range sortedKeys(byReq) {
		rows = append(rows, byReq[k])
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Fail > rows[j].Fail })
	type caseView struct {
		*Result
		Divergence string
		Start      int64
	}
	var views []caseView
	for _, r := range bad {
		v := caseView{Result: r}
		if r.Divergence != nil {
			v.Divergence = r.Divergence.String()
		}
		if len(r.Transcript) > 0 {
			v.Start = r.Transcript[0].At.UnixMilli()
		}
		views = append(views, v)
	}
	data := map[string]any{"Pass": counts[Pass], "Fail": counts[Fail], "Error": counts[Error], "Skip": counts[Skip],
		"Total": len(results), "Reqs": rows, "Bad": views}
	return htmlPage.Execute(w, data)
}

var htmlPage = template.Must(template.New("report").Funcs(template.FuncMap{
	"ms":   func(start int64, e Exchange) string { return fmt.Sprintf("+%d ms", e.At.UnixMilli()-start) },
	"join": func(s []string) string { return strings.Join(s, " ") },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>e-conformance report</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;text-align:left}
.fail{color:#b00}.pass{color:#070}pre{background:#f6f6f6;padding:8px;overflow:auto;white-space:pre-wrap}
.sent{color:#036}.received{color:#333}.model{color:#606}.signal{color:#a60}
</style></head><body>
<h1>e-conformance report</h1>
<p id="summary"><span class="pass">{{.Pass}} passed</span>, <span class="fail">{{.Fail}} failed</span>, {{.Error}} errors, {{.Skip}} skipped of {{.Total}} cases</p>
<h2>Verdicts by requirement</h2>
<table id="requirements"><tr><th>requirement</th><th>pass</th><th>fail</th><th>other</th><th>failing cases</th></tr>
{{range .Reqs}}<tr><td>{{.ID}}</td><td>{{.Pass}}</td><td class="{{if .Fail}}fail{{end}}">{{.Fail}}</td><td>{{.Other}}</td><td>{{join .Cases}}</td></tr>
{{end}}</table>
<h2>Cases that did not pass</h2>
{{range .Bad}}<section class="case" id="case-{{.ID}}"><h3 class="fail">{{.Verdict}} {{.ID}} ({{.Level}} {{join .Requirements}})</h3>
<h4>First divergence</h4><pre class="divergence">{{.Divergence}}</pre>
{{if .Repro}}<p>repro: <code>{{.Repro}}</code></p>{{end}}
<h4>Transcript</h4><pre class="transcript">{{$s := .Start}}{{range .Transcript}}<span class="{{.Dir}}">{{ms $s .}} {{.Dir}} {{.Line}}</span>
{{end}}</pre>{{if .Stderr}}<h4>stderr</h4><pre>{{.Stderr}}</pre>{{end}}</section>
{{else}}<p id="all-passed">Every case passed.</p>{{end}}
</body></html>
`))
