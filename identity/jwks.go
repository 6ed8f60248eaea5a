package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Errors of the key set, for errors.Is.
var (
	// errUnknownKey: the token's key id is not in the key set, even after
	// a refresh (or a refresh was not allowed yet).
	errUnknownKey = errors.New("no key of the issuer's key set has the token's key id")
	// errSignature: a key with the token's key id does not verify it.
	errSignature = errors.New("the signature does not verify")
)

// keySet is the issuer's JWKS, an oidc.KeySet. go-oidc's RemoteKeySet
// refetches the set on every token whose signature it cannot verify,
// with no rate limit and no size cap: any caller could make gatehost
// hammer the issuer. This one refetches only for a key id it does not
// hold, at most once per minInterval (measured from the start of the
// last fetch, failed or not), one fetch at a time, each capped in time
// (timeout) and size (the client's transport).
type keySet struct {
	url         string
	client      *http.Client
	minInterval time.Duration
	timeout     time.Duration
	now         func() time.Time
	algs        []string

	mu       sync.Mutex
	keys     []jose.JSONWebKey
	last     time.Time     // start of the last fetch; zero before the first
	fetching chan struct{} // closed when the fetch in flight ends; nil when none
	fetchErr error
	fetches  int // how many fetches started, for tests
}

// VerifySignature implements oidc.KeySet. The IDTokenVerifier has already
// checked the algorithm against the allow-list; the token is parsed again
// here, with the same list, because the verifier keeps its parse private.
func (k *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	algs := make([]jose.SignatureAlgorithm, len(k.algs))
	for i, a := range k.algs {
		algs[i] = jose.SignatureAlgorithm(a)
	}
	jws, err := jose.ParseSigned(jwt, algs)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("want exactly one signature")
	}
	h := jws.Signatures[0].Header
	if payload, found, err := verifyWith(k.current(), h.KeyID, h.Algorithm, jws); found {
		return payload, err
	}
	// An unknown key id: the issuer may have rotated its keys.
	keys, err := k.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if payload, found, err := verifyWith(keys, h.KeyID, h.Algorithm, jws); found {
		return payload, err
	}
	return nil, errUnknownKey
}

// verifyWith verifies jws with the signing keys of keys whose id is kid
// (every signing key when kid is "") and whose algorithm, when the key
// names one, is alg. found is false when there is no such key: only then
// may a refresh help; a known key that does not verify is a forgery, not a
// rotation.
func verifyWith(keys []jose.JSONWebKey, kid, alg string, jws *jose.JSONWebSignature) (payload []byte, found bool, err error) {
	for i := range keys {
		key := &keys[i]
		if (kid != "" && key.KeyID != kid) || (key.Use != "" && key.Use != "sig") || (key.Algorithm != "" && key.Algorithm != alg) || !key.IsPublic() {
			continue
		}
		found = true
		if payload, err := jws.Verify(key); err == nil {
			return payload, true, nil
		}
	}
	if found {
		return nil, true, errSignature
	}
	return nil, false, nil
}

func (k *keySet) current() []jose.JSONWebKey {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.keys
}

// refresh fetches the key set unless one was fetched less than minInterval
// ago, and returns the keys then held. Concurrent callers share one fetch.
// The fetch runs on its own deadline, not ctx's: one caller giving up does
// not fail it for the others.
func (k *keySet) refresh(ctx context.Context) ([]jose.JSONWebKey, error) {
	k.mu.Lock()
	if k.fetching == nil && !k.last.IsZero() && k.now().Sub(k.last) < k.minInterval {
		keys := k.keys
		k.mu.Unlock()
		return keys, nil
	}
	if k.fetching == nil {
		done := make(chan struct{})
		k.fetching, k.last = done, k.now()
		k.fetches++
		go func() {
			keys, err := k.fetch()
			k.mu.Lock()
			if err == nil {
				k.keys = keys
			}
			k.fetchErr, k.fetching = err, nil
			k.mu.Unlock()
			close(done)
		}()
	}
	done := k.fetching
	k.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.fetchErr != nil {
		return nil, k.fetchErr
	}
	return k.keys, nil
}

// fetch GETs the key set once.
func (k *keySet) fetch() ([]jose.JSONWebKey, error) {
	ctx, cancel := context.WithTimeout(context.Background(), k.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, k.url, nil)
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", k.url, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := k.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("jwks: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("jwks %s: %w", k.url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks %s: %s", k.url, resp.Status)
	}
	// Keys go-jose does not know (another key type, a curve it lacks) are
	// skipped, as RFC 7517 §5 asks; a set that is not a JWKS at all fails.
	var raw struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, fmt.Errorf("jwks %s: not a JSON Web Key Set: %w", k.url, err)
	}
	var keys []jose.JSONWebKey
	for _, b := range raw.Keys {
		var key jose.JSONWebKey
		if err := key.UnmarshalJSON(b); err != nil {
			continue
		}
		keys = append(keys, key)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("jwks %s: no usable key", k.url)
	}
	return keys, nil
}
