package catalog

import (
	"cmp"
	"maps"
	"slices"
)

// IDs returns the ids of the tools the builder holds now, sorted.
func (b *Builder) IDs() []string { return slices.Sorted(maps.Keys(b.tools)) }

// Change kinds of a Diff.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeChanged = "changed"
)

// Change is one tool's difference between two snapshots.
type Change struct {
	// ID is the tool's canonical id.
	ID string `json:"id"`
	// Kind is ChangeAdded, ChangeRemoved or ChangeChanged.
	Kind string `json:"kind"`
	// Fields lists what changed, for ChangeChanged: any of name, aliases,
	// description, schema_digest, provenance, source, effect, hints,
	// policy_digest. policy_digest is listed whenever any field it covers
	// changed (see PolicyDigestOf): a session grant of the tool has then
	// drifted.
	Fields []string `json:"fields,omitempty"`
	// OldDigest and NewDigest are the schema digests before and after;
	// empty on the side where the tool is absent.
	OldDigest string `json:"old_digest,omitempty"`
	NewDigest string `json:"new_digest,omitempty"`
	// OldProvenance and NewProvenance likewise.
	OldProvenance string `json:"old_provenance,omitempty"`
	NewProvenance string `json:"new_provenance,omitempty"`
}

// Diff lists the tools that differ between snapshots a and b, sorted by id.
// The schema is compared by digest.
func Diff(a, b *Snapshot) []Change {
	old := map[string]Tool{}
	for _, t := range a.tools {
		old[t.ID] = t
	}
	out := []Change{}
	for _, t := range b.tools {
		o, ok := old[t.ID]
		delete(old, t.ID)
		if !ok {
			out = append(out, Change{ID: t.ID, Kind: ChangeAdded, NewDigest: t.SchemaDigest, NewProvenance: t.Provenance})
			continue
		}
		var fields []string
		add := func(name string, differ bool) {
			if differ {
				fields = append(fields, name)
			}
		}
		add("name", o.Name != t.Name)
		add("aliases", !slices.Equal(o.Aliases, t.Aliases))
		add("description", o.Description != t.Description)
		add("schema_digest", o.SchemaDigest != t.SchemaDigest)
		add("provenance", o.Provenance != t.Provenance)
		add("source", o.Source != t.Source)
		add("effect", o.Effect != t.Effect)
		add("hints", !equalHints(o.Hints, t.Hints))
		add("policy_digest", o.PolicyDigest != t.PolicyDigest)
		if len(fields) > 0 {
			out = append(out, Change{ID: t.ID, Kind: ChangeChanged, Fields: fields,
				OldDigest: o.SchemaDigest, NewDigest: t.SchemaDigest, OldProvenance: o.Provenance, NewProvenance: t.Provenance})
		}
	}
	for _, o := range old {
		out = append(out, Change{ID: o.ID, Kind: ChangeRemoved, OldDigest: o.SchemaDigest, OldProvenance: o.Provenance})
	}
	slices.SortFunc(out, func(x, y Change) int { return cmp.Compare(x.ID, y.ID) })
	return out
}

func equalHints(a, b *Hints) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
