package scenario

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodeprint/nodeprint/pkg/catalog"
	"github.com/nodeprint/nodeprint/pkg/strictyaml"
)

// MaxFileSize bounds an input file; scenarios are small.
const MaxFileSize = strictyaml.MaxFileSize

// Loader resolves references against a fixtures directory.
type Loader struct {
	// FixturesDir holds nodepools/ and catalogs/.
	FixturesDir string
	// GenericCatalog is the path of the KWOK provider's own catalog (the
	// "kwok-generic" catalog), built into bin/ by make tools.
	GenericCatalog string
	// ValidateFault checks a fault block against the fault catalog (name,
	// parameters); nil accepts any fault. pkg/faults provides it: the
	// scenario package cannot know the catalog without an import cycle.
	ValidateFault func(f *Fault, add func(field, msg string, args ...any))
}

// LoadDir loads every *.yaml file directly in dir, sorted by name, and
// rejects duplicate scenario names.
func (l *Loader) LoadDir(dir string) ([]*Scenario, error) {
	files, err := YAMLFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("failed to read scenarios: %w", err)
	}
	return l.LoadFiles(files...)
}

// YAMLFiles lists the *.yaml and *.yml files directly in dir, sorted.
func YAMLFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(files)
	return files, nil
}

// LoadFiles loads the given files and rejects duplicate scenario names.
func (l *Loader) LoadFiles(files ...string) ([]*Scenario, error) {
	var out []*Scenario
	var errs []error
	seen := map[string]string{}
	for _, f := range files {
		s, err := l.Load(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if prev, ok := seen[s.Metadata.Name]; ok {
			errs = append(errs, &FieldError{File: f, Path: "metadata.name", Msg: fmt.Sprintf("scenario %q is also defined in %s: names must be unique", s.Metadata.Name, prev)})
			continue
		}
		seen[s.Metadata.Name] = f
		out = append(out, s)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Load reads, decodes and validates one scenario file.
func (l *Loader) Load(path string) (*Scenario, error) {
	data, err := readInput(path)
	if err != nil {
		return nil, err
	}
	return l.Parse(path, data)
}

// Parse decodes and validates a scenario read from path (named in every
// error). Every problem is a *FieldError; a valid scenario is returned
// only when there is none.
func (l *Loader) Parse(path string, data []byte) (*Scenario, error) {
	if err := strictyaml.CheckText(path, data, MaxFileSize); err != nil {
		return nil, err
	}
	s := &Scenario{}
	// Unknown fields do not stop validation: every problem is reported at once.
	errs, fatal := decodeStrict(path, data, s)
	if fatal {
		return nil, errs
	}
	s.Path = path
	pos, _ := strictyaml.NewPositions(data)
	add := func(field, msg string, args ...any) {
		errs = append(errs, &FieldError{File: path, Path: field, Line: pos.Line(field), Msg: fmt.Sprintf(msg, args...)})
	}
	defaults(s)
	// Workloads whose manifest did not load are reported once, not again
	// for the fields it would have filled.
	unresolved := l.resolve(s, add)
	applyDisruption(s)
	defaultsScaleIn(s)
	l.validate(s, unresolved, add)
	if len(errs) > 0 {
		return nil, errs
	}
	return s, nil
}

func readInput(path string) ([]byte, error) { return strictyaml.ReadFile(path, MaxFileSize) }

// fieldsHint is where an unknown field's right spelling is documented.
const fieldsHint = "check its spelling and indentation; fixtures/README.md lists the fields"

func decodeStrict(path string, data []byte, v any) (ErrorList, bool) {
	return strictyaml.Decode(path, data, v, fieldsHint)
}

// defaults fills in what a scenario may leave out.
func defaults(s *Scenario) {
	if s.Spec.Catalog == "" && s.Spec.CatalogFile == "" {
		s.Spec.Catalog = DefaultCatalog
	}
	if s.Spec.Baseline.Runs == 0 {
		s.Spec.Baseline.Runs = DefaultRuns
	}
	if s.Spec.Settle.Quiet.Duration == 0 {
		s.Spec.Settle.Quiet.Duration = DefaultQuietPeriod
	}
	if s.Spec.Settle.Stall.Duration == 0 {
		s.Spec.Settle.Stall.Duration = DefaultStallPeriod
	}
	if s.Spec.Settle.Timeout.Duration == 0 {
		s.Spec.Settle.Timeout.Duration = DefaultSettleTimeout
	}
	if f := s.Spec.Fault; f != nil && f.Window.Duration == 0 {
		f.Window.Duration = DefaultFaultWindow
	}
}

// resolve finds the files a scenario names: its catalog and its NodePool.
func (l *Loader) resolve(s *Scenario, add func(field, msg string, args ...any)) (unresolved map[int]bool) {
	switch {
	case s.Spec.CatalogFile != "" && s.Spec.Catalog != "":
		add("spec.catalogFile", "set catalog (a name) or catalogFile (a path), not both")
	case s.Spec.CatalogFile != "":
		s.CatalogPath = relativeTo(s.Path, s.Spec.CatalogFile)
		s.Spec.Catalog = strings.TrimSuffix(filepath.Base(s.Spec.CatalogFile), filepath.Ext(s.Spec.CatalogFile))
		if _, err := catalog.Load(s.CatalogPath); err != nil {
			add("spec.catalogFile", "%v", err)
		}
	case s.Spec.Catalog == DefaultCatalog:
		s.CatalogPath = l.GenericCatalog
	case len(validation.IsDNS1123Label(s.Spec.Catalog)) > 0:
		add("spec.catalog", "%q is not a catalog name", s.Spec.Catalog)
	default:
		s.CatalogPath = filepath.Join(l.FixturesDir, "catalogs", s.Spec.Catalog+".json")
		if _, err := os.Stat(s.CatalogPath); err != nil {
			add("spec.catalog", "catalog %q does not exist (no %s)", s.Spec.Catalog, s.CatalogPath)
		} else if _, err := catalog.Load(s.CatalogPath); err != nil {
			add("spec.catalog", "catalog %q is not valid: %v", s.Spec.Catalog, err)
		}
	}
	l.resolvePolicy(s, add)
	return l.resolveWorkloads(s, add)
}

// resolvePolicy finds the scenario's NodePool: a fixture, a team's
// manifest file or the inline spec.
func (l *Loader) resolvePolicy(s *Scenario, add func(field, msg string, args ...any)) {
	p := s.Spec.Policy
	set := 0
	for _, b := range []bool{p.NodePoolRef != "", p.NodePoolFile != "", p.NodePool != nil} {
		if b {
			set++
		}
	}
	switch {
	case set > 1:
		add("spec.policy", "set one of nodePoolRef, nodePoolFile and nodePool")
	case set == 0:
		add("spec.policy", "set nodePoolRef (a file in fixtures/nodepools/), nodePoolFile (a NodePool manifest, relative to the scenario) or an inline nodePool")
	case p.NodePoolName != "" && p.NodePoolFile == "":
		add("spec.policy.nodePoolName", "picks a NodePool of nodePoolFile; set nodePoolFile")
	case p.AllNodePools && p.NodePoolFile == "":
		add("spec.policy.allNodePools", "applies every NodePool of nodePoolFile; set nodePoolFile")
	case p.AllNodePools && p.NodePoolName == "":
		add("spec.policy.allNodePools", "name the run's own NodePool (the one a fault and the facts read) with nodePoolName")
	case p.AllNodePools:
		l.resolveAllNodePools(s, add)
	case p.NodePoolRef != "":
		if len(validation.IsDNS1123Label(p.NodePoolRef)) > 0 {
			add("spec.policy.nodePoolRef", "%q is not a valid reference", p.NodePoolRef)
			break
		}
		np, err := l.LoadNodePool(filepath.Join(l.FixturesDir, "nodepools", p.NodePoolRef+".yaml"))
		if err != nil {
			add("spec.policy.nodePoolRef", "%v", err)
			break
		}
		s.NodePool = np
	case p.NodePoolFile != "":
		np, notes, err := loadNodePoolFile(relativeTo(s.Path, p.NodePoolFile), p.NodePoolName)
		if err != nil {
			add("spec.policy.nodePoolFile", "%v", err)
			break
		}
		s.NodePool, s.Notes = np, append(s.Notes, notes...)
	default:
		s.NodePool = &karpv1.NodePool{Spec: *p.NodePool}
	}
}

// resolveAllNodePools reads every NodePool of nodePoolFile: the one
// nodePoolName names is the run's own, the others are applied beside it.
func (l *Loader) resolveAllNodePools(s *Scenario, add func(field, msg string, args ...any)) {
	p := s.Spec.Policy
	if s.Spec.Fault != nil {
		add("spec.policy.allNodePools", "a fault scenario runs under one NodePool (a fault binds to it); leave allNodePools out")
		return
	}
	pools, notes, err := loadNodePools(relativeTo(s.Path, p.NodePoolFile))
	if err != nil {
		add("spec.policy.nodePoolFile", "%v", err)
		return
	}
	// The run names another NodePool <run>-<name>, and Karpenter names its
	// NodeClaims and KWOK its nodes <NodePool>-<5 characters>: a node's
	// name is its kubernetes.io/hostname label, at most 63 characters.
	longest := 63 - len(s.Metadata.Name) - len("-xxxxx") - 1 - len("-xxxxx")
	for _, np := range pools {
		switch {
		case np.Name == p.NodePoolName:
			s.NodePool = np
		default:
			if len(np.Name) > longest {
				add("spec.policy.nodePoolFile", "NodePool %q: a run names it <run>-%s and its nodes <run>-%s-xxxxx, longer than the 63 characters of a hostname label: shorten it to %d characters or the scenario's name", np.Name, np.Name, np.Name, max(longest, 0))
			}
			s.OtherNodePools = append(s.OtherNodePools, np)
		}
	}
	if s.NodePool == nil {
		add("spec.policy.nodePoolName", "%s holds no NodePool called %q", p.NodePoolFile, p.NodePoolName)
		return
	}
	if len(s.OtherNodePools) == 0 {
		add("spec.policy.allNodePools", "%s holds one NodePool: leave allNodePools out", p.NodePoolFile)
	}
	s.Notes = append(s.Notes, notes...)
}

// resolveWorkloads fills the workloads that name a manifest from it; such
// a workload sets nothing the manifest gives.
func (l *Loader) resolveWorkloads(s *Scenario, add func(field, msg string, args ...any)) (unresolved map[int]bool) {
	unresolved = map[int]bool{}
	for i := range s.Spec.Workloads {
		w := &s.Spec.Workloads[i]
		f := fmt.Sprintf("spec.workloads[%d]", i)
		if w.Manifest == "" {
			if w.Object != "" {
				add(f+".object", "picks an object of manifest; set manifest")
			}
			continue
		}
		if given := w.setFromManifest(); len(given) > 0 {
			add(f, "%s come(s) from the manifest: leave them out, or leave out manifest", strings.Join(given, ", "))
			unresolved[i] = true
			continue
		}
		notes, err := fromManifest(relativeTo(s.Path, w.Manifest), w)
		if err != nil {
			add(f+".manifest", "%v", err)
			unresolved[i] = true
			continue
		}
		s.Notes = append(s.Notes, notes...)
	}
	return unresolved
}

// setFromManifest lists the fields set beside a manifest that it gives.
func (w *Workload) setFromManifest() []string {
	var out []string
	for name, set := range map[string]bool{
		"requests": len(w.Requests) > 0, "limits": len(w.Limits) > 0, "labels": len(w.Labels) > 0, "nodeSelector": len(w.NodeSelector) > 0,
		"affinity": w.Affinity != nil, "topologySpreadConstraints": len(w.TopologySpreadConstraints) > 0, "tolerations": len(w.Tolerations) > 0,
	} {
		if set {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// relativeTo resolves a path a scenario names against the scenario's
// directory.
func relativeTo(scenarioPath, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(scenarioPath), p)
}

// validate checks a defaulted, resolved scenario.
func (l *Loader) validate(s *Scenario, unresolved map[int]bool, add func(field, msg string, args ...any)) {
	if s.APIVersion != APIVersion {
		add("apiVersion", "want %q, got %q", APIVersion, s.APIVersion)
	}
	if s.Kind != Kind {
		add("kind", "want %q, got %q", Kind, s.Kind)
	}
	if errs := validation.IsDNS1123Label(s.Metadata.Name); len(errs) > 0 || len(s.Metadata.Name) > 40 {
		add("metadata.name", "%q is not a valid name: use 1 to 40 lowercase letters, digits and '-'", s.Metadata.Name)
	}
	if d := s.Spec.Policy.NodeClass.NodeRegistrationDelay; d != "" {
		if v, err := time.ParseDuration(d); err != nil || v < 0 {
			add("spec.policy.nodeClass.nodeRegistrationDelay", "%q is not a duration such as \"30s\"", d)
		}
	}
	validateWorkloads(s.Spec.Workloads, unresolved, add)
	validateNodePoolSelectors(s, unresolved, add)
	validateKarpenter(s.Spec.Karpenter, add)
	validateDisruption("spec.policy.disruption", s.Spec.Policy.Disruption, add)
	validateScaleIn(s, add)
	if s.Spec.Baseline.Runs < 1 || s.Spec.Baseline.Runs > 50 {
		add("spec.baseline.runs", "%d is out of range 1..50", s.Spec.Baseline.Runs)
	}
	if a := s.Spec.Baseline.FalseAlarm; a < 0 || a > 0.2 {
		add("spec.baseline.falseAlarm", "%g is out of range: a share of verifications from 0.001 to 0.2 (default 0.01), or leave it out", a)
	}
	if t := s.Spec.Baseline.Tolerances; t.CostPercent < 0 || t.CostPercent > 100 || t.Nodes < 0 {
		add("spec.baseline.tolerances", "costPercent must be within 0..100 and nodes non-negative")
	}
	if f := s.Spec.Fault; f != nil {
		if f.Name == "" {
			add("spec.fault.name", "name a fault from the catalog (nodeprint faults lists them)")
		}
		if f.Window.Duration > 30*time.Minute {
			add("spec.fault.window", "%s is longer than the 30m a fault run may take", f.Window.Duration)
		}
		if e := f.Expect; e != nil && !e.Layer.Valid() {
			add("spec.fault.expect.layer", "want L1, L2 or L3, got %q", e.Layer)
		}
		if l.ValidateFault != nil && f.Name != "" {
			l.ValidateFault(f, add)
		}
	}
}

func validateWorkloads(ws []Workload, unresolved map[int]bool, add func(field, msg string, args ...any)) {
	if len(ws) == 0 {
		add("spec.workloads", "at least one workload is needed")
	}
	names := map[string]bool{}
	for i, w := range ws {
		if unresolved[i] {
			continue
		}
		f := fmt.Sprintf("spec.workloads[%d]", i)
		if errs := validation.IsDNS1123Label(w.Name); len(errs) > 0 {
			add(f+".name", "%q is not a valid name", w.Name)
		} else if names[w.Name] {
			add(f+".name", "workload %q is defined twice", w.Name)
		}
		names[w.Name] = true
		if w.Replicas < 0 || w.Replicas > MaxReplicas {
			add(f+".replicas", "%d is out of range 0..%d", w.Replicas, MaxReplicas)
		}
		if len(w.Requests) == 0 {
			add(f+".requests", "requests are needed: Karpenter sizes nodes from them")
		}
		checkQuantities(add, f+".requests", w.Requests)
		checkQuantities(add, f+".limits", w.Limits)
		checkQuantities(add, f+".usage", w.Usage)
		for k := range w.Usage {
			if k != "cpu" && k != "memory" {
				add(f+".usage."+k, "only cpu and memory usage can be simulated")
			}
		}
		checkLimits(add, f, w)
		if h := w.HPA; h != nil {
			switch {
			case h.MinReplicas < 1 || h.MaxReplicas < h.MinReplicas || h.MaxReplicas > MaxReplicas:
				add(f+".hpa", "want 1 <= minReplicas <= maxReplicas <= %d, got %d..%d", MaxReplicas, h.MinReplicas, h.MaxReplicas)
			case h.CPUUtilization == nil && h.MemoryUtilization == nil:
				add(f+".hpa", "set cpuUtilization or memoryUtilization")
			}
		}
		if p := w.PDB; p != nil {
			validatePDB(f+".pdb", p, add)
		}
	}
}

// validatePDB checks a workload's PodDisruptionBudget as the API server's
// validation of policy/v1 does: one of minAvailable and maxUnavailable, a
// count of at least 0 or a percentage from 0% to 100%.
func validatePDB(f string, p *PDB, add func(field, msg string, args ...any)) {
	if (p.MinAvailable == nil) == (p.MaxUnavailable == nil) {
		add(f, "set exactly one of minAvailable and maxUnavailable (a count such as 1 or a percentage such as \"50%%\")")
		return
	}
	field, v := f+".minAvailable", p.MinAvailable
	if v == nil {
		field, v = f+".maxUnavailable", p.MaxUnavailable
	}
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			add(field, "%d is negative: want a count of 0 or more, or a percentage such as \"50%%\"", v.IntVal)
		}
		return
	}
	n, ok := strings.CutSuffix(v.StrVal, "%")
	pct, err := strconv.Atoi(n)
	if !ok || err != nil || pct < 0 || pct > 100 {
		add(field, "%q is neither a count nor a percentage from 0%% to 100%%: write 1 or \"50%%\"", v.StrVal)
	}
}

// validateNodePoolSelectors refuses a workload that selects a NodePool by
// name (karpenter.sh/nodepool, in its node selector or a required node
// affinity) that the scenario does not apply: each run renames its
// NodePools, and Build rewrites only the names it knows.
func validateNodePoolSelectors(s *Scenario, unresolved map[int]bool, add func(field, msg string, args ...any)) {
	known := s.NodePoolNames()
	check := func(field, value string) {
		if _, ok := known[value]; !ok {
			add(field, "selects NodePool %q, which the scenario does not apply (it applies: %s)", value, strings.Join(sortedKeys(known), ", "))
		}
	}
	for i, w := range s.Spec.Workloads {
		if unresolved[i] {
			continue
		}
		f := fmt.Sprintf("spec.workloads[%d]", i)
		if v, ok := w.NodeSelector[karpv1.NodePoolLabelKey]; ok {
			check(f+".nodeSelector."+karpv1.NodePoolLabelKey, v)
		}
		if w.Affinity == nil || w.Affinity.NodeAffinity == nil || w.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
			continue
		}
		for j, term := range w.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for k, e := range term.MatchExpressions {
				if e.Key != karpv1.NodePoolLabelKey {
					continue
				}
				for _, v := range e.Values {
					check(fmt.Sprintf("%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[%d].matchExpressions[%d]", f, j, k), v)
				}
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	if len(out) == 0 {
		return []string{"none by name: an inline NodePool has none"}
	}
	return out
}

// checkLimits refuses a limit below its request.
func checkLimits(add func(field, msg string, args ...any), f string, w Workload) {
	for k, lim := range w.Limits {
		req, ok := w.Requests[k]
		if !ok {
			continue
		}
		rq, e1 := resource.ParseQuantity(req)
		lq, e2 := resource.ParseQuantity(lim)
		if e1 == nil && e2 == nil && lq.Cmp(rq) < 0 {
			add(f+".limits."+k, "limit %s is below the request %s", lim, req)
		}
	}
}

func checkQuantities(add func(field, msg string, args ...any), field string, m map[string]string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q, err := resource.ParseQuantity(m[k])
		switch {
		case err != nil:
			add(field+"."+k, "%q is not a quantity (write 500m, 2, 1Gi, 512Mi)", m[k])
		case q.Sign() < 0:
			add(field+"."+k, "%q is negative", m[k])
		}
	}
}

// LoadNodePool reads a NodePool manifest strictly.
func (l *Loader) LoadNodePool(path string) (*karpv1.NodePool, error) {
	data, err := readInput(path)
	if err != nil {
		var fe *FieldError
		if errors.As(err, &fe) {
			return nil, err
		}
		return nil, fmt.Errorf("no NodePool fixture %s", path)
	}
	np := &karpv1.NodePool{}
	if errs, _ := decodeStrict(path, data, np); len(errs) > 0 {
		return nil, errs
	}
	if np.Kind != "NodePool" || np.APIVersion != "karpenter.sh/v1" {
		return nil, &FieldError{File: path, Path: "kind", Msg: fmt.Sprintf("want a karpenter.sh/v1 NodePool, got %s %s", np.APIVersion, np.Kind)}
	}
	return np, nil
}
