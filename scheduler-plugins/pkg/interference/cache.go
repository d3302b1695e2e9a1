package interference

import "sync"

// annotationCache remembers parsed annotations by their text. Score reads the
// profile of every pod on every candidate node, and a cluster has few
// distinct profile texts, so parsing each text once keeps Score cheap.
type annotationCache struct {
	mu      sync.RWMutex
	entries map[string]parsed
}

type parsed struct {
	profile Profile
	err     error
}

// maxCacheEntries bounds the cache when every pod carries its own text.
const maxCacheEntries = 4096

func newAnnotationCache() *annotationCache {
	return &annotationCache{entries: map[string]parsed{}}
}

func (c *annotationCache) parse(value string) (Profile, error) {
	c.mu.RLock()
	entry, ok := c.entries[value]
	c.mu.RUnlock()
	if ok {
		return entry.profile, entry.err
	}
	profile, err := ParseAnnotation(value)
	c.mu.Lock()
	if len(c.entries) >= maxCacheEntries {
		c.entries = map[string]parsed{}
	}
	c.entries[value] = parsed{profile: profile, err: err}
	c.mu.Unlock()
	return profile, err
}
