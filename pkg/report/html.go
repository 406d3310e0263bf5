package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// series are the timeline's lines: what they count and how they look.
var series = []struct {
	name  string
	color color.RGBA
	dash  bool
	value func(Sample) int
}{
	{"pods pending", color.RGBA{R: 0xd9, G: 0x2d, B: 0x20, A: 0xff}, false, func(s Sample) int { return s.PodsPending }},
	{"pods running", color.RGBA{R: 0x06, G: 0x76, B: 0x47, A: 0xff}, false, func(s Sample) int { return s.PodsRunning }},
	{"NodeClaims launching (created, launched)", color.RGBA{R: 0xb5, G: 0x47, B: 0x08, A: 0xff}, true, func(s Sample) int { return s.NodeClaimsCreated + s.NodeClaimsLaunched }},
	{"NodeClaims registered, not initialised", color.RGBA{R: 0x6f, G: 0x4c, B: 0xc2, A: 0xff}, true, func(s Sample) int { return s.NodeClaimsRegistered }},
	{"NodeClaims initialised", color.RGBA{R: 0x15, G: 0x5e, B: 0xef, A: 0xff}, true, func(s Sample) int { return s.NodeClaimsInitialized }},
	{"nodes Ready", color.RGBA{R: 0x10, G: 0x18, B: 0x28, A: 0xff}, false, func(s Sample) int { return s.NodesReady }},
}

// Chart draws a timeline as SVG with gonum/plot: one step line per
// series, and a vertical line where the fault was injected.
func (tl *Timeline) Chart() ([]byte, error) {
	if tl == nil || len(tl.Samples) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.X.Label.Text = "seconds since start"
	p.Y.Label.Text = "count"
	p.Legend.Top = true
	p.Legend.Left = false
	p.Legend.Padding = vg.Points(2.5)
	p.Y.Min = 0
	ymax := 1.0
	for _, s := range series {
		xys := make(plotter.XYs, len(tl.Samples))
		for i, x := range tl.Samples {
			xys[i].X, xys[i].Y = x.Second, float64(s.value(x))
			ymax = max(ymax, xys[i].Y)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("failed to plot %s: %w", s.name, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = s.color
		l.Width = vg.Points(1.6)
		if s.dash {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Y.Max = ymax * 1.9 // room for the legend above the lines
	if at := tl.FaultInjectedAt; at != nil {
		f, err := plotter.NewLine(plotter.XYs{{X: *at, Y: 0}, {X: *at, Y: p.Y.Max}})
		if err != nil {
			return nil, err
		}
		f.Color = color.RGBA{R: 0xb4, G: 0x23, B: 0x18, A: 0xff}
		f.Width = vg.Points(1)
		f.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
		p.Add(f)
		p.Legend.Add("fault injected", f)
	}
	p.Add(plotter.NewGrid())
	p.Legend.ThumbnailWidth = vg.Points(18)
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	w, err := p.WriterTo(9*vg.Inch, 3.2*vg.Inch, "svg")
	if err != nil {
		return nil, fmt.Errorf("failed to draw the timeline: %w", err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("failed to draw the timeline: %w", err)
	}
	return stripXMLHeader(b.Bytes()), nil
}

// stripXMLHeader makes the SVG document an element that can sit in HTML.
func stripXMLHeader(b []byte) []byte {
	if i := bytes.Index(b, []byte("<svg")); i > 0 {
		return b[i:]
	}
	return b
}

type htmlScenario struct {
	Scenario
	VerdictText, ExpectedText, Effect, Timing string
	Chart                                     template.HTML
}

// HTML is the report as one self-contained page: the summary, then per
// scenario its verdict with evidence, its provisioning timeline and its
// fingerprint diff.
func (r *Report) HTML() ([]byte, error) {
	var scs []htmlScenario
	for _, s := range r.Scenarios {
		h := htmlScenario{Scenario: s, VerdictText: verdictText(&s), ExpectedText: expectedText(&s), Timing: s.TimingLine()}
		if s.Fault == "" {
			h.Effect = Effect(s.Baseline, s.Observed)
		}
		svg, err := s.Timeline.Chart()
		if err != nil {
			return nil, err
		}
		h.Chart = template.HTML(svg) // drawn by gonum/plot from numbers, no user text
		scs = append(scs, h)
	}
	var b bytes.Buffer
	if err := htmlTemplate.Execute(&b, struct {
		R         *Report
		Scenarios []htmlScenario
		Duration  string
	}{r, scs, r.Finished.Sub(r.Started).Round(1e9).String()}); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// The HTML labels statuses in words: emoji need a font that headless
// browsers and printers often lack.
var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{"icon": func(s string) template.HTML {
	return template.HTML(`<span class="badge ` + s + `">` + map[string]string{Passed: "PASS", Failed: "FAIL", Error: "ERROR"}[s] + `</span>`)
}}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>nodeprint {{.R.Command}}: {{.R.Summary.Passed}} passed, {{.R.Summary.Failed}} failed, {{.R.Summary.Errors}} errors</title>
<style>
body { font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif; color: #101828; margin: 0 auto; max-width: 1100px; padding: 0 24px 40px; }
table { border-collapse: collapse; width: 100%; margin: 8px 0 16px; }
th, td { border: 1px solid #d0d5dd; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f2f4f7; }
code { background: #f2f4f7; padding: 1px 4px; border-radius: 4px; }
section { border-top: 2px solid #d0d5dd; margin-top: 24px; }
.passed { color: #067647; } .failed { color: #b42318; } .error { color: #b54708; }
.badge { font-size: 11px; font-weight: bold; padding: 1px 5px; border-radius: 4px; border: 1px solid currentColor; }
.chart svg { width: 100%; height: auto; }
@media print { section { break-before: page; } }
</style>
</head>
<body>
<h1>nodeprint {{.R.Command}}</h1>
<p>{{.R.Summary.Passed}} passed, {{.R.Summary.Failed}} failed, {{.R.Summary.Errors}} errors of {{.R.Summary.Total}} · exit code {{.R.Summary.ExitCode}} · {{.Duration}}{{with .R.Stack.Karpenter}} · Karpenter {{.}}{{end}}{{with .R.Stack.Kubernetes}} · Kubernetes {{.}}{{end}}{{with .R.Stack.Provider}} · provider {{.}}{{end}}{{with .R.Stack.Nodes}} · {{.}}{{end}}{{with .R.Shard}} · shard {{.}}{{end}}{{if gt .R.Parallel 1}} · parallel {{.R.Parallel}}{{end}}</p>
{{with .R.UpgradeLine}}<p class="upgrade"><strong>{{.}}</strong></p>{{end}}
<table>
<tr><th></th><th>scenario</th><th>verdict</th><th>expected</th><th>seconds</th></tr>
{{range .Scenarios}}<tr><td>{{icon .Status}}</td><td><a href="#{{.Name}}">{{.Name}}</a></td><td>{{.VerdictText}}</td><td>{{.ExpectedText}}</td><td>{{printf "%.0f" .Seconds}}</td></tr>
{{end}}</table>
{{range .Scenarios}}<section id="{{.Name}}">
<h2 class="{{.Status}}">{{icon .Status}} {{.Name}}</h2>
{{with .File}}<p>Scenario file <code>{{.}}</code>{{end}}{{with .Runs}} · runs {{range $i, $r := .}}{{if $i}}, {{end}}<code>{{$r}}</code>{{end}}{{end}}</p>
{{with .Error}}<p class="error">Error: {{.}}</p>{{end}}
{{with .Verdict}}<p>Verdict <b>{{.Verdict}}</b>{{with .Rule}} by <code>{{.}}</code>{{end}}{{with .Title.En}} ({{.}}){{end}}{{with .Owner.En}}; owner: {{.}}{{end}}</p>
{{with .Reason}}<p>{{.}}</p>{{end}}
{{if .Fired}}<table><tr><th>evidence</th><th>value</th><th>detail</th></tr>
{{range (index .Fired 0).Evidence}}<tr><td><code>{{.ID}}</code></td><td>{{.Value}}</td><td>{{.Detail}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Runbook}}<p>Runbook: <code>{{.}}</code></p>{{end}}
{{if .Chart}}<h3>Provisioning timeline</h3>
<div class="chart" role="img" aria-label="provisioning timeline of {{.Name}}">{{.Chart}}</div>{{end}}
{{with .Diff}}{{if .Deviations}}<h3>Fingerprint diff</h3>
<table><tr><th>field</th><th>baseline</th><th>observed</th><th>severity</th><th>rule</th></tr>
{{range .Deviations}}<tr><td><code>{{.Path}}</code></td><td>{{.Baseline}}</td><td>{{.Observed}}</td><td>{{.Severity}}</td><td>{{.Rule}}</td></tr>
{{end}}</table>{{end}}{{end}}
{{with .Timing}}<p>Timing: {{.}}</p>{{end}}
{{with .Effect}}<p>Effect on provisioning: {{.}}</p>{{end}}
{{with .Inputs}}<h3>Inputs since the baseline</h3>
{{if .Unknown}}<p>Not compared: {{.Unknown}}</p>{{else if .Changes}}<table><tr><th>input</th><th>baseline</th><th>now</th></tr>
{{range .Changes}}<tr><td><code>{{.Path}}</code></td><td>{{.Was}}</td><td>{{.Now}}</td></tr>
{{end}}</table>
<p>If the change is intended, accept it as the new baseline: <code>{{.Accept}}</code></p>{{else}}<p>Unchanged.</p>{{end}}{{end}}
</section>
{{end}}
</body>
</html>
`))
