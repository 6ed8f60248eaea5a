package host

import (
	"context"
	"fmt"
)

// WaitCalls waits until no guest call of h is running.
func WaitCalls(h *Host) {
	for _, p := range h.plugins {
		p.pool.calls.Wait()
	}
}

// poolOf returns the pool of the named plugin; the plugin must have one
// memory variant.
func poolOf(h *Host, plugin string) *pool {
	var found *pool
	for v, p := range h.plugins {
		if v.plugin == plugin {
			if found != nil {
				panic(fmt.Sprintf("plugin %s has more than one pool", plugin))
			}
			found = p.pool
		}
	}
	if found == nil {
		panic("no plugin " + plugin)
	}
	return found
}

// HoldInstance takes an instance of the named plugin out of its pool, as a
// run in progress would, and returns the function that gives it back.
func HoldInstance(ctx context.Context, h *Host, plugin string) (release func(), err error) {
	p := poolOf(h, plugin)
	inst, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	return func() { p.put(inst, true) }, nil
}

// OnPoolWait makes the named plugin's pool call f each time a run starts to
// wait for a free instance. Set it before any run.
func OnPoolWait(h *Host, plugin string, f func()) { poolOf(h, plugin).onWait = f }

// OnAnswerCheck makes every call of the named plugin call f after the guest
// answered and before the host checks the answer, on the goroutine that
// checks it. Set it before any run.
func OnAnswerCheck(h *Host, plugin string, f func()) { poolOf(h, plugin).onAnswer = f }

// CheckAnswersApart makes the named plugin's answers, whatever their size,
// be checked on a goroutine of their own, as answers above checkInlineBytes
// are. Set it before any run.
func CheckAnswersApart(h *Host, plugin string) { poolOf(h, plugin).checkInline = -1 }

// OnRequest makes every call of the named plugin call f with the request
// bytes before the guest is called. Set it before any run.
func OnRequest(h *Host, plugin string, f func([]byte)) { poolOf(h, plugin).onRequest = f }

// OnHostCall calls f with the operation of every host call a guest of h
// makes. Set it before the first Check.
func OnHostCall(h *Host, f func(op string)) { h.onHostCall = f }

// OnServe calls f with the operation of every granted host call a guest of
// h makes, on the goroutine that serves it. Set it before the first Check.
func OnServe(h *Host, f func(op string)) { h.onServe = f }

// CheckAnswer is the host's check of a gate's answer bytes.
func CheckAnswer(out []byte) (any, error) { return checkAnswer(out) }

// QueryDigest is what h sends as context.query_digest.
func QueryDigest(h *Host) string { return h.queryDigest }
