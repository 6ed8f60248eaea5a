package host

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehost/gatehost/internal/engine"
)

// ErrPoolBudget: Config.PoolMemoryBudget cannot hold one instance of a
// stage's plugin at the stage's memory limit. Wrapped by a *ConfigError for
// pool_memory_budget.
var ErrPoolBudget = errors.New("pool memory budget holds no instance")

// poolSize is the size of the pool of one plugin at a memory limit of pages
// (64 KiB each), under the normalized cfg: PoolSize, lowered to the number
// of instances at that limit PoolMemoryBudget holds (0 when it holds none).
func poolSize(cfg Config, pages uint32) int {
	n := cfg.PoolSize
	if b := cfg.PoolMemoryBudget; b > 0 {
		per := uint64(max(pages, 1)) * engine.PageSize
		n = min(n, int(min(b/per, MaxPoolSize)))
	}
	return n
}

// checkPoolBudget refuses a PoolMemoryBudget that holds no instance of some
// stage (every pipeline's, loaded or not, as normalize checks them all).
func checkPoolBudget(cfg Config) error {
	if cfg.PoolMemoryBudget == 0 {
		return nil
	}
	for _, pname := range slices.Sorted(maps.Keys(cfg.Pipelines)) {
		for i, sc := range cfg.Pipelines[pname].Stages {
			v := variantOf(sc)
			if poolSize(cfg, v.pages) < 1 {
				return &ConfigError{Field: "pool_memory_budget", Err: ErrPoolBudget,
					Reason: fmt.Sprintf("%d bytes cannot hold one instance of plugin %s at pipelines.%s.stages[%d].memory_limit (%d bytes)",
						cfg.PoolMemoryBudget, sc.Plugin, pname, i, uint64(v.pages)*engine.PageSize)}
			}
		}
	}
	return nil
}

// pool holds the instances of one module. An instance is held by one run at
// a time and never shared between goroutines: wazero instances are not safe
// for concurrent calls, and a process that shares one can crash.
type pool struct {
	mod  *engine.Module
	idle chan *engine.Instance
	// slots bounds live instances, idle or in use.
	slots chan struct{}

	mu     sync.Mutex
	closed bool

	// created and discarded count instances over the pool's life.
	created, discarded atomic.Int64

	// calls counts guest calls in progress (Host.evaluate); close waits
	// for them.
	calls sync.WaitGroup
	// passed holds recent answers that passed the response checks.
	passed answerMemo
	// checkInline is the largest answer checked on the stage's goroutine
	// (checkInlineBytes; tests lower it).
	checkInline int
	// onWait, when set (tests only), is called when acquire starts to
	// block for capacity.
	onWait func()
	// onAnswer, when set (tests only), is called on the goroutine that
	// checks an answer, before it checks it.
	onAnswer func()
	// onRequest, when set (tests only), is called with the request bytes
	// before the guest is called.
	onRequest func([]byte)
	// onInstantiate is Config.onInstantiate (tests only).
	onInstantiate func() error
}

func newPool(mod *engine.Module, size int) *pool {
	return &pool{mod: mod, idle: make(chan *engine.Instance, size), slots: make(chan struct{}, size), checkInline: checkInlineBytes}
}

// get returns an idle instance, or a new one while fewer than size are
// live, or waits for one until ctx is done.
func (p *pool) get(ctx context.Context) (*engine.Instance, error) {
	inst, _, err := p.acquire(ctx)
	if err != nil || inst != nil {
		return inst, err
	}
	return p.instantiate(ctx)
}

// acquire returns an idle instance, or nil and a slot reserved for a new
// instance (create it with instantiate), or waits for either until ctx is
// done: then the error is a *engine.Fault with reason host_overloaded (or
// canceled).
//
// shortage reports that it waited: the wait was the host's load, so a
// timeout of the stage is the host's shortage, not the gate's fault. (Every
// instance is held by a run in progress; none outlives its stage.)
func (p *pool) acquire(ctx context.Context) (inst *engine.Instance, shortage bool, err error) {
	select {
	case inst := <-p.idle:
		return inst, false, nil
	default:
	}
	select {
	case inst := <-p.idle:
		return inst, false, nil
	case p.slots <- struct{}{}:
		return nil, false, nil
	default:
	}
	if p.onWait != nil {
		p.onWait()
	}
	select {
	case inst := <-p.idle:
		return inst, true, nil
	case p.slots <- struct{}{}:
		return nil, true, nil
	case <-ctx.Done():
		return nil, true, &engine.Fault{Reason: waitReason(ctx), Err: fmt.Errorf("no free instance (pool of %d in use): %w", cap(p.slots), ctx.Err())}
	}
}

// instantiate creates an instance in the slot acquire reserved; on failure
// it releases the slot.
func (p *pool) instantiate(ctx context.Context) (*engine.Instance, error) {
	var inst *engine.Instance
	var err error
	if p.onInstantiate != nil {
		err = p.onInstantiate()
	}
	if err == nil {
		inst, err = p.mod.Instantiate(ctx)
	}
	if err != nil {
		<-p.slots
		return nil, err
	}
	p.created.Add(1)
	return inst, nil
}

// release gives back the slot acquire reserved for an instance that will
// not be created.
func (p *pool) release() { <-p.slots }

// put returns inst to the pool, or discards it when it is not healthy. A
// fresh instance replaces a discarded one on a later get.
func (p *pool) put(inst *engine.Instance, healthy bool) {
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if !healthy || closed {
		if !healthy {
			p.discarded.Add(1)
		}
		_ = inst.Close(context.Background())
		<-p.slots
		return
	}
	p.idle <- inst // cannot block: at most size instances exist
}

// adopt registers an instance created outside get (the load-time probe).
func (p *pool) adopt(inst *engine.Instance) {
	p.slots <- struct{}{}
	p.created.Add(1)
	p.put(inst, true)
}

// close discards the idle instances, and waits until ctx is done for guest
// calls still running; their instances are discarded as they return.
func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	idle := make(chan struct{})
	go func() { p.calls.Wait(); close(idle) }()
	select {
	case <-idle:
	case <-ctx.Done():
	}
	for {
		select {
		case inst := <-p.idle:
			_ = inst.Close(ctx)
			<-p.slots
		default:
			return
		}
	}
}

// Warm fills every plugin's pool to its size, so that the first runs pay
// no instantiation (about 6 ms and 8 MB of garbage each for a Go guest). A
// server reports ready only after Warm. Call it before serving runs; it
// returns the first instantiation failure, wrapped in a *LoadError.
// Config.WarmPools makes New do it.
func (h *Host) Warm(ctx context.Context) error {
	if h.closed.Load() {
		return ErrClosed
	}
	return h.warm(ctx, 0)
}

// warm fills every pool, each within timeout when it is positive.
func (h *Host) warm(ctx context.Context, timeout time.Duration) error {
	for _, v := range slices.SortedFunc(maps.Keys(h.plugins), func(a, b variant) int {
		return cmp.Or(cmp.Compare(a.plugin, b.plugin), cmp.Compare(a.pages, b.pages))
	}) {
		wctx, cancel := ctx, context.CancelFunc(func() {})
		if timeout > 0 {
			wctx, cancel = context.WithTimeout(ctx, timeout)
		}
		err := h.plugins[v].pool.warm(wctx)
		cancel()
		if err != nil {
			return &LoadError{Plugin: v.plugin, Err: fmt.Errorf("warm pool: %w", err)}
		}
	}
	return nil
}

// warm takes instances until the pool is full, creating the missing ones,
// then returns them all.
func (p *pool) warm(ctx context.Context) error {
	var got []*engine.Instance
	defer func() {
		for _, inst := range got {
			p.put(inst, true)
		}
	}()
	for range cap(p.slots) {
		inst, err := p.get(ctx)
		if err != nil {
			return err
		}
		got = append(got, inst)
	}
	return nil
}
