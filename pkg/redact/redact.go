// Package redact masks secrets in text that nodeprint writes where others
// read it: reports, runbooks, anomaly fingerprints and explain's output.
// Scenario files hold no secrets, but a cluster's events, API errors and
// the output of runbook checks can quote a token, a password from an
// environment value or a private key; on the existing provider and with
// explain the cluster is someone else's.
package redact

import (
	"encoding/json"
	"fmt"
	"regexp"
)

// Mask replaces what is redacted.
const Mask = "[REDACTED]"

// secretWord is what names a secret in a key, a flag or a variable
// ("auth" is left out: "unauthorized" and "Authorization" name no value;
// the header's credentials have their own rule).
const secretWord = `(?:passw(?:or)?d|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key|credentials?)`

type rule struct {
	re   *regexp.Regexp
	repl string
}

// rules run in order: whole secrets first, then the values of secret-named
// keys.
var rules = []rule{
	// PEM private keys, whole.
	{regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z0-9 ]*PRIVATE KEY-----|$)`), Mask},
	// HTTP authorization: Bearer and Basic credentials.
	{regexp.MustCompile(`(?i)\b(bearer|basic)(\s+)[A-Za-z0-9\-._~+/]{8,}=*`), "${1}${2}" + Mask},
	// JSON Web Tokens (service-account tokens among them).
	{regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), Mask},
	// Passwords in URLs: postgres://app:s3cret@db:5432.
	{regexp.MustCompile(`(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^:/@\s]+:)[^@\s/]+@`), "${1}" + Mask + "@"},
	// AWS access key ids.
	{regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`), Mask},
	// The value of a key that names a secret: password=…, "token": "…",
	// AWS_SECRET_ACCESS_KEY=…; a value already masked is left alone.
	{regexp.MustCompile(`(?i)("?[\w.-]*` + secretWord + `[\w.-]*"?\s*[:=]\s*"?)([^\s"',;&}\[\]][^\s"',;&}\]]*)`), "${1}" + Mask},
	// Command-line flags: --client-secret s3cr3t.
	{regexp.MustCompile(`(?i)(--[\w-]*` + secretWord + `[\w-]*\s+)([^\s\[-]\S*)`), "${1}" + Mask},
	// Environment entries of a pod spec: {"name":"DB_PASSWORD","value":"…"}.
	{regexp.MustCompile(`(?i)("name"\s*:\s*"[\w.-]*` + secretWord + `[\w.-]*"\s*,\s*"value"\s*:\s*")([^"]*)`), "${1}" + Mask},
}

// String returns s with secrets masked.
func String(s string) string {
	for _, r := range rules {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}

// Value returns a copy of v with every string in it masked: v goes through
// JSON, so only what its JSON form holds is kept (as the reports do).
func Value[T any](v T) (T, error) {
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		return out, fmt.Errorf("failed to redact %T: %w", v, err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		return out, fmt.Errorf("failed to redact %T: %w", v, err)
	}
	if b, err = json.Marshal(walk(doc)); err != nil {
		return out, fmt.Errorf("failed to redact %T: %w", v, err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return out, fmt.Errorf("failed to redact %T: %w", v, err)
	}
	return out, nil
}

func walk(v any) any {
	switch x := v.(type) {
	case string:
		return String(x)
	case []any:
		for i := range x {
			x[i] = walk(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = walk(x[k])
		}
	}
	return v
}
