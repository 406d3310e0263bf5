package sop

import (
	"fmt"
	"html"
	"strings"

	"github.com/nodeprint/nodeprint/pkg/attribute"
	"github.com/nodeprint/nodeprint/pkg/layer"
)

// mermaid is the decision order as a Mermaid flowchart, for Markdown
// viewers that render it (GitHub, GitLab, most wikis).
func mermaid(s *site) string {
	l := s.lang
	var b strings.Builder
	esc := func(t string) string {
		r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;")
		return r.Replace(t)
	}
	fmt.Fprintf(&b, "flowchart TD\n")
	fmt.Fprintf(&b, "  start([\"%s\"]) --> H{\"%s\"}\n", esc(msg(l, "start")), esc(msg(l, "healthy")))
	fmt.Fprintf(&b, "  H -- %s --> INC_ENV[\"%s\"]\n", msg(l, "no"), esc(msg(l, "inconclusiveEnv")))
	prev, edge := "H", msg(l, "yes")
	for i, r := range s.rules {
		id := fmt.Sprintf("R%d", i+1)
		var conds []string
		for _, c := range r.Conditions {
			conds = append(conds, esc(c.Signal+" "+c.Cond))
		}
		fmt.Fprintf(&b, "  %s -- %s --> %s{\"%s<br/>%s\"}\n", prev, edge, id, r.ID, strings.Join(conds, "<br/>"))
		fmt.Fprintf(&b, "  %s -- %s --> V%s\n", id, msg(l, "yes"), r.Layer)
		prev, edge = id, msg(l, "no")
	}
	for i, st := range attribute.Fallbacks {
		id := fmt.Sprintf("F%d", i+1)
		if i == len(attribute.Fallbacks)-1 {
			fmt.Fprintf(&b, "  %s -- %s --> %s[\"%s\"]\n", prev, edge, id, esc(msg(l, "step."+st.ID+".verdict")))
			break
		}
		fmt.Fprintf(&b, "  %s -- %s --> %s{\"%s\"}\n", prev, edge, id, esc(msg(l, "step."+st.ID)))
		fmt.Fprintf(&b, "  %s -- %s --> %sV[\"%s\"]\n", id, msg(l, "yes"), id, esc(msg(l, "step."+st.ID+".verdict")))
		prev, edge = id, msg(l, "no")
	}
	for _, ly := range layer.All {
		fmt.Fprintf(&b, "  V%s[\"%s<br/>%s\"]\n", ly, esc(msg(l, "layer"+string(ly))), esc(s.in.Rules.Owners[ly].In(l)))
	}
	b.WriteString("  classDef l1 fill:#fde2e1,stroke:#b42318\n  classDef l2 fill:#fff4ce,stroke:#b54708\n  classDef l3 fill:#dcfae6,stroke:#067647\n")
	for _, ly := range layer.All {
		ids := []string{"V" + string(ly)}
		for i, r := range s.rules {
			if r.Layer == string(ly) {
				ids = append(ids, fmt.Sprintf("R%d", i+1))
			}
		}
		fmt.Fprintf(&b, "  class %s %s\n", strings.Join(ids, ","), strings.ToLower(string(ly)))
	}
	return b.String()
}

var layerColors = map[layer.Layer][2]string{
	layer.L1: {"#fde2e1", "#b42318"},
	layer.L2: {"#fff4ce", "#b54708"},
	layer.L3: {"#dcfae6", "#067647"},
	"":       {"#f2f4f7", "#475467"},
}

// svg draws the same decision order for the HTML file, which must work
// offline and so cannot load Mermaid: one box per rule down the left, its
// verdict on the right, each box a link to the rule's page.
func svg(s *site) string {
	l := s.lang
	const (
		x0, w0    = 10, 430 // decision column
		x1, w1    = 500, 300
		lineH     = 16
		pad       = 10
		gap       = 22
		wrapChars = 58
	)
	var body strings.Builder
	y := 10
	box := func(x, y, w, h int, ly, href string, lines []string, bold int) {
		c := layerColors[layer.Layer(ly)]
		if href != "" {
			fmt.Fprintf(&body, `<a href="%s">`, href)
		}
		fmt.Fprintf(&body, `<rect x="%d" y="%d" width="%d" height="%d" rx="6" fill="%s" stroke="%s"/>`, x, y, w, h, c[0], c[1])
		for i, t := range lines {
			weight := ""
			if i < bold {
				weight = ` font-weight="bold"`
			}
			fmt.Fprintf(&body, `<text x="%d" y="%d"%s>%s</text>`, x+pad, y+pad+lineH*(i+1)-4, weight, html.EscapeString(t))
		}
		if href != "" {
			body.WriteString(`</a>`)
		}
	}
	arrow := func(x1, y1, x2, y2 int, label string) {
		fmt.Fprintf(&body, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#475467" marker-end="url(#arrow)"/>`, x1, y1, x2, y2)
		if label != "" {
			fmt.Fprintf(&body, `<text x="%d" y="%d" class="edge">%s</text>`, (x1+x2)/2+4, (y1+y2)/2-3, html.EscapeString(label))
		}
	}
	height := func(n int) int { return n*lineH + 2*pad - 4 }
	row := func(layer, href string, lines []string, bold int, verdict []string, vlayer, vhref string) {
		h := max(height(len(lines)), height(len(verdict)))
		box(x0, y, w0, h, layer, href, lines, bold)
		if verdict != nil {
			box(x1, y, w1, h, vlayer, vhref, verdict, 1)
			arrow(x0+w0, y+h/2, x1, y+h/2, msg(l, "yes"))
		}
		y += h
		arrow(x0+w0/2, y, x0+w0/2, y+gap, msg(l, "no"))
		y += gap
	}
	row("", "", []string{msg(l, "healthy")}, 1, []string{msg(l, "inconclusiveEnv")}, "", "")
	for _, r := range s.rules {
		var conds []string
		for _, c := range r.Conditions {
			conds = append(conds, c.Signal+" "+c.Cond)
		}
		title := wrap(r.ID+" · "+r.Title, wrapChars-6)
		lines := append(title, wrap(strings.Join(conds, ", "), wrapChars)...)
		row(r.Layer, "#rule-"+r.ID, lines, len(title), append([]string{r.LayerName}, wrap(r.Owner, 40)...), r.Layer, "#rule-"+r.ID)
	}
	for i, st := range attribute.Fallbacks {
		if i == len(attribute.Fallbacks)-1 {
			h := height(1)
			box(x0, y, w0, h, "", "", []string{msg(l, "step."+st.ID+".verdict")}, 0)
			y += h + 10
			break
		}
		row("", "", wrap(msg(l, "step."+st.ID), wrapChars), 1, wrap(msg(l, "step."+st.ID+".verdict"), 40), "", "")
	}
	return fmt.Sprintf(`<svg class="flow" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+
		`<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#475467"/></marker></defs>%s</svg>`,
		html.EscapeString(msg(l, "decisionOrder")), x1+w1+10, y, x1+w1+10, y, body.String())
}

// wrap breaks text into lines of at most n runes, at spaces.
func wrap(t string, n int) []string {
	var lines []string
	var cur []rune
	for _, w := range strings.Fields(t) {
		rw := []rune(w)
		if len(cur) > 0 && len(cur)+1+len(rw) > n {
			lines = append(lines, string(cur))
			cur = nil
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, rw...)
	}
	if len(cur) > 0 {
		lines = append(lines, string(cur))
	}
	return lines
}
