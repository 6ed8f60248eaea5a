package staticverify

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gatehost/gatehost/abi"
	"github.com/gatehost/gatehost/internal/docpath"
	"github.com/gatehost/gatehost/internal/guestjson"
)

// advisory builds an advisory finding. Findings that depend on the forward
// model's state are heuristic, because the model sees only declared effects;
// a write conflict is exact about the declarations.
func advisory(code string, tier abi.Tier, msg string, details map[string]any) abi.Finding {
	return abi.Finding{Code: code, Severity: abi.Advisory, Tier: tier, Message: msg, Details: details}
}

// unknownKeys reads context.unknown_keys: state keys whose value the caller
// cannot model.
func (v *verifier) unknownKeys() map[string]bool {
	arr, _ := v.p.Context["unknown_keys"].([]any)
	if len(arr) == 0 {
		return nil
	}
	m := make(map[string]bool, len(arr))
	for _, k := range arr {
		if s, ok := k.(string); ok {
			m[s] = true
		}
	}
	return m
}

// markUnknown downgrades a finding about a key marked unknown.
func markUnknown(f *abi.Finding, key string, unknown map[string]bool) {
	if !unknown[key] {
		return
	}
	f.Tier = abi.Heuristic
	f.Message += " (the key is listed in context.unknown_keys: its real value is not modelled)"
	f.Details["unknown_key"] = true
}

// forwardModel walks the actions in order over a state that starts from
// context.initial_state and takes only the effects actions declare. An
// action with a blocking finding will not run, so its effects are never
// applied: applying them would make a later precondition look satisfied.
func (v *verifier) forwardModel() {
	state := map[string]any{}
	if init, ok := v.p.Context["initial_state"].(map[string]any); ok {
		for k, val := range init {
			state[k] = val
		}
	}
	unknown := v.unknownKeys()
	blockedWriters := map[string][]int{} // key → blocked actions that declared it

	for i := range v.acts {
		act := &v.acts[i]
		for k, pc := range act.a.Preconditions {
			op := pc.Operator
			if op == "" {
				op = "eq"
			}
			ok, why := checkPrecondition(state, pc.Key, op, pc.Value)
			if ok {
				continue
			}
			msg := fmt.Sprintf("precondition %d (%q %s) does not hold in the modelled state: %s", k, clip(pc.Key), clip(op), why)
			if pc.Description != "" {
				msg += "; expected: " + clip(pc.Description)
			}
			details := map[string]any{"key": pc.Key, "operator": op, "precondition_index": k}
			msg = noteBlocked(msg, pc.Key, blockedWriters, details)
			f := advisory(CodeUnsatisfiedPrecondition, abi.Heuristic, msg, details)
			markUnknown(&f, pc.Key, unknown)
			v.add(i, f)
		}
		for _, key := range act.a.StateDependencies {
			if _, ok := state[key]; ok {
				continue
			}
			msg := fmt.Sprintf("state dependency %q is neither in the initial state nor declared by an earlier action's expected_effects", clip(key))
			details := map[string]any{"key": key}
			msg = noteBlocked(msg, key, blockedWriters, details)
			f := advisory(CodeUnwrittenDependency, abi.Heuristic, msg, details)
			markUnknown(&f, key, unknown)
			v.add(i, f)
		}
		for key, val := range act.a.ExpectedEffects {
			if act.blocked {
				blockedWriters[key] = append(blockedWriters[key], i)
				continue
			}
			state[key] = val
		}
	}
}

// noteBlocked explains that a key was only declared by blocked actions.
func noteBlocked(msg, key string, blockedWriters map[string][]int, details map[string]any) string {
	w := blockedWriters[key]
	if len(w) == 0 {
		return msg
	}
	details["declared_by_blocked_actions"] = slices.Clone(w)
	return msg + fmt.Sprintf(" (declared by blocked action(s) %s, whose effects are not applied)", joinInts(w))
}

// checkPrecondition evaluates one precondition against the state. A key the
// model does not hold fails every operator but not_exists: the model cannot
// show the predicate holds, and the finding is advisory anyway.
func checkPrecondition(state map[string]any, key, op string, want any) (bool, string) {
	got, present := state[key]
	switch op {
	case "exists":
		if present {
			return true, ""
		}
		return false, "the key is not set"
	case "not_exists":
		if !present {
			return true, ""
		}
		return false, "the key is set"
	case "eq", "neq", "contains", "gt", "lt", "gte", "lte":
	default:
		return false, fmt.Sprintf("unknown operator %q", clip(op))
	}
	if !present {
		return false, "the key is not set"
	}
	switch op {
	case "eq":
		if docpath.Equal(got, want) {
			return true, ""
		}
		return false, "the value differs"
	case "neq":
		if !docpath.Equal(got, want) {
			return true, ""
		}
		return false, "the value is equal"
	case "contains":
		return contains(got, want)
	}
	g, gok := got.(float64)
	w, wok := want.(float64)
	if !gok || !wok {
		return false, fmt.Sprintf("cannot compare: %s needs numbers, the state holds %s and the precondition %s", op, guestjson.Kind(got), guestjson.Kind(want))
	}
	var ok bool
	switch op {
	case "gt":
		ok = g > w
	case "lt":
		ok = g < w
	case "gte":
		ok = g >= w
	case "lte":
		ok = g <= w
	}
	if ok {
		return true, ""
	}
	return false, "the comparison is false"
}

// contains: a substring of a string, an element of an array (JSON-typed
// equality), or a key of an object.
func contains(got, want any) (bool, string) {
	switch g := got.(type) {
	case string:
		w, ok := want.(string)
		if !ok {
			return false, fmt.Sprintf("cannot apply contains: the state holds a string and the precondition %s", guestjson.Kind(want))
		}
		if strings.Contains(g, w) {
			return true, ""
		}
		return false, "the string does not contain the value"
	case []any:
		for _, e := range g {
			if docpath.Equal(e, want) {
				return true, ""
			}
		}
		return false, "the array does not contain the value"
	case map[string]any:
		w, ok := want.(string)
		if !ok {
			return false, fmt.Sprintf("cannot apply contains: the state holds an object and the precondition %s", guestjson.Kind(want))
		}
		if _, ok := g[w]; ok {
			return true, ""
		}
		return false, "the object does not have the key"
	}
	return false, fmt.Sprintf("cannot apply contains to %s", guestjson.Kind(got))
}

// writeConflicts reports two actions that declare a write to the same key
// with neither ordered before the other through depends_on. The finding is
// on the later action and lists every earlier unordered writer. It is exact
// about the declarations, hence decision_procedure, but advisory: the origin
// only warns, and the runtime may serialise the writes anyway.
func (v *verifier) writeConflicts(anc []bitset) {
	writers := map[string][]int{}
	for i := range v.acts {
		for key := range v.acts[i].a.ExpectedEffects {
			writers[key] = append(writers[key], i)
		}
	}
	keys := make([]string, 0, len(writers))
	for k, w := range writers {
		if len(w) > 1 {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	unknown := v.unknownKeys()
	for _, key := range keys {
		w := writers[key]
		for x, j := range w {
			var with []int
			for _, i := range w[:x] {
				if !anc[j].has(i) {
					with = append(with, i)
				}
			}
			if len(with) == 0 {
				continue
			}
			f := advisory(CodeWriteConflict, abi.DecisionProcedure,
				fmt.Sprintf("state key %q is also written by action(s) %s, and depends_on orders neither before the other", clip(key), joinInts(with)),
				map[string]any{"key": key, "conflicts_with": with})
			markUnknown(&f, key, unknown)
			v.add(j, f)
		}
	}
}

// repeatedCalls reports the same tool called with the same parameters at
// least RepeatedCallThreshold times, once, at the call that reaches the
// threshold. Heuristic: legitimate polling looks the same as a loop.
func (v *verifier) repeatedCalls() {
	type group struct {
		tool    string
		indices []int
	}
	groups := map[string]*group{}
	var order []string
	var b []byte
	for i := range v.acts {
		act := &v.acts[i]
		if act.kind != abi.ActionToolCall || act.a.Tool == "" || !act.paramsOK {
			continue
		}
		tool := act.a.Tool
		if act.tool != nil {
			tool = toolID(act.tool) // a wire name and an id are the same tool
		}
		b = canonical(canonicalString(b[:0], tool), act.params)
		k := string(b)
		g := groups[k]
		if g == nil {
			g = &group{tool: tool}
			groups[k] = g
			order = append(order, k)
		}
		g.indices = append(g.indices, i)
	}
	t := v.cfg.RepeatedCallThreshold
	for _, k := range order {
		g := groups[k]
		if len(g.indices) < t {
			continue
		}
		at := g.indices[t-1]
		v.add(at, advisory(CodeRepeatedCall, abi.Heuristic,
			fmt.Sprintf("tool %q is called %d times with identical parameters (actions %s); this may be a runaway loop", clip(g.tool), len(g.indices), joinInts(g.indices)),
			map[string]any{"count": len(g.indices), "action_indices": g.indices}))
	}
}

func joinInts(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// bitset is a set of action indices; nil is the empty set. Actions without
// depends_on keep a nil set, so a plan without edges costs nothing here.
type bitset []uint64

func (s *bitset) set(i, n int) {
	if *s == nil {
		*s = make(bitset, (n+63)/64)
	}
	(*s)[i/64] |= 1 << (i % 64)
}

func (s bitset) has(i int) bool { return i/64 < len(s) && s[i/64]&(1<<(i%64)) != 0 }

func (s *bitset) or(o bitset, n int) {
	if o == nil {
		return
	}
	if *s == nil {
		*s = make(bitset, (n+63)/64)
	}
	for i := range o {
		(*s)[i] |= o[i]
	}
}
