package repo

// OutDir is where nodeprint's own suites and tools write what they
// produce, relative to the checkout's root; git ignores it.
const OutDir = "out"

// SuiteReports is where each suite writes its report, relative to the
// checkout's root: out/suites/<suite>/ (report.json, summary.md,
// junit.xml, report.html), which `make e2e` prints and `make soak`
// compares.
const SuiteReports = OutDir + "/suites"

// Out is a tool's default output directory, relative to the checkout's
// root: out/<tool>.
func Out(tool string) string { return OutDir + "/" + tool }
