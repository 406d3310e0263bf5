package sop

// The page templates produce Markdown. The HTML file converts the same
// Markdown, so the two formats cannot say different things.
var templates = map[string]string{
	"index": `# {{t "title"}}

[{{t "otherLang"}}]({{otherLang}})

> {{tf "generated" (code .Site.ScenariosDirShown) (code .Site.FingerprintsDirShown)}}

## {{t "howTo"}}

1. {{t "howTo1"}}
2. {{t "howTo2"}}
3. {{t "howTo3"}}

## {{t "decisionOrder"}}

{{t "decisionIntro"}}

{{if .HTML}}<!--flowchart-->{{else}}{{mermaid}}{{end}}

## {{t "triage"}}

| {{t "symptom"}} | {{t "checkFirst"}} | {{t "layer"}} | {{t "owner"}} | {{t "runbook"}} |
|---|---|---|---|---|
{{range .Site.Rules}}| {{cell .Symptom}} | {{with index .Checks 0}}{{cell (code .Command)}}{{end}} | {{.LayerName}} | {{cell .Owner}} | [{{.ID}}]({{link "rule" .ID}}) |
{{end}}
## {{t "escalation"}}

| {{t "layer"}} | {{t "owner"}} | {{t "rules"}} | {{t "escalateWhen"}} | {{t "attach"}} | {{t "meanwhile"}} |
|---|---|---|---|---|---|
{{range .Site.Escalations}}| {{.E.LayerName}} | {{cell .E.Owner}} | {{range $i, $r := .Rules}}{{if $i}}, {{end}}[{{$r}}]({{link "rule" $r}}){{end}} | {{cell .E.When}} | {{cell .E.Attach}} | {{cell .E.Meanwhile}} |
{{end}}
## {{t "faultCatalog"}}

{{t "faultIntro"}}

| {{t "fault"}} | {{t "layer"}} | {{t "mechanism"}} | {{t "recordedAs"}} |
|---|---|---|---|
{{range .Site.Faults}}| {{code .Name}} | {{.Layer}} | {{cell .Summary}} | {{if .Recorded}}{{range $i, $r := .Recorded}}{{if $i}}<br>{{end}}{{code $r.Scenario}} → [{{$r.Rule}}]({{link "rule" $r.Rule}}){{end}}{{else}}{{t "notRecorded"}}{{end}} |
{{end}}
## {{t "baselines"}}

{{t "baselinesIntro"}}

| {{t "scenario"}} | {{t "selection"}} | {{t "costPerHour"}} | {{t "podReadyP50"}} |
|---|---|---|---|
{{range .Site.Baselines}}| [{{.Name}}]({{link "baseline" .Name}}) | {{cell .FirstSelection}} | {{.FirstCost}} | {{.PodReadyP50}} |
{{end}}
## {{t "signals"}}

{{t "signalsIntro"}}

| {{t "signal"}} | {{t "meaning"}} |
|---|---|
{{range .Site.Signals}}| {{code .ID}} | {{cell .Help}} |
{{end}}
`,
	"rule": `{{with .Page}}# {{.ID}}: {{.Title}}

[{{t "index"}}]({{link "index" ""}}) · [{{t "otherLang"}}]({{otherLang}})

{{label "layer"}} {{.LayerName}} · {{label "owner"}} {{.Owner}} · {{.Position}}

## {{t "whatYouSee"}}

{{.Symptom}}

## {{t "identifies"}}

{{t "identifiesIntro"}}

| {{t "signal"}} | {{t "condition"}} | {{t "meaning"}} |
|---|---|---|
{{range .Conditions}}| {{code .Signal}} | {{.Cond}} | {{cell .Help}} |
{{end}}
## {{t "fingerprint"}}

{{range .Recordings}}### {{.Scenario}}

{{tf "recordedFrom" (code .Scenario) (code .Fault) .Params (code .File)}}

{{if .Moves}}| {{t "field"}} | {{t "clean"}} | {{t "faulted"}} | {{t "change"}} |
|---|---|---|---|
{{range .Moves}}| {{code .Field}}{{if .Flagged}}{{paren (t "flagged")}}{{end}} | {{cell .Clean}} | {{cell .Faulted}} | {{.Change}} |
{{end}}{{else}}{{t "noMove"}}
{{end}}
{{t "evidence"}}{{colon}}

| {{t "signal"}} | {{t "value"}} | {{t "detail"}} |
|---|---|---|
{{range .Evidence}}| {{code .Signal}} | {{.Value}} | {{cell .Detail}} |
{{end}}
{{else}}{{if not .Unrecorded}}{{tf "noRecording" (code $.Site.ScenariosDirShown)}}
{{end}}{{end}}{{range .Unrecorded}}{{tf "notRecordedYet" (code .)}}

{{end}}
## {{t "confirm"}}

{{t "placeholders"}}

{{range $i, $c := .Checks}}{{$i | inc}}. {{$c.Why}}

   ` + "```sh" + `
   {{$c.Command}}
   ` + "```" + `
{{if $c.Context}}
   {{t "context"}}{{if $c.Shows}} {{t "contextShows"}}{{colon}}{{code $c.Shows}}{{end}}
{{else if $c.Shows}}
   {{t "lookFor"}}{{colon}}{{code $c.Shows}}
{{end}}
{{end}}
## {{t "rulesOut"}}

{{.RulesOut}}

## {{t "escalate"}}

- {{label "owner"}} {{.Escalation.Owner}}
- {{label "escalateWhen"}} {{.Escalation.When}}
- {{label "attach"}} {{.Escalation.Attach}}
- {{label "meanwhile"}} {{.Escalation.Meanwhile}}
{{with .Recordings}}
## {{t "reproduce"}}

{{t "reproduceIntro"}}

` + "```sh" + `
{{range .}}{{if .ScenarioPath}}nodeprint run {{.ScenarioPath}}
{{end}}{{end}}` + "```" + `
{{end}}{{end}}`,
	"baseline": `{{with .Page}}# {{tf "baselineOf" .Name}}

[{{t "index"}}]({{link "index" ""}}) · [{{t "otherLang"}}]({{otherLang}})

{{if .Description}}{{.Description}}

{{end}}{{if .ScenarioPath}}- {{label "scenarioFile"}} {{code .ScenarioPath}}
- {{label "nodePool"}} {{code .NodePool}}
- {{label "workloads"}} {{.Workloads}}
{{else}}- {{t "noScenario"}}
{{end}}- {{label "catalog"}} {{code .Catalog}}

{{.Recorded}}

## {{t "selection"}}

{{t "selectionIntro"}}

| {{t "instances"}} | {{t "nodes"}} | {{t "costPerHour"}} | {{t "seenIn"}} |
|---|---|---|---|
{{range .Selections}}| {{cell .Instances}} | {{.Nodes}} | {{.Cost}} | {{.SeenIn}} |
{{end}}
## {{t "shape"}}

- {{label "costRange"}} {{.CostRange}}
- {{label "zones"}} {{.Zones}}
- {{label "zoneSkew"}} {{.ZoneSkew}}
- {{label "podsPerNode"}} {{.PodsPerNode}}

## {{t "latency"}}

{{t "latencyIntro"}}

{{.Clock}}

| {{t "measure"}} | {{t "median"}} | {{t "seen"}} |
|---|---|---|
{{range .Latency}}| {{.Measure}} | {{.Median}} | {{.Seen}} |
{{end}}
## {{t "outcomes"}}

{{.Outcomes}}
{{with .ScaleIn}}
## {{t "scaleIn"}}

{{t "scaleInIntro"}}

{{range .}}- {{.}}
{{end}}{{end}}{{if .Note}}
{{label "note"}} {{.Note}}
{{end}}{{if .Accepted}}
{{label "accepted"}}

{{range .Accepted}}- {{.}}
{{end}}{{end}}
## {{t "compare"}}

{{t "compareIntro"}}

` + "```sh" + `
{{compareCommand}}
` + "```" + `

{{t "verifyIntro"}}

` + "```sh" + `
nodeprint verify {{.Name}}
` + "```" + `
{{end}}`,
}
