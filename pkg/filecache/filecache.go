// Package filecache keeps what was parsed from a file while the file is
// unchanged (same modification time and size), so that a file every run
// reads (an instance-type catalog) is parsed once.
package filecache

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// Cache maps paths to parsed values. Its zero value is ready to use.
// Parses are serialised: a parser that is not safe to run twice at once
// (the KWOK provider's writes a package-level map) is safe behind it.
type Cache[T any] struct {
	mu     sync.Mutex
	byPath map[string]entry[T]
}

type entry[T any] struct {
	mod  time.Time
	size int64
	val  T
}

// Load returns the value parsed from path, parsing it with parse only when
// the file changed since the last parse. A failed parse is not kept.
func (c *Cache[T]) Load(path string, parse func(path string) (T, error)) (T, error) {
	var zero T
	st, err := os.Stat(path)
	if err != nil {
		return zero, fmt.Errorf("failed to read %s: %w", path, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byPath[path]; ok && e.mod.Equal(st.ModTime()) && e.size == st.Size() {
		return e.val, nil
	}
	v, err := parse(path)
	if err != nil {
		return zero, err
	}
	if c.byPath == nil {
		c.byPath = map[string]entry[T]{}
	}
	c.byPath[path] = entry[T]{mod: st.ModTime(), size: st.Size(), val: v}
	return v, nil
}
