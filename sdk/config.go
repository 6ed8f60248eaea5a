package sdk

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gatehost/gatehost/abi"
)

// heldConfigCap is how many configs the SDK keeps by digest: twice the
// abi.ConfigCacheSize the host counts on, so a host that omits a config it
// sent among its last ConfigCacheSize is always answered.
const heldConfigCap = 2 * abi.ConfigCacheSize

// heldConfigs are the configs this module received in full, by
// config_digest, oldest first: the descriptor declares config_cache, so
// the host leaves out a config the instance was sent before (abi/SPEC.md
// §5.3).
type heldConfigs struct {
	mu      sync.Mutex // for native use; a guest has one thread
	digests []string
	configs []json.RawMessage
}

var held heldConfigs

// ErrConfigNotHeld: a request carried config_digest without config, and
// the module holds no config of that digest.
var ErrConfigNotHeld = errors.New("sdk: the request left its config out, and no config of its digest is held")

// resolve returns the config a request with digest and config (possibly
// left out) stands for. A config sent in full is checked against its
// digest the first time, then kept; one left out is looked up. Errors give
// the reason for the inconclusive answer: config_not_held, or bad_request
// for a digest that is malformed or does not match.
func (h *heldConfigs) resolve(digest string, config json.RawMessage) (json.RawMessage, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	i := slices.Index(h.digests, digest)
	if len(config) == 0 {
		if i < 0 {
			return nil, ReasonConfigNotHeld, fmt.Errorf("%w (%s)", ErrConfigNotHeld, digest)
		}
		return h.configs[i], "", nil
	}
	if i >= 0 {
		if !bytes.Equal(config, h.configs[i]) {
			return nil, ReasonBadRequest, fmt.Errorf("sdk: config_digest %.80q is not the config's", digest)
		}
		return h.configs[i], "", nil
	}
	hexSum, ok := strings.CutPrefix(digest, abi.ConfigDigestPrefix)
	sum := sha256.Sum256(config)
	if !ok || hexSum != hex.EncodeToString(sum[:]) {
		return nil, ReasonBadRequest, fmt.Errorf("sdk: config_digest %.80q is not the config's", digest)
	}
	if len(h.digests) == heldConfigCap {
		h.digests, h.configs = slices.Delete(h.digests, 0, 1), slices.Delete(h.configs, 0, 1)
	}
	// A copy: the request's bytes may be reused for the next request.
	h.digests, h.configs = append(h.digests, digest), append(h.configs, bytes.Clone(config))
	return config, "", nil
}

// Derived holds what a gate derives from its stage config — a parsed
// config, a compiled policy set — so that a module instance, which serves
// many runs of the same stages, derives it once per config instead of on
// every run. Values are keyed by the request's config_digest, or by the
// config's bytes when the host sends none (before minor 9, or gatetest).
// It keeps the values of the last 2×abi.ConfigCacheSize configs; an error
// of derive is returned and not kept. The zero value is ready; safe for
// concurrent use. A gate must treat the values as read-only: later runs
// share them.
type Derived[T any] struct {
	mu      sync.Mutex
	entries []derived[T]
}

// derived is one kept value: by digest, or by the config's bytes when the
// request had no digest.
type derived[T any] struct {
	digest, config string
	value          T
}

// Get returns the value derived from req's config, calling derive with
// the config when none is kept.
func (c *Derived[T]) Get(req Request, derive func(json.RawMessage) (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		// string(req.Config) in a comparison does not copy the bytes.
		if req.ConfigDigest != "" && e.digest == req.ConfigDigest ||
			req.ConfigDigest == "" && e.digest == "" && e.config == string(req.Config) {
			return e.value, nil
		}
	}
	v, err := derive(req.Config)
	if err != nil {
		return v, err
	}
	e := derived[T]{digest: req.ConfigDigest, value: v}
	if e.digest == "" {
		e.config = string(req.Config)
	}
	if len(c.entries) == heldConfigCap {
		c.entries = slices.Delete(c.entries, 0, 1)
	}
	c.entries = append(c.entries, e)
	return v, nil
}
