package sop

import (
	"bytes"
	"fmt"
	"html"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	ghtml "github.com/yuin/goldmark/renderer/html"
)

type htmlSection struct {
	anchor, title, kind, layer string
	markdown                   []byte
}

var md = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	// The Markdown is ours (templates and rules.yaml), and it carries
	// <br> in table cells and the flowchart placeholder.
	goldmark.WithRendererOptions(ghtml.WithUnsafe()),
)

// html renders the language's pages into one self-contained file: every
// page a <section>, a navigation that is also the search's result list,
// and print styles that drop the navigation.
func (s *site) html(sections []htmlSection) ([]byte, error) {
	l := s.lang
	var nav, main bytes.Buffer
	group := ""
	for _, sec := range sections {
		g := sec.kind
		if sec.layer != "" {
			g = sec.layer
		}
		if g != group {
			if group != "" {
				nav.WriteString("</ul>")
			}
			fmt.Fprintf(&nav, `<h2>%s</h2><ul>`, html.EscapeString(navGroup(l, g)))
			group = g
		}
		fmt.Fprintf(&nav, `<li><a href="#%s">%s</a></li>`, sec.anchor, html.EscapeString(sec.title))
		var body bytes.Buffer
		if err := md.Convert(sec.markdown, &body); err != nil {
			return nil, fmt.Errorf("failed to convert %s to HTML: %w", sec.anchor, err)
		}
		h := strings.Replace(body.String(), "<!--flowchart-->", svg(s), 1)
		fmt.Fprintf(&main, "<section id=\"%s\" data-kind=\"%s\">\n%s</section>\n", sec.anchor, sec.kind, h)
	}
	nav.WriteString("</ul>")
	var out bytes.Buffer
	fmt.Fprintf(&out, htmlShell, l, html.EscapeString(msg(l, "title")), css,
		html.EscapeString(msg(l, "search")), html.EscapeString(msg(l, "search")), nav.String(), main.String(),
		jsString(msg(l, "matches")), searchJS)
	return out.Bytes(), nil
}

func navGroup(lang, g string) string {
	switch g {
	case "index":
		return msg(lang, "index")
	case "baseline":
		return msg(lang, "baselines")
	}
	return msg(lang, "layer"+g)
}

func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "<", `\u003c`).Replace(s) + `"`
}

const htmlShell = `<!DOCTYPE html>
<html lang="%s">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>%s</style>
</head>
<body>
<nav id="nav">
<input id="search" type="search" placeholder="%s" aria-label="%s" autocomplete="off">
<p id="search-count" aria-live="polite"></p>
%s
</nav>
<main id="main">
%s</main>
<script>var MATCHES = %s;
%s</script>
</body>
</html>
`

const css = `
:root { --fg: #101828; --muted: #475467; --line: #d0d5dd; --bg: #fff; --code: #f2f4f7; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", sans-serif; color: var(--fg); background: var(--bg); display: flex; }
nav { width: 300px; flex: none; height: 100vh; position: sticky; top: 0; overflow-y: auto; padding: 12px; border-right: 1px solid var(--line); background: #f9fafb; }
nav h2 { font-size: 12px; text-transform: uppercase; color: var(--muted); margin: 14px 0 4px; }
nav ul { list-style: none; margin: 0; padding: 0; }
nav li a { display: block; padding: 2px 4px; color: var(--fg); text-decoration: none; font-size: 13px; border-radius: 4px; }
nav li a:hover { background: #eaecf0; }
#search { width: 100%; padding: 6px 8px; font: inherit; border: 1px solid var(--line); border-radius: 6px; }
#search-count { color: var(--muted); font-size: 12px; margin: 4px 0 0; min-height: 1em; }
main { flex: 1; min-width: 0; padding: 0 28px 40px; max-width: 1100px; }
section { border-bottom: 2px solid var(--line); padding-bottom: 24px; }
section[hidden], li[hidden] { display: none; }
h1 { font-size: 24px; margin-top: 28px; }
h2 { font-size: 18px; margin-top: 24px; }
h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px; width: 100%; }
th, td { border: 1px solid var(--line); padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f2f4f7; }
code { background: var(--code); padding: 1px 4px; border-radius: 4px; font-size: 12.5px; word-break: break-word; }
pre { background: var(--code); padding: 8px 12px; border-radius: 6px; overflow-x: auto; }
pre code { padding: 0; }
blockquote { margin: 8px 0; padding: 4px 12px; border-left: 4px solid var(--line); color: var(--muted); }
svg.flow { max-width: 100%; height: auto; font: 12px sans-serif; }
svg.flow text.edge { fill: #475467; font-size: 11px; }
svg.flow a:hover rect { stroke-width: 2; }
@media print {
  nav { display: none; }
  body { display: block; }
  main { max-width: none; padding: 0; }
  section { break-before: page; border: 0; }
  section:first-child { break-before: auto; }
  a { color: inherit; text-decoration: none; }
  pre, table, svg { break-inside: avoid; }
}
`

// searchJS filters the pages by every word typed (ids, titles, symptoms,
// commands: the whole text). With an empty query every page shows, so the
// file reads and prints top to bottom; #search=<words> in the address
// pre-fills the query, so a link can open the runbook on a rule.
const searchJS = `(function () {
  "use strict";
  var input = document.getElementById("search");
  var count = document.getElementById("search-count");
  var sections = Array.prototype.slice.call(document.querySelectorAll("main > section"));
  var texts = sections.map(function (s) { return (s.id + " " + s.textContent).toLowerCase(); });
  var items = {};
  Array.prototype.forEach.call(document.querySelectorAll("nav li a"), function (a) {
    items[a.getAttribute("href").slice(1)] = a.parentElement;
  });
  function apply() {
    var terms = input.value.toLowerCase().split(/\s+/).filter(Boolean);
    var n = 0;
    sections.forEach(function (s, i) {
      var hit = terms.every(function (t) { return texts[i].indexOf(t) >= 0; });
      s.hidden = !hit;
      if (items[s.id]) { items[s.id].hidden = !hit; }
      if (hit) { n++; }
    });
    count.textContent = terms.length ? n + " " + MATCHES : "";
  }
  input.addEventListener("input", apply);
  var m = /^#search=(.*)$/.exec(location.hash);
  if (m) { input.value = decodeURIComponent(m[1]); apply(); }
})();
`
