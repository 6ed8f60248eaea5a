package host

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/gatehost/gatehost/internal/engine"
)

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
}

func newPool(mod *engine.Module, size int) *pool {
	return &pool{mod: mod, idle: make(chan *engine.Instance, size), slots: make(chan struct{}, size)}
}

// get returns an idle instance, or a new one while fewer than size are
// live, or waits for one until ctx is done.
func (p *pool) get(ctx context.Context) (*engine.Instance, error) {
	select {
	case inst := <-p.idle:
		return inst, nil
	default:
	}
	select {
	case inst := <-p.idle:
		return inst, nil
	case p.slots <- struct{}{}:
		inst, err := p.mod.Instantiate(ctx)
		if err != nil {
			<-p.slots
			return nil, err
		}
		p.created.Add(1)
		return inst, nil
	case <-ctx.Done():
		return nil, &engine.Fault{Reason: waitReason(ctx), Err: fmt.Errorf("no free instance (pool of %d in use): %w", cap(p.slots), ctx.Err())}
	}
}

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

func (p *pool) close(ctx context.Context) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
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
